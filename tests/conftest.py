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


def pytest_collection_modifyitems(config, items):
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
