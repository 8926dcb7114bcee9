"""NAME@REV: a method loaded from the git objects of a revision, beside today's, without touching
the checkout."""

import importlib
import multiprocessing
import subprocess
import sys
import textwrap
from concurrent.futures import ProcessPoolExecutor

import pytest
import torch

from kprof.core.target import resolve_target
from kprof.methods.base import Method
from kprof.methods.registry import capturing
from kprof.methods.revision import RevisionError, load_method_class, resolve, source_repo

ADAPTER = textwrap.dedent('''
    import torch
    from kprof.kernels.toy.scale import FACTOR
    from kprof.methods.base import Method, Prepared, Stage
    from kprof.methods.registry import register

    @register
    class Toy(Method):
        name = "toy"
        summary = "q times a factor that the kernel module holds"

        def _prepare(self, workload, config):
            out = torch.empty_like(workload.q)

            def run():
                out.copy_(workload.q * FACTOR)
                return out

            return Prepared(self.name, config, run, (Stage("main", run),), (), out)
''')


class Toy(Method):  # today's class of the method: its name is what the revision is searched for
    name = "toy"
    summary = "today's toy"

    def _prepare(self, workload, config):
        raise NotImplementedError


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def _commit(repo, files: dict, message: str) -> str:
    for rel, text in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message)
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.setenv("KPROF_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(sys, "path", list(sys.path))  # loading adds the cache folder to it
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    base = {"kernels/__init__.py": "", "kernels/toy/__init__.py": "", "kprof/methods/toy.py": ADAPTER,
            "kernels/toy/work.py": "from kprof.kernels.toy.scale import FACTOR\n\n\ndef times(x):\n"
                                   "    return x * FACTOR\n"}
    one = _commit(root, base | {"kernels/toy/scale.py": "FACTOR = 1.0\n"}, "factor 1")
    two = _commit(root, {"kernels/toy/scale.py": "FACTOR = 2.0\n"}, "factor 2")
    broken = _commit(root,
                     {"kprof/methods/toy.py": ADAPTER.replace("Method, Prepared", "Method, NoSuchThing, Prepared")},
                     "an interface this kprof does not have")
    return root, one, two, broken


def test_two_revisions_load_side_by_side_and_compute_their_own_function(repo, make_workload):
    root, one, two, _ = repo
    status = subprocess.run(["git", "-C", str(root), "status", "--porcelain"], capture_output=True, text=True).stdout
    w = make_workload(4, 2, 16, 8, seed=3)
    target = resolve_target("cpu")
    at_one = load_method_class("toy", Toy, one, capturing, root)
    at_two = load_method_class("toy", Toy, "HEAD~1", capturing, root)
    assert at_one.name == f"toy@{one[:12]}" and at_two.name == f"toy@{two[:12]}"
    assert at_one.__module__.startswith(f"kprof_at_{one[:12]}") and at_two.__module__ != at_one.__module__
    q = w.q.clone()
    out_one = at_one().prepare(w, target).run().clone()
    out_two = at_two().prepare(w, target).run().clone()
    assert torch.equal(out_one, q) and torch.equal(out_two, 2 * q)
    after = subprocess.run(["git", "-C", str(root), "status", "--porcelain"], capture_output=True, text=True).stdout
    assert after == status and (root / "kernels/toy/scale.py").read_text() == "FACTOR = 2.0\n", "checkout untouched"


def test_a_revisions_function_runs_in_a_spawned_process(repo):
    """santa builds its layout in a spawn pool: the child unpickles a function of the revision's
    package by name, so it must import that package too (it failed with ModuleNotFoundError)."""
    root, one, _, _ = repo
    at_one = load_method_class("toy", Toy, one, capturing, root)
    times = importlib.import_module(f"{at_one.__module__.split('.')[0]}.kernels.toy.work").times
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        assert pool.submit(times, 3.0).result(timeout=120) == 3.0


# Today's toy as a sparse method that declares its bytes (same class name, found in the revision).
SparseToy = type("Toy", (Toy,), {"bytes_per_call": lambda self, workload, prepared: 123})


def test_a_revision_that_declares_no_bytes_reports_none_not_the_dense_default(repo, make_workload):
    root, one, _, _ = repo
    w = make_workload(4, 2, 16, 8, seed=3)
    at_one = load_method_class("toy", SparseToy, one, capturing, root)()
    prepared = at_one.prepare(w, resolve_target("cpu"))
    assert at_one.bytes_per_call(w, prepared) is None
    dense_default = load_method_class("toy", Toy, one, capturing, root)()  # today's declares none either
    assert dense_default.bytes_per_call(w, prepared) == w.shape.kv_bytes + 2 * w.shape.hq * w.shape.d * 4


def test_one_line_errors(repo, tmp_path):
    root, one, _, broken = repo
    with pytest.raises(RevisionError, match="unknown git revision 'nope'") as e:
        resolve("nope", root)
    assert "\n" not in str(e.value)
    with pytest.raises(RevisionError, match="cannot be loaded into this kprof .*NoSuchThing") as e:
        load_method_class("toy", Toy, broken, capturing, root)
    assert "\n" not in str(e.value)
    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    with pytest.raises(RevisionError, match="not inside one"):
        source_repo(outside)


def test_method_spec_at_revision_through_the_registry(monkeypatch, tmp_path):
    from kprof.core.errors import KprofError
    from kprof.methods import get_method

    if subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True).returncode:
        pytest.skip("needs kprof's git checkout")
    monkeypatch.setenv("KPROF_HOME", str(tmp_path / "home"))
    m = get_method("triton-dense@HEAD")
    assert m.name.startswith("triton-dense@") and type(m).__module__.startswith("kprof_at_")
    assert get_method("triton-dense@HEAD").__class__ is type(m), "loaded once per commit"
    with pytest.raises(KprofError, match="names no revision"):
        get_method("triton-dense@")


def test_a_revision_that_reaches_todays_kernels_or_lacks_todays_interface_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("KPROF_HOME", str(tmp_path / "home"))
    root = tmp_path / "repo2"
    root.mkdir()
    _git(root, "init", "-q")
    leaky = ADAPTER.replace("from kprof.kernels.toy.scale import FACTOR",
                            "from kprof.kernels.toy.scale import FACTOR\nfrom kprof import kernels as today")
    sha = _commit(root, {"kernels/__init__.py": "", "kernels/toy/__init__.py": "",
                         "kernels/toy/scale.py": "FACTOR = 1.0\n", "kprof/methods/toy.py": leaky}, "leaky")
    with pytest.raises(RevisionError, match="reaches today's kernels"):
        load_method_class("toy", Toy, sha, capturing, root)
    lazy = ADAPTER.replace("class Toy(Method):", "class Toy(Method):\n    kernel_modules = ('kprof.kernels.toy.gone',)")
    sha = _commit(root, {"kprof/methods/toy.py": lazy}, "a kernel module that no longer imports")
    with pytest.raises(RevisionError, match="cannot be loaded into this kprof .*ModuleNotFoundError"):
        load_method_class("toy", Toy, sha, capturing, root)
