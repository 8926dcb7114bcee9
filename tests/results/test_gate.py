"""The gate: verdict rules, a candidate against a history, the exit-code table, the history
folder, and the same-run gate against a git revision."""

import copy
import json
import math
import shutil
import subprocess

import numpy as np
import pytest
from click.testing import CliRunner

from kprof.cli.main import cli
from kprof.measure.design import BalancedDesign
from kprof.measure.harness import Measurement
from kprof.measure.stats import Interval
from kprof.results.gate import history_gate, prediction_ratio, verdict
from kprof.results.store import load_result, save_result
from kprof.results.summarise import pair_speedup, summarise_row


def synthetic(real, base_us=50.0, cand_us=40.0, noise=0.005, seed=0, rounds=20, obs=50):
    """A copy of a real Result with simulated observations in the design's round orders."""
    res = copy.deepcopy(real)
    rng = np.random.default_rng(seed)
    design = BalancedDesign.williams(2)
    orders = design.orders(rounds)
    o = np.stack([us * np.exp(noise * rng.standard_normal((rounds, obs))) for us in (base_us, cand_us)])
    m = Measurement(["math", "math#2"], o, orders, design.cycle)
    res.observations = m.rows()
    res.protocol = {**res.protocol, "rounds": rounds, "observations": obs}
    res.summaries = {k: summarise_row(v) for k, v in res.observations.items()}
    res.speedups = [pair_speedup(m, 0, 1, 0.95)]
    return res


def _iv(est, low, high):
    return Interval(est, low, high)


def test_verdict_rules():
    assert verdict(_iv(1.06, 1.04, 1.08), 0.03) == "SLOWER"
    assert verdict(_iv(1.02, 1.01, 1.03), 0.03) == "SAME", "a real change inside the threshold"
    assert verdict(_iv(1.025, 1.005, 1.045), 0.03) == "UNCERTAIN", "significant, maybe within the threshold"
    assert verdict(_iv(1.04, 0.99, 1.09), 0.03) == "UNCERTAIN"
    assert verdict(_iv(0.94, 0.92, 0.96), 0.03) == "FASTER"
    assert verdict(Interval(1.5, None, None), 0.03) == "UNCERTAIN", "no interval: never a verdict"


def test_prediction_interval_uses_the_history_spread_and_t_quantiles():
    hist = np.log([1.0, 1.004, 0.996])
    iv, mde = prediction_ratio(hist, np.zeros(3), math.log(1.0), 0.0)
    s = np.std(hist, ddof=1) * math.sqrt(1 + 1 / 3)
    assert iv.high == pytest.approx(math.exp(4.302653 * s), rel=1e-5)
    assert 0.05 < mde < 0.08  # at the spread's 80% upper bound: 2.12 s for 3 runs
    one, _ = prediction_ratio(hist[:1], np.array([0.001]), 0.0, 0.001)  # no spread known: within-run errors only
    assert one.high == pytest.approx(math.exp(1.959964 * math.sqrt(2) * 0.001), rel=1e-5)


def test_history_gate_verdicts(real_result):
    history = [synthetic(real_result, seed=s) for s in (1, 2, 3)]
    same = history_gate(history, synthetic(real_result, seed=4))
    assert same.verdict == "SAME" and not same.warnings
    assert [r.method for r in same.rows] == ["math#2"]
    slower = history_gate(history, synthetic(real_result, cand_us=44.0, seed=5))
    assert slower.verdict == "SLOWER" and slower.rows[0].ratio.estimate == pytest.approx(1.1, rel=0.01)
    machine = history_gate(history, synthetic(real_result, base_us=55.0, cand_us=44.0, seed=6))
    assert machine.verdict == "SAME", "a machine that runs everything 10% slower is not a regression"
    assert history_gate(history, synthetic(real_result, cand_us=36.0, seed=7)).verdict == "FASTER"
    latency = history_gate(history, synthetic(real_result, base_us=55.0, cand_us=44.0, seed=6), metric="latency")
    assert latency.verdict == "SLOWER" and any("absolute" in w for w in latency.warnings)
    few = history_gate(history[:2], synthetic(real_result, seed=4))
    assert any("fewer than 3" in w for w in few.warnings)


def test_a_run_without_an_interval_is_uncertain_not_exact(real_result):
    """A candidate of too few rounds has no interval; taken as exact, a 10% change looked certain."""
    history = [synthetic(real_result, seed=s) for s in (1, 2, 3)]
    short = synthetic(real_result, cand_us=44.0, seed=5, rounds=4)
    assert not short.speedups[0].interval.has_interval
    report = history_gate(history, short)
    assert report.verdict == "UNCERTAIN" and report.rows[0].ratio.estimate == pytest.approx(1.1, rel=0.02)
    assert "no within-run interval in the candidate" in report.rows[0].ratio.note
    one = history_gate(history[:1], synthetic(real_result, cand_us=44.0, seed=5))
    assert one.verdict == "SLOWER" and "run-to-run spread is unknown" in one.method
    assert "run-to-run spread is unknown" in one.rows[0].ratio.method
    assert history_gate(history[:1], short).verdict == "UNCERTAIN"
    assert history_gate(history[:2], short).verdict == "UNCERTAIN"


def test_history_gate_incomparable_runs_and_methods(real_result):
    history = [synthetic(real_result, seed=s) for s in (1, 2, 3)]
    other = synthetic(real_result, seed=9)
    other.environment = {**other.environment, "gpu": {"name": "NVIDIA H100"}, "execution": "gpu"}
    report = history_gate(history, other, names=["a.json", "b.json", "c.json"])
    assert report.verdict == "INCOMPARABLE" and report.reasons[0].startswith("a.json: device differs")
    other.workload = {**other.workload, "content_hash": "f" * 64}  # two reasons a file: one line each file
    report = history_gate(history, other, names=["a.json", "b.json", "c.json"])
    assert [r.split(":")[0] for r in report.reasons] == ["a.json", "b.json", "c.json"]
    assert all("device differs" in r and "; workload differs" in r for r in report.reasons)
    other = synthetic(real_result, seed=9)
    other.workload = {**other.workload, "content_hash": "f" * 64}
    assert "workload differs" in history_gate(history, other).reasons[0]
    extra = synthetic(real_result, seed=9)
    extra.speedups.append(copy.deepcopy(extra.speedups[0]))
    extra.speedups[-1].candidate = "new-method"
    report = history_gate(history, extra)
    assert report.verdict == "INCOMPARABLE" and not report.reasons
    row = next(r for r in report.rows if r.method == "new-method")
    assert row.verdict == "INCOMPARABLE" and "no estimate in history run 1" in row.note
    broken = synthetic(real_result, cand_us=30.0, seed=10)  # fast, but wrong
    broken.methods[1].validation.passed = False
    report = history_gate(history, broken)
    assert report.verdict == "INCOMPARABLE" and "candidate: math#2 failed validation" in report.reasons


def test_a_changed_launch_config_is_compared_and_named(real_result):
    history = [synthetic(real_result, seed=s) for s in (1, 2, 3)]
    for h in history:
        h.methods[1].config = {"partial": {"BLOCK_N": 64}}
    slow = synthetic(real_result, cand_us=44.0, seed=5)
    slow.methods[1].config = {"partial": {"BLOCK_N": 16}}
    report = history_gate(history, slow)
    assert report.verdict == "SLOWER" and report.rows[0].note == "launch config: partial.BLOCK_N 64->16"


@pytest.fixture
def history_dir(real_result, tmp_path):
    folder = tmp_path / "baselines" / "setup"
    for s in (1, 2, 3):
        save_result(synthetic(real_result, seed=s), folder / f"run{s}.json")
    return folder


def _gate(*args):
    return CliRunner().invoke(cli, ["gate", *map(str, args)])


def test_exit_code_table(real_result, history_dir, tmp_path):
    same = save_result(synthetic(real_result, seed=4), tmp_path / "same.json")
    slow = save_result(synthetic(real_result, cand_us=44.0, seed=5), tmp_path / "slow.json")
    noisy = save_result(synthetic(real_result, cand_us=41.2, noise=0.6, seed=6), tmp_path / "n.json")
    other = synthetic(real_result, seed=9)
    other.workload = {**other.workload, "content_hash": "f" * 64}
    other = save_result(other, tmp_path / "other.json")
    md = tmp_path / "summary.md"
    r = _gate("--baseline", history_dir, "--candidate", same, "--summary-md", md)
    assert r.exit_code == 0, r.output
    assert "kprof gate: **SAME**" in md.read_text()
    assert _gate("--baseline", history_dir, "--candidate", slow, "--summary-md", md).exit_code == 1
    text = md.read_text()  # appended, as to $GITHUB_STEP_SUMMARY: the first verdict is kept
    assert text.index("**SAME**") < text.index("**SLOWER**")
    assert _gate("--baseline", history_dir, "--candidate", noisy).exit_code == 3
    assert _gate("--baseline", history_dir, "--candidate", noisy, "--uncertain", "pass").exit_code == 0
    assert _gate("--baseline", history_dir, "--candidate", other).exit_code == 4
    assert _gate("--baseline", history_dir).exit_code == 2, "no candidate: usage"
    for bad in ("x", "-5%", "nan", "60%", "0"):
        r = _gate("--baseline", history_dir, "--candidate", same, "--max-regression", bad)
        assert r.exit_code == 2, (bad, r.output)
    missing = _gate("--baseline", tmp_path / "nope", "--candidate", same)
    assert missing.exit_code == 5 and "does not exist" in missing.output
    garbage = tmp_path / "garbage.json"
    garbage.write_text("not json")
    r = _gate("--baseline", history_dir, "--candidate", garbage)
    assert r.exit_code == 5 and "not a kprof result" in r.output and "Traceback" not in r.output


def test_update_baseline_adds_to_the_history_and_refuses_incomparable(real_result, history_dir, tmp_path):
    same = save_result(synthetic(real_result, seed=4), tmp_path / "same.json")
    r = _gate("--baseline", history_dir, "--candidate", same, "--update-baseline")
    assert r.exit_code == 0, r.output
    names = sorted(p.name for p in history_dir.iterdir())
    assert names == ["run1.json", "run1.obs.npz", "run2.json", "run2.obs.npz", "run3.json", "run3.obs.npz",
                     "same.json", "same.obs.npz"]
    added = load_result(history_dir / "same.json")
    assert np.array_equal(added.observations["math"], load_result(same).observations["math"])
    other = synthetic(real_result, seed=9)
    other.environment = {**other.environment, "execution": "gpu"}
    other = save_result(other, tmp_path / "other.json")
    before = {p.name: p.read_bytes() for p in history_dir.iterdir()}
    r = _gate("--baseline", history_dir, "--candidate", other, "--update-baseline")
    assert r.exit_code == 4 and "not added" in r.output
    assert {p.name: p.read_bytes() for p in history_dir.iterdir()} == before
    assert _gate("--baseline", history_dir / "run1.json", "--candidate", same, "--update-baseline").exit_code == 2


def test_gate_against_a_revision_runs_one_paired_comparison(make_workload, tmp_path, monkeypatch):
    if shutil.which("git") is None or subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True).returncode:
        pytest.skip("needs kprof's git checkout")
    monkeypatch.setenv("KPROF_HOME", str(tmp_path / "home"))
    from kprof.workloads import save

    path = tmp_path / "tiny.safetensors"
    save(make_workload(4, 2, 64, 16, seed=1), path)
    out = tmp_path / "against.json"
    r = CliRunner().invoke(cli, ["gate", "--against", "HEAD", "--method", "triton-dense", "--workload", str(path),
                                 "--device", "cpu", "--rounds", "10", "--observations", "2", "--warmup-pairs", "0",
                                 "--max-regression", "40%", "--out", str(out), "--json"])
    assert r.exit_code in (0, 3), r.output
    report = json.loads(r.output[r.output.index("{"):])
    assert report["method"] == "same-run paired interval" and report["rows"][0]["method"] == "triton-dense"
    res = load_result(out)
    assert [m.label for m in res.methods] == ["triton-dense@HEAD", "triton-dense"]
    assert res.methods[0].validation.passed and res.speedups[0].baseline == "triton-dense@HEAD"
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert res.methods[0].revision == head and res.methods[1].revision is None
    assert res.design["orders"][:2] == [["triton-dense@HEAD", "triton-dense"], ["triton-dense", "triton-dense@HEAD"]]


def test_a_history_starts_empty_and_takes_only_same_runs_unless_forced(real_result, tmp_path):
    first = save_result(synthetic(real_result, seed=1), tmp_path / "first.json")
    folder = tmp_path / "new-history"
    r = _gate("--baseline", folder, "--candidate", first, "--update-baseline")
    assert r.exit_code == 0 and "started the history" in r.output and (folder / "first.json").exists()
    for s in (2, 3):
        assert _gate("--baseline", folder, "--candidate", save_result(synthetic(real_result, seed=s),
                                                                      tmp_path / f"r{s}.json"),
                     "--update-baseline").exit_code == 0
    slow = save_result(synthetic(real_result, cand_us=44.0, seed=5), tmp_path / "slow.json")
    r = _gate("--baseline", folder, "--candidate", slow, "--update-baseline")
    assert r.exit_code == 1 and "not added" in r.output and not (folder / "slow.json").exists()
    r = _gate("--baseline", folder, "--candidate", slow, "--update-baseline", "--force")
    assert r.exit_code == 1 and (folder / "slow.json").exists()
    r = _gate("--baseline", folder, "--candidate", slow, "--update-baseline", "--force")  # a CI job run again
    text = " ".join(r.output.split())
    assert r.exit_code == 1 and "SLOWER" in text and "already holds this run" in text, text
    assert "left out of the history it is judged against" in text and len(list(folder.glob("*.json"))) == 4


def test_an_unexpected_failure_is_exit_5_never_1(real_result, history_dir, tmp_path, monkeypatch):
    import kprof.commands.gate
    import kprof.results.gate

    def boom(*a, **k):
        raise ModuleNotFoundError("No module named 'something_removed'")

    monkeypatch.setattr(kprof.commands.gate, "history_gate", boom)
    same = save_result(synthetic(real_result, seed=4), tmp_path / "same.json")
    r = _gate("--baseline", history_dir, "--candidate", same)
    assert r.exit_code == 5 and "ModuleNotFoundError" in r.output and "Traceback" not in r.output
    assert kprof.results.gate.EXIT["SLOWER"] == 1
    r = _gate("--against", "HEAD", "--rounds", "0")
    assert r.exit_code == 2 and "--rounds must be at least 1" in r.output


def test_history_gate_eviction_mode_matters_and_older_results_took_the_default(real_result):
    history = [synthetic(real_result, seed=s) for s in (1, 2, 3)]
    for h in history:
        h.protocol.pop("eviction", None)  # Results written before the key existed
    same = synthetic(real_result, seed=9)
    same.protocol = {**same.protocol, "eviction": "read-write"}
    assert history_gate(history, same).verdict != "INCOMPARABLE"
    clean = synthetic(real_result, seed=9)
    clean.protocol = {**clean.protocol, "eviction": "read"}
    report = history_gate(history, clean)
    assert report.verdict == "INCOMPARABLE"
    assert "protocol eviction differs (read-write vs read)" in report.reasons[0]
