"""Shared fixtures. Kernels run through the Triton interpreter when there is no GPU."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# `python -m pytest` from the checkout puts the checkout first on sys.path, where its kernels/
# folder (installed as kprof.kernels) shadows the PyPI package `kernels` that transformers >= 5.25
# imports when it is installed. The checkout goes last: the tests package stays importable.
_ROOT = Path(__file__).resolve().parents[1]
_here = [p for p in sys.path if Path(p or ".").resolve() == _ROOT]
sys.path[:] = [p for p in sys.path if p not in _here] + [str(_ROOT)]

# Tables render at the width kprof gives output that is not a terminal (160 columns), whatever
# COLUMNS the shell or a test runner's worker exports: assertions on table text see every column.
os.environ.pop("COLUMNS", None)

try:
    import torch
except ModuleNotFoundError:  # a bare interpreter: say how to get the test environment, in one line
    pytest.exit("kprof's tests need torch and the dev extra: run the README's test command "
                "(pip install \"torch==2.13.0\" && pip install -e '.[dev]' && python -m pytest -q)", returncode=4)

import kprof.kernels  # noqa: F401, E402  (decides TRITON_INTERPRET before any kernel is compiled)
from kprof.core.target import resolve_target  # noqa: E402  (after the sys.path order above)

SLOW_SHARES = 8  # a run takes one share of the slow tests; KPROF_SLOW=all takes them all


def pytest_xdist_auto_num_workers(config):
    """``-n auto`` (pyproject's addopts): two workers on a CPU machine (CI has two cores), none
    where CUDA is: GPU timing tests must have the device to themselves."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return int(os.environ["PYTEST_XDIST_AUTO_NUM_WORKERS"])
    return 0 if torch.cuda.is_available() else min(2, os.cpu_count() or 1)


def pytest_configure(config):
    if os.environ.get("PYTEST_XDIST_WORKER"):  # one thread per worker: host-clock tests see no oversubscription
        torch.set_num_threads(1)


def _slow_share() -> tuple[int | None, str]:
    """Which share of the slow tests this run takes (None: all, -1: none) and why: ``KPROF_SLOW``
    (all, none or a share number), else the checkout's commit, so that successive commits take
    every share in turn."""
    choice = os.environ.get("KPROF_SLOW", "").strip().lower()
    if choice == "all":
        return None, "KPROF_SLOW=all"
    if choice == "none":
        return -1, "KPROF_SLOW=none"
    if choice.isdigit():
        return int(choice) % SLOW_SHARES, f"KPROF_SLOW={choice}"
    import subprocess

    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=_ROOT, capture_output=True, text=True,
                             timeout=10).stdout.strip()
        return int(rev[:8], 16) % SLOW_SHARES, f"commit {rev[:8]}"
    except (OSError, ValueError, subprocess.SubprocessError):
        import datetime

        return datetime.date.today().toordinal() % SLOW_SHARES, "today's date"


def pytest_report_header(config):
    share, why = _slow_share()
    which = "all" if share is None else "none" if share < 0 else f"share {share} of {SLOW_SHARES}"
    return f"kprof slow tests: {which} ({why}); KPROF_SLOW=all runs every one"


def pytest_collection_modifyitems(config, items):
    share, why = _slow_share()
    slow = sorted((item for item in items if "slow" in item.keywords), key=lambda item: item.nodeid)
    for i, item in enumerate(slow):
        if share is not None and i % SLOW_SHARES != share:
            item.add_marker(pytest.mark.skip(reason=f"slow, share {i % SLOW_SHARES} of {SLOW_SHARES}: this run takes "
                                                    f"share {share} ({why}); KPROF_SLOW=all runs it"))
    # the slow tests that run go first, so that parallel workers do not wait on one at the end
    first = {id(item) for i, item in enumerate(slow) if share is None or i % SLOW_SHARES == share}
    items.sort(key=lambda item: id(item) not in first)
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device (kprof suite profiles/suites/h200.toml runs these on a GPU)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def target():
    """The execution target tests run on: the GPU when present, else the CPU interpreter."""
    return resolve_target("auto")


@pytest.fixture
def cpu_target():
    return resolve_target("cpu")


@pytest.fixture
def rng():
    """A fresh, seeded generator per test: random inputs, never zeros, reproducible failures."""
    g = torch.Generator()
    g.manual_seed(torch.initial_seed() % (2**31))
    return g


def random_workload(hq: int, hkv: int, n: int, d: int, dtype=torch.float32, seed: int = 0, scale: float = 1.0):
    """Gaussian q/k/v (never zeros); ``scale`` sharpens attention so softmax is not near-uniform."""
    from kprof.workloads import Workload

    g = torch.Generator().manual_seed(seed)
    q = (scale * torch.randn(hq, d, generator=g)).to(dtype)
    k = torch.randn(hkv, n, d, generator=g).to(dtype)
    v = torch.randn(hkv, n, d, generator=g).to(dtype)
    return Workload(q=q, k=k, v=v, positions=torch.arange(n), query_position=n - 1, metadata={"name": f"random-{seed}"})


@pytest.fixture
def make_workload():
    """Factory for random workloads of any shape: ``make_workload(hq, hkv, n, d, dtype, seed)``."""
    return random_workload


@pytest.fixture(scope="session")
def real_result():
    """A real CPU Result (math against itself on cpu-smoke), the template of synthetic ones."""
    from kprof.commands.compare import run_compare
    from kprof.commands.session import MeasurementSession

    session = MeasurementSession.open("cpu", "cpu-smoke", {"rounds": 2, "warmup_pairs": 0, "observations": 1,
                                                             "evict_mib": 1})
    return run_compare(session, "math", ["math"])


@pytest.fixture(autouse=True)
def kprof_home(tmp_path_factory, monkeypatch):
    """Runs and tuned profiles of a test go to a folder of its own, never into the checkout."""
    home = tmp_path_factory.mktemp("kprof-home")
    monkeypatch.setenv("KPROF_HOME", str(home))
    return home


USERPKG = Path(__file__).parent / "fixtures" / "userpkg"


@pytest.fixture
def userpkg(monkeypatch):
    """``userpkg``, a user's package outside kprof (tests/fixtures/userpkg), importable for one test."""
    monkeypatch.syspath_prepend(str(USERPKG))
    monkeypatch.setenv("PYTHONPATH", str(USERPKG))
    yield
    for name in [m for m in sys.modules if m == "userpkg" or m.startswith("userpkg.")]:
        sys.modules.pop(name)
