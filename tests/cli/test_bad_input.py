"""Every bad input a user was seen to give, in one matrix: each gets its exit code and one line
that names the problem and the fix, never a traceback, and leaves the files that were there
before untouched."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest
import torch
from click.testing import CliRunner

from kprof.cli.main import cli

FIXTURES = Path(__file__).parents[1] / "fixtures"
TINY = ["--rounds", "2", "--observations", "1", "--warmup-pairs", "0", "--evict-mib", "1", "--device", "cpu"]
RESULT = FIXTURES / "results" / "h200-result-v1.json"
USERPKG = str(FIXTURES / "userpkg")
NCU_CSV = FIXTURES / "ncu" / "h200_sdpa_flash_raw_base_units.csv"


@dataclass
class Case:
    args: list[str]
    exit: int
    message: str  # a regular expression the output must match
    setup: Callable[[Path], None] = lambda d: None
    lines: int = 2  # at most this many non-empty lines of output
    also: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # {home} is the test's KPROF_HOME
    before_loading: bool = True  # answered before any workload was loaded


def _workload(d: Path, poison: bool = False) -> None:
    from kprof.workloads import save
    from tests.conftest import random_workload

    w = random_workload(4, 2, 64, 16, seed=3)
    if poison:
        w.k[0, 5, 3] = float("nan")
    save(w, d / "w.safetensors")  # a valid file and hash, NaN and all


def _result(d: Path, edit: Callable[[dict], object]) -> None:
    doc = json.loads(RESULT.read_text())
    shutil.copy(RESULT.with_suffix(".obs.npz"), d / RESULT.with_suffix(".obs.npz").name)
    (d / "r.json").write_text(json.dumps(edit(doc)))


def _string_number(doc: dict) -> dict:
    doc["summaries"]["flash"]["median_us"]["estimate"] = "46.1"
    return doc


def _truncated_ncu(d: Path) -> None:
    text = (FIXTURES / "ncu" / "h200_sdpa_flash_raw_base_units.csv").read_text().rstrip("\n")
    (d / "ncu.csv").write_text(text[: text.rindex(",")] + "\n")


def _header_cut_ncu(d: Path) -> None:
    text = (FIXTURES / "ncu" / "h200_sdpa_flash_raw_base_units.csv").read_text()
    (d / "ncu.csv").write_text(text[: text.index('"ID"') + 900])


def _latest_in_home(d: Path) -> None:
    runs = _home(d) / "runs"
    runs.mkdir(parents=True)
    shutil.copy(RESULT, runs / "latest.json")


def _metadata_list(d: Path) -> None:
    from safetensors.torch import save_file

    from tests.conftest import random_workload

    w = random_workload(4, 2, 64, 16, seed=3)
    meta = {"kprof.format": "kprof-workload/1", "kprof.query_position": "16", "kprof.content_hash": "x",
            "kprof.metadata": "[1, 2]"}
    save_file({n: getattr(w, n).contiguous() for n in ("q", "k", "v", "positions")}, str(d / "w.safetensors"),
              metadata=meta)


def _home(d: Path) -> Path:
    return d / "home"


def _tune_cache_list(d: Path) -> None:
    from kprof.methods import get_method
    from kprof.tuning.cache import tune_key
    from kprof.workloads import resolve_shape

    key = tune_key("triton-dense", "partial", resolve_shape("cpu-smoke"))
    folder = _home(d) / "profiles" / "tuned"
    folder.mkdir(parents=True)
    (folder / key.filename).write_text("[]")
    assert get_method("triton-dense")


CASES = {
    "unknown method": Case(["check", "--method", "nope"], 2, r"unknown method 'nope'"),
    "bad method option": Case(["check", "--method", "santa:q=1"], 2, r"unknown santa option 'q'"),
    "unknown config key": Case(["check", "--method", "triton-dense", "--set", "partial.NOPE=1"], 2, r"NOPE"),
    "missing workload file": Case(["workload", "info", "missing.safetensors"], 2, r"does not exist"),
    "GPU-only method on the CPU": Case(["check", "--method", "flash", "--device", "cpu"], 1, r"needs a CUDA GPU"),
    "--out under a file": Case(["compare", "--method", "math", "--baseline", "math", "--out", "afile/r.json", *TINY],
                               2, r"afile is a file", setup=lambda d: (d / "afile").write_text("x")),
    "--out an existing file": Case(["compare", "--method", "math", "--baseline", "math", "--out", "old.json", *TINY],
                                   2, r"old.json exists: choose another name, or pass --force",
                                   setup=lambda d: (d / "old.json").write_text("{}")),
    "workload with NaN in k": Case(["compare", "--method", "math", "--baseline", "math", "--workload",
                                    "w.safetensors", *TINY], 1, r"non-finite values \(1 in k\)",
                                   setup=lambda d: _workload(d, poison=True), before_loading=False),
    "tuning cache holding []": Case(["tune", "--method", "triton-dense", "--launch", "partial", "--device", "cpu",
                                     "--max-configs", "1"], 1, r"is corrupt \(a JSON list", setup=_tune_cache_list,
                                    lines=3, before_loading=False),
    "tune --timeout-s 0": Case(["tune", "--method", "triton-dense", "--timeout-s", "0"], 2, r"--timeout-s"),
    "gate --max-regression -5%": Case(["gate", "--against", "HEAD", "--max-regression", "-5%"], 2,
                                      r"above 0 and below 50%"),
    "gate --max-regression nan": Case(["gate", "--against", "HEAD", "--max-regression", "nan"], 2,
                                      r"'nan' is not a percentage"),
    "gate without a candidate": Case(["gate", "--baseline", "h"], 2, r"--candidate"),
    "Result that is []": Case(["report", "r.json"], 1, r"not a kprof result \(a JSON list",
                              setup=lambda d: _result(d, lambda doc: [])),
    "Result without summaries": Case(["report", "r.json"], 1, r"no summaries",
                                     setup=lambda d: _result(d, lambda doc: doc | {"summaries": {}})),
    "Result with string numbers": Case(["report", "r.json"], 1, r"estimate is '46.1', not a number",
                                       setup=lambda d: _result(d, _string_number)),
    "gate on a Result that is []": Case(["gate", "--baseline", "r.json", "--candidate", "r.json"], 5,
                                        r"not a kprof result", setup=lambda d: _result(d, lambda doc: [])),
    "ncu CSV truncated mid-row": Case(["ncu", "import", "ncu.csv"], 1, r"table row \d+: \d+ fields where the header "
                                      r"has \d+; the file is truncated", setup=_truncated_ncu),
    "another tool's CSV with an ID column": Case(
        ["ncu", "import", "other.csv"], 1, r"no 'Kernel Name': it is not Nsight Compute CSV",
        setup=lambda d: (d / "other.csv").write_text('"ID","Name"\n"1","x"\n')),
    "suite file that is not TOML": Case(["suite", "bad.toml", "--out", "o"], 2, r"not valid TOML",
                                        setup=lambda d: (d / "bad.toml").write_text("[[step")),
    # issue 38: numbers that made a tune loop forever or a validation run silently once, and a
    # capture that replaced an existing workload without a word
    "tune with negative finalists": Case(["tune", "--method", "triton-dense", "--finalists", "-1"], 2,
                                         r"--finalists.*-1 is not in the range x>=0"),
    "tune with a negative budget": Case(["tune", "--method", "triton-dense", "--budget-s", "-1"], 2,
                                        r"--budget-s.*-1.0 is not in the range x>0"),
    "validate with no realisations": Case(["validate", "--method", "santa", "--realisations", "0"], 2,
                                          r"--realisations.*0 is not in the range x>=1"),
    "capture over an existing workload": Case(["capture", "--synthetic", "cpu-smoke", "--out", "w.safetensors"], 2,
                                              r"--out w.safetensors exists: choose another name, or pass --force",
                                              setup=lambda d: (d / "w.safetensors").write_bytes(b"mine")),
    # issue 38, round two: every spec, number and path checked before anything loads (exit 2)
    "method typo": Case(["compare", "--method", "trtion-dense", *TINY], 2, r"unknown method 'trtion-dense'"),
    "--rounds 0": Case(["compare", "--rounds", "0", "--device", "cpu"], 2, r"--rounds must be at least 1, got 0"),
    "rounds that would not fit in memory": Case(
        ["compare", "--rounds", "100000000", "--observations", "1000000", "--device", "cpu"], 2,
        r"would keep .* of observations, more than half of the memory available now"),
    "--devices with one workload": Case(["compare", "--devices", "all", *TINY], 2,
                                        r"--devices all: it spreads several --workload runs"),
    "a folder as --workload": Case(["compare", "--workload", "wdir", *TINY], 2, r"--workload wdir is a folder",
                                   setup=lambda d: (d / "wdir").mkdir()),
    "a file as capture --model": Case(["capture", "--model", "mfile", "--out", "w.safetensors"], 2,
                                      r"--model mfile is a file: pass the checkpoint folder",
                                      setup=lambda d: (d / "mfile").write_text("x")),
    "$KPROF_HOME is a file": Case(["env", "--no-ncu"], 2, r"\$KPROF_HOME=.*hostname is a file: point it at a folder",
                                  setup=lambda d: (d / "hostname").write_text("x"), env={"KPROF_HOME": "hostname"}),
    "--plot under a file": Case(["report", "r.json", "--plot", "afile/p.png"], 2,
                                r"--plot afile/p.png: .*afile is a file", setup=lambda d: (
                                    _result(d, lambda doc: doc), (d / "afile").write_text("x"))),
    "gate --summary-md under a file": Case(
        ["gate", "--baseline", "r.json", "--candidate", "r.json", "--summary-md", "afile/g.md"], 2,
        r"--summary-md afile/g.md: .*afile is a file",
        setup=lambda d: (_result(d, lambda doc: doc), (d / "afile").write_text("x"))),
    "gate --against with an existing --out": Case(["gate", "--against", "HEAD", "--out", "old.json", *TINY], 2,
                                                  r"--out old.json exists", setup=lambda d: (d / "old.json")
                                                  .write_text("{}")),
    "gate on a stages Result": Case(["gate", "--baseline", "r.json", "--candidate", "r.json"], 5,
                                    r"is a stages Result .*: the gate judges paired runs",
                                    setup=lambda d: _result(d, lambda doc: doc | {"kind": "stages"})),
    "gate on a partial Result": Case(["gate", "--baseline", "r.json", "--candidate", "r.json"], 5,
                                     r"is a partial Result \(stopped by Ctrl-C after 3 round\(s\)\): .*to the end",
                                     setup=lambda d: _result(d, lambda doc: doc | {
                                         "partial": "stopped by Ctrl-C after 3 round(s)"})),
    "a Result from a newer kprof": Case(["report", "r.json"], 1, r"written by a newer kprof .*upgrade kprof",
                                        setup=lambda d: _result(d, lambda doc: doc | {"schema": "kprof-result/99"})),
    "a santa budget below 1": Case(["compare", "--method", "santa:s=-5"], 2,
                                   r"santa option s=-5 must be positive: s=int \(124\): the budget S"),
    "a Result file that does not exist": Case(["report", "nothere.json"], 2, r"result file nothere.json does not "
                                              r"exist: run `kprof compare` first"),
    "compare --graph on the CPU": Case(["compare", "--method", "santa", "--graph"], 2,
                                       r"--graph times CUDA-graph replays, which need a CUDA device"),
    "compare =LABEL naming no row": Case(["compare", "--method", "=nothing"], 2, r"--method =nothing names no "
                                         r"earlier row"),
    "--host-bound with an eviction": Case(["compare", "--host-bound", "--eviction", "read"], 2,
                                          r"--host-bound times calls back to back with no eviction"),
    "report in two formats": Case(["report", "r.json", "--json", "--csv"], 2, r"--csv and --json each choose",
                                  setup=lambda d: _result(d, lambda doc: doc)),
    "runs/latest.json where no run wrote": Case(["report", "runs/latest.json"], 2,
                                                r"does not exist; runs are kept in .*home/runs .*: pass .*latest.json",
                                                setup=lambda d: _latest_in_home(d)),
    "ncu --captures 0": Case(["ncu", "--method", "math", "--captures", "0"], 2, r"--captures.*0 is not in the range"),
    "$KPROF_NCU that does not exist": Case(["ncu", "--method", "math", "--workload", "cpu-smoke"], 2,
                                           r"KPROF_NCU=/nonexistent/ncu does not exist: point it at the ncu binary",
                                           env={"KPROF_NCU": "/nonexistent/ncu"}),
    "ncu CSV cut inside its header": Case(["ncu", "import", "ncu.csv"], 1, r"header line is cut off .* truncated",
                                          setup=_header_cut_ncu),
    "tune --out-dir under a file": Case(["tune", "--method", "triton-dense", "--out-dir", "afile/t"], 2,
                                        r"--out-dir afile/t: .*afile is a file",
                                        setup=lambda d: (d / "afile").write_text("x")),
    "tune --out-dir read-only": Case(["tune", "--method", "triton-dense", "--out-dir", "/proc/kprof-ro"], 2,
                                     r"--out-dir /proc/kprof-ro: cannot write in /proc"),
    "tune of a launch the method lacks": Case(["tune", "--method", "triton-dense", "--launch", "nope"], 2,
                                              r"triton-dense has no launch 'nope': choose from partial, combine"),
    "validate that fails": Case(["check", "--method", "userpkg.attn:wrong", "--device", "cpu"], 3,
                                r"FAIL", lines=12, env={"PYTHONPATH": USERPKG},
                                before_loading=False),
    # found by a QA pass in session 33
    "--out a device with --force": Case(["compare", "--out", "/dev/null", "--force", *TINY], 2,
                                        r"--out /dev/null is not a regular file \(a device, pipe or socket\)"),
    "--out whose sidecar another Result owns": Case(
        ["compare", "--method", "math", "--baseline", "math", "--out", "run.json", *TINY], 2,
        r"--out run.json: its observations sidecar run.obs.npz exists \(perhaps another Result's\): .*--force",
        setup=lambda d: (d / "run.obs.npz").write_bytes(b"monday's observations")),
    "an empty --workload": Case(["compare", "--workload", "", *TINY], 2, r"--workload is empty: name a spec"),
    "workload metadata that is a JSON list": Case(["workload", "info", "w.safetensors"], 1,
                                                  r"malformed kprof metadata \(kprof.metadata is a JSON list",
                                                  setup=_metadata_list),
    "a user's function that raises": Case(
        ["compare", "--method", "userpkg.broken:raises", *TINY], 1,
        r"userpkg.broken:raises raised RuntimeError: boom from the user's kernel \(.*broken.py:7 in raises\)",
        env={"PYTHONPATH": USERPKG}, lines=4, before_loading=False),
    "a user's function that calls sys.exit": Case(
        ["compare", "--method", "userpkg.broken:exits", *TINY], 1,
        r"userpkg.broken:exits called sys.exit\(0\) \(.*broken.py:15 in exits\)",
        env={"PYTHONPATH": USERPKG}, lines=4, before_loading=False),
    "a user's function of two arguments": Case(
        ["compare", "--method", "userpkg.broken:two_args", *TINY], 2,
        r"kprof calls it as f\(q, k, v\), but its signature is two_args\(q, k\)", env={"PYTHONPATH": USERPKG}),
    "a synthetic workload larger than memory": Case(
        ["compare", "--workload", "synthetic:hq=8,hkv=2,d=64,n=99999999999999,dtype=fp16", *TINY], 2,
        r"its K and V alone take 45.5 PiB, more than the memory available now .*: choose a smaller n"),
    "capture of a synthetic workload larger than memory": Case(
        ["capture", "--synthetic", "synthetic:hq=8,hkv=2,d=64,n=99999999999999,dtype=fp16", "--out", "w.safetensors"],
        2, r"--synthetic synthetic:.*: its K and V alone take 45.5 PiB"),
    "a negative RoPE base": Case(["compare", "--workload", "synthetic:hq=8,hkv=2,d=64,n=256,dtype=fp32,rope_theta=-1",
                                  *TINY], 2, r"rope_theta=-1 must be a finite number above 1"),
    "a suite timeout that is not a number": Case(
        ["suite", "s.toml", "--out", "o"], 2, r"s.toml, \[suite\]: timeout_s = 'soon': write a positive number",
        setup=lambda d: (d / "s.toml").write_text('[suite]\ntimeout_s = "soon"\n[[step]]\nname = "a"\n'
                                                  'run = ["true"]\n')),
    "a negative step timeout": Case(
        ["suite", "s.toml", "--out", "o"], 2, r"step 1 \(a\): timeout_s = -1: write a positive number",
        setup=lambda d: (d / "s.toml").write_text('[[step]]\nname = "a"\nrun = ["true"]\ntimeout_s = -1\n')),
    "a suite whose step is a number": Case(["suite", "s.toml", "--out", "o"], 2,
                                           r"step = 5 is not a list of tables: write each step as \[\[step\]\]",
                                           setup=lambda d: (d / "s.toml").write_text("step = 5\n")),
    "a suite step naming no kprof command": Case(
        ["suite", "s.toml", "--out", "o"], 2, r"step 1 \(a\): kprof has no command 'nosuchcmd': start with one of",
        setup=lambda d: (d / "s.toml").write_text('[[step]]\nname = "a"\nkprof = ["nosuchcmd"]\n')),
    "a Result whose workload is a string": Case(["report", "r.json"], 1,
                                                r"r.json is a malformed kprof result \(result.workload is a str, not "
                                                r"an object\)", setup=lambda d: _result(d, lambda doc: doc | {
                                                    "workload": "qwen"})),
    "a Result of an unknown kind": Case(["report", "r.json"], 1, r"its kind is 'sweeps', not one of compare",
                                        setup=lambda d: _result(d, lambda doc: doc | {"kind": "sweeps"})),
    "a Result without a schema": Case(["report", "r.json"], 1, r"^error: r.json: unsupported result schema None",
                                      setup=lambda d: _result(d, lambda doc: {k: v for k, v in doc.items()
                                                                              if k != "schema"})),
    "--config naming a launch no method has": Case(
        ["compare", "--config", "cfg.json", *TINY], 2, r"--config cfg.json sets launch\(es\) partail, which no method "
        r"of this run has \(theirs: combine, partial\)",
        setup=lambda d: (d / "cfg.json").write_text('{"partail": {"BLOCK_N": 16}}')),
    "a method at a revision git does not know": Case(["compare", "--method", "triton-dense@nosuchrev", *TINY], 2,
                                                     r"unknown git revision 'nosuchrev'"),
    "gate against a revision git does not know": Case(["gate", "--against", "nosuchrev", *TINY], 2,
                                                      r"unknown git revision 'nosuchrev'"),
    "capture from a model folder that is not there": Case(
        ["capture", "--model", "/nonexistent", "--layer", "0", "--context", "8", "--random-tokens", "--out",
         "w.safetensors"], 2, r"^error: --model /nonexistent does not exist: pass a local checkpoint folder", lines=1),
    "env --measure-peak with $KPROF_HOME a file": Case(
        ["env", "--measure-peak"], 2, r"^error: \$KPROF_HOME=.*is a file", lines=1,
        setup=lambda d: (d / "hostname").write_text("x"), env={"KPROF_HOME": "hostname"}),
    "ncu import of a file that is not there": Case(["ncu", "import", "nothere.csv"], 2,
                                                   r"nothere.csv does not exist: pass the CSV"),
    "ncu import in two formats": Case(["ncu", "import", str(NCU_CSV), "--json", "--csv"], 2,
                                      r"--csv and --json each choose the output format: pass one"),
    "ncu import of a metric the file lacks": Case(["ncu", "import", str(NCU_CSV), "--json", "--metric", "dram__x.sum"],
                                                  0, r"has no metric dram__x.sum: not shown", lines=200),
    "an option without its value": Case(["compare", "--rounds"], 2,
                                        r"'--rounds' requires an argument. \(\S+ compare --help lists the options\)"),
    "--config naming a folder": Case(["compare", "--config", "cfgdir", *TINY], 2, r"--config cfgdir: is a folder",
                                     setup=lambda d: (d / "cfgdir").mkdir()),
}


def _snapshot(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in d.rglob("*") if p.is_file()}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input(name, tmp_path, monkeypatch):
    case = CASES[name]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KPROF_HOME", str(_home(tmp_path)))
    for key, value in case.env.items():
        monkeypatch.setenv(key, str(tmp_path / value) if key == "KPROF_HOME" else value)
        if key == "PYTHONPATH":
            monkeypatch.syspath_prepend(value)
    case.setup(tmp_path)
    before = _snapshot(tmp_path)
    r = CliRunner().invoke(cli, case.args)
    assert r.exit_code == case.exit, (name, r.exit_code, r.output)
    assert re.search(case.message, " ".join(r.output.split())), (name, r.output)
    assert "Traceback" not in r.output and not isinstance(r.exception, (AttributeError, KeyError, TypeError))
    shown = [line for line in r.output.splitlines() if line.strip()]
    assert len(shown) <= case.lines, (name, r.output)
    after = _snapshot(tmp_path)
    assert {k: v for k, v in after.items() if k in before} == before, f"{name}: a file that was there changed"
    if case.before_loading:
        assert "loading workload" not in r.output and "preparing" not in r.output, (name, r.output)


def test_a_too_short_run_reports_no_interval_and_succeeds(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["compare", "--method", "math", "--baseline", "math", "--rounds", "1",
                                 "--observations", "1", "--warmup-pairs", "0", "--evict-mib", "1", "--device", "cpu"])
    assert r.exit_code == 0 and "too few rounds for an interval" in r.output


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CPU machine's Ctrl-C path")
def test_ctrl_c_exits_130_with_one_line(monkeypatch):
    import kprof.commands.session

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(kprof.commands.session.MeasurementSession, "open", interrupted)
    r = CliRunner().invoke(cli, ["compare", "--method", "math", "--baseline", "math", "--device", "cpu"])
    assert r.exit_code == 130 and "interrupted" in r.output and "Traceback" not in r.output


def test_install_hints_keep_their_brackets(monkeypatch, capsys):
    from kprof.core.errors import KprofError

    @cli.command("raise-hint", hidden=True)
    def raise_hint():
        raise KprofError("plots need matplotlib: pip install 'kprof[plot]'")

    try:
        r = CliRunner().invoke(cli, ["raise-hint"])
    finally:
        cli.commands.pop("raise-hint")
    assert r.exit_code == 1 and "pip install 'kprof[plot]'" in r.output


def test_ctrl_c_during_compare_keeps_the_finished_rounds_as_a_partial_result(tmp_path, monkeypatch):
    """Ctrl-C in round 3: the two finished rounds are written, marked partial; report reads the
    file, gate refuses it, and the exit code is 130."""
    import kprof.measure.harness as harness

    monkeypatch.chdir(tmp_path)
    rounds_started = []
    real = harness.TelemetrySampler.begin_round

    def begin_round(self, r):
        rounds_started.append(r)
        if r == 2:
            raise KeyboardInterrupt
        return real(self, r)

    monkeypatch.setattr(harness.TelemetrySampler, "begin_round", begin_round)
    r = CliRunner().invoke(cli, ["compare", "--method", "math", "--baseline", "math", "--out", "c.json", "--rounds",
                                 "8", "--observations", "1", "--warmup-pairs", "0", "--evict-mib", "1", "--device",
                                 "cpu"])
    assert r.exit_code == 130, r.output
    assert "stopped by Ctrl-C after 2 round(s)" in " ".join(r.output.split()) and "Traceback" not in r.output
    from kprof.results.store import load_result

    res = load_result(tmp_path / "c.json")
    assert res.partial == "stopped by Ctrl-C after 2 round(s)"
    assert all(o.shape[0] == 2 for o in res.observations.values())
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    assert CliRunner().invoke(cli, ["report", "c.json"]).exit_code == 0
    g = CliRunner().invoke(cli, ["gate", "--baseline", "c.json", "--candidate", "c.json"])
    assert g.exit_code == 5 and "is a partial Result" in " ".join(g.output.split())


def test_ctrl_c_before_any_round_finished_writes_nothing(tmp_path, monkeypatch):
    import kprof.measure.harness as harness

    monkeypatch.chdir(tmp_path)

    def begin_round(self, r):
        raise KeyboardInterrupt

    monkeypatch.setattr(harness.TelemetrySampler, "begin_round", begin_round)
    r = CliRunner().invoke(cli, ["compare", "--method", "math", "--baseline", "math", "--out", "c.json", *TINY])
    assert r.exit_code == 130 and not (tmp_path / "c.json").exists()


def test_gate_table_names_the_units_of_then_and_now(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _result(tmp_path, lambda doc: doc)
    for metric, unit, cell in (("latency", "then us", "46.3"), ("speedup", "then speedup", "x")):
        r = CliRunner().invoke(cli, ["gate", "--baseline", "r.json", "--candidate", "r.json", "--metric", metric])
        assert unit in r.output and cell in r.output, r.output
