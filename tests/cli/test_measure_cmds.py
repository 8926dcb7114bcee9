import csv
import io
import json

import pytest
from click.testing import CliRunner

from kprof.cli.main import cli

TINY = ["--rounds", "2", "--warmup-pairs", "0", "--observations", "2", "--evict-mib", "1", "--device", "cpu"]


@pytest.fixture
def run_in(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    return lambda args: runner.invoke(cli, args)


def test_compare_default_on_cpu_prints_table_and_writes_result(run_in, kprof_home):
    r = run_in(["compare", "--baseline", "flash", *TINY])
    assert r.exit_code == 0, r.output
    assert "speedup" in r.output
    assert "not GPU numbers" in r.output
    assert "triton-dense" in r.output
    doc = json.loads((kprof_home / "runs" / "latest.json").read_text())
    assert doc["kind"] == "compare" and doc["protocol"]["rounds"] == 2
    assert doc["methods"][1]["validation"]["passed"]


def test_compare_json_is_the_result_document(run_in, tmp_path):
    r = run_in(["compare", "--method", "math", "--baseline", "math", "--json", "--out", str(tmp_path / "x.json"),
                *TINY])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)  # progress stays on stderr: a long run says how far it got
    assert "timing 2 methods" in r.stderr and "round 1/" in r.stderr
    assert doc == json.loads((tmp_path / "x.json").read_text())
    assert doc["speedups"][0]["baseline"] == "math" and doc["speedups"][0]["candidate"] == "math#2"


@pytest.mark.slow
def test_stages_lists_each_launch_and_the_complete_operator(run_in):
    r = run_in(["stages", "--method", "triton-dense", *TINY])
    assert r.exit_code == 0, r.output
    for row in ("partial", "combine", "complete operator"):
        assert row in r.output
    assert "not additive" in r.output


def test_chain_stages_show_prefixes_and_marginal_costs_that_add_up(run_in, tmp_path):
    r = run_in(["stages", "--method", "triton-dense", "--chain", "--out", str(tmp_path / "chain.json"), *TINY])
    assert r.exit_code == 0, r.output
    assert "chain prefixes" in r.output and "marginal us" in r.output
    assert "partial .. combine" in r.output and "complete operator" not in r.output
    r = run_in(["report", "--markdown", str(tmp_path / "chain.json")])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[2] == "| row | time us | round means us | marginal us |"
    r = run_in(["report", "--json", str(tmp_path / "chain.json")])
    rows = json.loads(r.stdout)
    medians, marginals = [row["median_us"] for row in rows], [row["marginal_us"] for row in rows]
    assert abs(sum(marginals) - medians[-1]) < 0.01 and abs(marginals[0] - medians[0]) < 0.01
    pytest.importorskip("matplotlib")
    r = run_in(["report", str(tmp_path / "chain.json"), "--plot", str(tmp_path / "chain.png")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "chain.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("args, message, code", [
    (["compare", "--rounds", "0"], "--rounds must be at least 1", 2),
    (["compare", "--method", "nope"], "unknown method", 2),
    (["compare", "--graph"], "--graph times CUDA-graph replays, which need a CUDA device", 2),
])
def test_bad_protocol_input_is_one_line(run_in, args, message, code):
    r = run_in([*args, "--device", "cpu", "--observations", "1",
                "--rounds", args[2] if args[1:2] == ["--rounds"] else "1"])
    assert r.exit_code == code, r.output
    assert message in r.output
    assert "Traceback" not in r.output


@pytest.mark.slow
def test_compare_and_stages_run_santa_end_to_end(run_in, tmp_path, make_workload):
    from kprof.workloads import save

    path = tmp_path / "tiny.safetensors"
    save(make_workload(4, 2, 160, 16, seed=1, scale=2.0), path)
    santa = "santa:p=8,r=2,s=8,parents=contiguous,topk.BLOCK_T=16,attend.NUM_SPLITS=4"
    tiny = ["--workload", str(path), *TINY]
    r = run_in(["compare", "--method", santa, "--method", "triton-dense", "--baseline", "math", "--json",
                "--out", str(tmp_path / "c.json"), *tiny])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    rec = doc["methods"][1]
    assert rec["label"] == santa and rec["validation"]["passed"] and rec["details"]["k"] == 2  # K = S / (P/R) = 8 / 4
    r = run_in(["stages", "--method", santa, *tiny])
    assert r.exit_code == 0, r.output
    for stage in ("score", "topk", "merge", "attend", "reduce", "complete operator"):
        assert stage in r.output
    r = run_in(["stages", "--method", santa, "--chain", "--json", *tiny])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["kind"] == "chain"
    assert list(doc["summaries"]) == ["score", "score .. topk", "score .. merge", "score .. attend", "score .. reduce"]


@pytest.mark.slow
def test_compare_fathom_against_scan32_end_to_end(run_in, tmp_path, make_workload):
    from kprof.workloads import save

    path = tmp_path / "tiny.safetensors"
    save(make_workload(4, 2, 256, 64, seed=2, scale=2.0), path)
    r = run_in(["compare", "--method", "fathom:k=48", "--method", "sparq16:k=48", "--baseline", "scan32:k=48",
                "--workload", str(path), "--json", *TINY])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert [m["label"] for m in doc["methods"]] == ["scan32:k=48", "fathom:k=48", "sparq16:k=48"]
    assert all(m["validation"]["passed"] for m in doc["methods"])
    assert doc["methods"][0]["details"]["scan_bits_per_token"] == [136.0, 136.0]


def test_a_fault_reported_by_a_methods_runs_fails_compare_and_stages(run_in, tmp_path, monkeypatch):
    """A method whose runs report a fault after validation (Prepared.faults) gets FAULT in the
    table, the fault in the Result and exit 3: its timings are not valid measurements."""
    from kprof.methods import registry
    from kprof.methods.sdpa import MathSDPA

    class FaultyMath(MathSDPA):
        name = "faulty-math"

        def _prepare(self, workload, config):
            prepared = super()._prepare(workload, config)
            runs = [0]
            inner = prepared.run

            def run():
                runs[0] += 1
                return inner()

            prepared.run = run
            prepared.faults = lambda: [f"wait gave up in run {runs[0]}"] if runs[0] > 1 else []
            return prepared

    monkeypatch.setitem(registry.METHODS, "faulty-math", FaultyMath)
    r = run_in(["compare", "--method", "faulty-math", "--baseline", "math", "--out", str(tmp_path / "c.json"), *TINY])
    assert r.exit_code == 3, r.output
    assert "FAULT" in r.output and "wait gave up in run" in r.output
    doc = json.loads((tmp_path / "c.json").read_text())
    assert doc["methods"][0]["faults"] == [] and doc["methods"][1]["faults"][0].startswith("wait gave up in run")
    r = run_in(["report", "--csv", str(tmp_path / "c.json")])
    assert r.exit_code == 0, r.output
    assert [row["valid"] for row in csv.DictReader(io.StringIO(r.output))] == ["True", "False"]
    r = run_in(["stages", "--method", "faulty-math", *TINY])
    assert r.exit_code == 3 and "wait gave up" in r.output
    r = run_in(["compare", "--method", "math", "--baseline", "math", *TINY])
    assert r.exit_code == 0 and "FAULT" not in r.output


@pytest.mark.slow
@pytest.mark.parametrize("bad_every, fails", [(1000, False), (7, True)])
def test_bad_observations_are_dropped_and_over_one_percent_fail_after_writing(run_in, tmp_path, monkeypatch,
                                                                              bad_every, fails):
    """A timer that returns NaN for some intervals: the run is kept; above 1% of a row it fails
    with one line naming the rows, and the raw observations are on disk."""
    import numpy as np

    from kprof.measure import clocks

    real = clocks._HostRecorder.elapsed_us
    count = {"n": 0}

    def flaky(self, n):
        out = real(self, n)
        for i in range(len(out)):
            count["n"] += 1
            if count["n"] % bad_every == 0:
                out[i] = np.nan
        return out

    monkeypatch.setattr(clocks._HostRecorder, "elapsed_us", flaky)
    out = tmp_path / "r.json"
    r = run_in(["compare", "--method", "math", "--baseline", "math", "--out", str(out), "--rounds", "10",
                "--observations", "10", "--warmup-pairs", "0", "--evict-mib", "1", "--device", "cpu"])
    from kprof.results.store import load_result

    res = load_result(out)
    assert sum(s.bad_observations for s in res.summaries.values()) == count["n"] // bad_every
    assert "Traceback" not in r.output
    if fails:
        assert r.exit_code == 3 and "too many bad observations" in r.output and str(out) in r.output
        assert np.isnan(res.observations["math"]).sum() + np.isnan(res.observations["math#2"]).sum() > 0
    else:
        assert r.exit_code == 0, r.output


def test_a_too_short_run_says_there_is_no_interval(run_in):
    r = run_in(["compare", "--method", "math", "--baseline", "math", "--rounds", "1", "--observations", "1",
                "--warmup-pairs", "0", "--evict-mib", "1", "--device", "cpu"])
    assert r.exit_code == 0, r.output
    assert "too few rounds for an interval" in r.output and "rounded up from 1 to 2" in r.output


def test_a_same_copy_row_times_the_prepared_original_again(run_in, tmp_path):
    out = tmp_path / "same.json"
    r = run_in(["compare", "--method", "=math", "--baseline", "math", "--out", str(out), *TINY])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    assert [m["label"] for m in doc["methods"]] == ["math", "=math"]
    assert doc["speedups"][0]["candidate"] == "=math" and doc["protocol"]["launch_phase"] is True
    r = run_in(["compare", "--method", "=nope", "--baseline", "math", *TINY])
    assert r.exit_code != 0 and "names no earlier row" in r.output and "Traceback" not in r.output
    r = run_in(["compare", "--method", "math", "--baseline", "math", "--fixed-launch-phase", "--json", *TINY])
    assert json.loads(r.stdout)["protocol"]["launch_phase"] is False


def test_a_repeated_candidate_gets_its_a_a_speedup_against_the_first(run_in, tmp_path):
    out = tmp_path / "aa.json"
    r = run_in(["compare", "--method", "math:", "--method", "math:", "--baseline", "math", "--out", str(out), *TINY])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    pairs = [(s["candidate"], s["baseline"]) for s in doc["speedups"]]
    assert pairs == [("math:", "math"), ("math:#2", "math"), ("math:#2", "math:")]
    assert "speedup math:#2 vs math:" in r.output


def test_compare_and_workload_info_take_a_synthetic_shape(run_in, kprof_home, tmp_path):
    spec = "synthetic:hq=4,hkv=2,d=32,n=128,dtype=fp32"
    out = tmp_path / "shape.json"
    r = run_in(["compare", "--method", "triton-dense", "--baseline", "math", "--workload", spec, "--out", str(out),
                *TINY])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    assert doc["workload"]["name"] == spec and doc["workload"]["shape"]["n"] == 128
    assert all(m["validation"]["passed"] for m in doc["methods"])
    info = run_in(["workload", "info", spec, "--stats", "--json"])
    assert info.exit_code == 0 and json.loads(info.stdout)["content_hash"] == doc["workload"]["content_hash"]
    bad = run_in(["compare", "--workload", "synthetic:hq=3,hkv=2,d=32,n=128,dtype=fp32", *TINY])
    assert bad.exit_code != 0 and "not a multiple of hkv" in bad.output and "Traceback" not in bad.output
