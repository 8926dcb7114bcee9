"""kprof suite: steps run in order as fresh processes, each logged; failures, hangs and missing
GPUs are recorded and the suite goes on; --resume skips what passed; bad files are one line."""

import json
import textwrap

import pytest
from click.testing import CliRunner

from kprof.cli.main import cli
from kprof.commands.suite import load_suite
from kprof.core.errors import KprofError

SUITE = textwrap.dedent('''
    [suite]
    description = "a CPU suite for the test"
    timeout_s = 60

    [[step]]
    name = "hello"
    run = ["{python}", "-c", "print('hello from ' + '{out}')"]

    [[step]]
    name = "methods"
    kprof = ["methods", "--json"]

    [[step]]
    name = "fails"
    run = ["{python}", "-c", "import sys; sys.exit(3)"]

    [[step]]
    name = "expected-exit"
    run = ["{python}", "-c", "import sys; sys.exit(1)"]
    ok_exit = [0, 1]

    [[step]]
    name = "hangs"
    run = ["{python}", "-c", "import time; time.sleep(30)"]
    timeout_s = 1

    [[step]]
    name = "gpu-only"
    kprof = ["compare", "--baseline", "flash"]
    requires = "gpu"
''')


@pytest.fixture
def suite_file(tmp_path):
    path = tmp_path / "suite.toml"
    path.write_text(SUITE)
    return path


def test_a_suite_runs_every_step_and_records_each(suite_file, tmp_path, monkeypatch):
    monkeypatch.setattr("kprof.core.target.cuda_available", lambda: False)
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["suite", str(suite_file), "--out", str(out)])
    assert r.exit_code == 1, r.output  # one failed and one hung step
    doc = json.loads((out / "suite.json").read_text())
    status = {s["name"]: (s["status"], s["exit_code"]) for s in doc["steps"]}
    assert status == {"hello": ("passed", 0), "methods": ("passed", 0), "fails": ("failed", 3),
                      "expected-exit": ("passed", 1), "hangs": ("timeout", None), "gpu-only": ("skipped", None)}
    assert (out / "hello.log").read_text().strip() == f"hello from {out}"
    assert any(m["name"] == "santa" for m in json.loads((out / "methods.log").read_text()))
    assert "[5/6] hangs: timeout" in r.output and "needs a GPU" in r.output


def test_resume_skips_passed_steps_and_only_selects(suite_file, tmp_path, monkeypatch):
    monkeypatch.setattr("kprof.core.target.cuda_available", lambda: False)
    out = tmp_path / "out"
    assert CliRunner().invoke(cli, ["suite", str(suite_file), "--out", str(out), "--only", "hello"]).exit_code == 0
    (out / "hello.log").write_text("kept")
    r = CliRunner().invoke(cli, ["suite", str(suite_file), "--out", str(out), "--only", "hello", "--only", "fails",
                                 "--resume"])
    assert r.exit_code == 1 and "passed before, skipped (--resume)" in r.output
    assert (out / "hello.log").read_text() == "kept"
    r = CliRunner().invoke(cli, ["suite", str(suite_file), "--out", str(out), "--only", "nope"])
    assert r.exit_code == 2 and "names steps the suite does not have: nope" in r.output
    r = CliRunner().invoke(cli, ["suite", str(suite_file.parent / "missing.toml"), "--out", str(out)])
    assert r.exit_code == 2 and "does not exist: pass a TOML suite file" in r.output


@pytest.mark.parametrize("text, message", [
    ("[[step]]\nname = 'a'\n", "exactly one of kprof"),
    ("[[step]]\nname = 'a b'\nrun = ['x']\n", "needs a name"),
    ("[[step]]\nname = 'a'\nrun = ['x']\n[[step]]\nname = 'a'\nrun = ['y']\n", "used twice"),
    ("[[step]]\nname = 'a'\nrun = ['x']\nwhen = 1\n", "unknown keys when"),
    ("[[step]]\nname = 'a'\nrun = ['x']\nrequires = 'tpu'\n", "the only requirement"),
    ("[suite]\n", r"has no \[\[step\]\]"),
    ("not toml [", "not valid TOML"),
])
def test_bad_suite_files_are_one_line_errors(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(KprofError, match=message) as e:
        load_suite(path)
    assert "\n" not in str(e.value)


def test_the_shipped_suites_load():
    from pathlib import Path

    for path in (Path(__file__).parents[2] / "profiles" / "suites").glob("*.toml"):
        assert load_suite(path).steps, path
