"""MODULE:NAME@REV and gate --against for a user's own code: the module's package as it was at a
revision of the git repository that holds it, siblings included."""

import json
import multiprocessing
import os
import subprocess
import sys
import textwrap
from concurrent.futures import ProcessPoolExecutor

import pytest
import torch
from click.testing import CliRunner

from kprof.cli.main import cli
from kprof.core.errors import KprofError
from kprof.methods import get_method

ATTN = textwrap.dedent('''
    import torch
    from mypkg.scale import FACTOR


    def attend(q, k, v):
        hkv = k.shape[0]
        qg = q.view(hkv, q.shape[0] // hkv, 1, q.shape[-1])
        out = torch.nn.functional.scaled_dot_product_attention(qg, k[:, None], v[:, None]).reshape(q.shape)
        return out * FACTOR
''')
TINY = ["--rounds", "2", "--observations", "1", "--warmup-pairs", "0", "--evict-mib", "1", "--device", "cpu",
        "--workload", "synthetic:hq=4,hkv=2,d=32,n=64,dtype=fp32"]


def _commit(repo, files, message):
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True, capture_output=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m",
                    message], check=True, capture_output=True)


@pytest.fixture
def user_repo(tmp_path, monkeypatch, kprof_home):
    """A user's repository: mypkg (attn.py importing its sibling scale.py) in two commits; the
    second makes the sibling's FACTOR 2, a wrong answer the first commit did not give."""
    repo = tmp_path / "userrepo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    _commit(repo, {"mypkg/__init__.py": "", "mypkg/attn.py": ATTN, "mypkg/scale.py": "FACTOR = 1.0\n"}, "first")
    _commit(repo, {"mypkg/scale.py": "FACTOR = 2.0\n", "mypkg/new.py": "X = 1\n"}, "second")
    monkeypatch.setattr(sys, "path", list(sys.path))  # loading adds the cache folder to it
    monkeypatch.syspath_prepend(str(repo))
    monkeypatch.setenv("PYTHONPATH", str(repo))
    yield repo
    for name in [m for m in sys.modules if m.split(".")[0].startswith("mypkg")]:
        sys.modules.pop(name)


def test_a_user_function_at_a_revision_reads_its_siblings_from_that_revision(user_repo):
    then = get_method("mypkg.attn:attend@HEAD~1")
    now = get_method("mypkg.attn:attend")
    assert then.name.startswith("mypkg.attn:attend@") and then.revision and now.name == "mypkg.attn:attend"
    assert sys.modules[type(then).fn.__module__].FACTOR == 1.0 and sys.modules["mypkg.scale"].FACTOR == 2.0


def test_a_users_function_at_a_revision_runs_in_a_spawned_process(user_repo):
    """A spawned worker unpickles the function by its isolated package's name and imports it."""
    fn = type(get_method("mypkg.attn:attend@HEAD~1")).fn
    q, kv = torch.ones(4, 8), torch.ones(2, 3, 8)
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        assert torch.allclose(pool.submit(fn, q, kv, kv).result(timeout=120), q)


def test_two_processes_share_one_copy_of_a_users_revision(user_repo, kprof_home):
    """The copy's folder is named by a stable hash of the repository, not Python's per-process one."""
    load = "from kprof.methods import get_method; get_method('mypkg.attn:attend@HEAD~1')"
    for seed in ("1", "2"):
        subprocess.run([sys.executable, "-c", load], check=True, capture_output=True,
                       env={**os.environ, "PYTHONHASHSEED": seed})
    copies = [p for p in (kprof_home / "revisions" / "user").rglob(".complete")]
    assert len(copies) == 1, copies


def test_compare_and_gate_against_a_revision_take_a_users_function(user_repo, tmp_path):
    out = tmp_path / "r.json"
    r = CliRunner().invoke(cli, ["compare", "--method", "mypkg.attn:attend@HEAD~1", "--baseline", "math",
                                 "--out", str(out), *TINY])
    assert r.exit_code == 0, r.output  # the first commit's function is right
    assert json.loads(out.read_text())["methods"][1]["revision"]
    g = CliRunner().invoke(cli, ["gate", "--against", "HEAD~1", "--method", "mypkg.attn:attend",
                                 "--out", str(tmp_path / "g.json"), *TINY])
    assert g.exit_code == 4 and "mypkg.attn:attend failed validation" in " ".join(g.output.split()), g.output


@pytest.mark.parametrize("spec,match", [
    ("mypkg.attn:attend@nope", "unknown git revision 'nope'"),
    ("mypkg.new:X@HEAD~1", "did not exist at"),
    ("mypkg.attn:attend@", "names no revision"),
])
def test_a_bad_revision_is_one_line(user_repo, spec, match):
    with pytest.raises(KprofError, match=match):
        get_method(spec)


def test_a_module_outside_git_is_one_line(tmp_path, monkeypatch, kprof_home):
    (tmp_path / "loose").mkdir()
    (tmp_path / "loose" / "solo.py").write_text("def attend(q, k, v):\n    return q\n")
    monkeypatch.syspath_prepend(str(tmp_path / "loose"))
    with pytest.raises(KprofError, match="not inside a git repository"):
        get_method("solo:attend@HEAD")
    sys.modules.pop("solo", None)


@pytest.mark.slow
def test_gate_against_a_revision_finds_a_users_slower_commit(user_repo, tmp_path):
    _commit(user_repo, {"mypkg/scale.py": "FACTOR = 1.0\n"}, "right again")
    slow = ATTN.replace("    return out * FACTOR", "    for _ in range(40):\n        out = out + 0 * q.sum()\n"
                        "    return out * FACTOR")
    _commit(user_repo, {"mypkg/attn.py": slow}, "slower")
    g = CliRunner().invoke(cli, ["gate", "--against", "HEAD~1", "--method", "mypkg.attn:attend", "--json",
                                 "--max-regression", "20%", "--out", str(tmp_path / "g.json"),
                                 *TINY, "--rounds", "24", "--observations", "5"])  # later values win
    assert g.exit_code == 1, g.output
    report = json.loads(g.output[g.output.index("{"):])
    assert report["verdict"] == "SLOWER" and report["rows"][0]["ratio"]["estimate"] > 1.2
