"""Gate verdicts and exit codes, atomic baseline update, report rendering, the pytest plugin's JSON."""

import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from kprof.cli.main import cli
from kprof.gate import gate
from kprof.protocol import TimingProtocol
from kprof.results import load_result, save_result
from kprof.stats import paired_bootstrap
from kprof.summarize import summarize


@pytest.fixture(scope="module")
def real_result():
    from kprof.compare import run_compare
    from kprof.session import MeasurementSession

    session = MeasurementSession.open("cpu", "cpu-smoke", {"rounds": 2, "warmup_pairs": 0, "observations": 2,
                                                             "evict_mib": 1})
    return run_compare(session, "math", ["math"])


def _synthetic(real, scale_b=1.0, scale_c=1.0, noise=0.01, seed=0, rounds=20, obs=200):
    """A copy of a real Result with synthetic observations: baseline 50 us, candidate 40 us, times scales."""
    res = copy.deepcopy(real)
    rng = np.random.default_rng(seed)
    res.protocol = {**res.protocol, "rounds": rounds, "observations": obs}
    means = {"math": 50.0 * scale_b, "math#2": 40.0 * scale_c}
    res.observations = {k: m * (1 + noise * rng.standard_normal((rounds, obs))) for k, m in means.items()}
    proto = TimingProtocol(rounds=rounds, observations=obs, bootstrap_resamples=1000)
    res.summaries = {k: summarize(v, proto) for k, v in res.observations.items()}
    res.speedups[0].interval = paired_bootstrap(res.observations["math"], res.observations["math#2"], 1000)
    return res


def test_verdicts(real_result):
    base = _synthetic(real_result, seed=1)
    assert gate(base, _synthetic(real_result, seed=2), 0.03)[0] == "SAME"
    slower = gate(base, _synthetic(real_result, scale_b=1.10, scale_c=1.10, seed=3), 0.03)
    assert slower[0] == "SLOWER" and all(r.verdict == "SLOWER" for r in slower[1])
    assert gate(base, _synthetic(real_result, scale_b=0.85, scale_c=0.85, seed=4), 0.03)[0] == "FASTER"
    for seed in range(4):  # few, very noisy rounds: the interval is wider than the threshold band
        noisy = gate(_synthetic(real_result, noise=0.5, seed=50 + seed, rounds=6, obs=5),
                     _synthetic(real_result, scale_b=1.03, scale_c=1.03, noise=0.5, seed=60 + seed, rounds=6, obs=5), 0.03)
        assert noisy[0] == "UNCERTAIN"
        assert all(r.ratio.high - r.ratio.low > 0.06 for r in noisy[1])
    # speedup metric: the candidate method keeps its 10% slowdown while the baseline does not move
    sp = gate(base, _synthetic(real_result, scale_c=1.10, seed=7), 0.03, metric="speedup")
    assert sp[0] == "SLOWER" and [r.method for r in sp[1]] == ["math#2"]


def test_incomparable_runs_say_why(real_result):
    base = _synthetic(real_result)
    other = _synthetic(real_result, seed=9)
    other.environment = {**other.environment, "gpu": {"name": "NVIDIA H100"}, "execution": "gpu"}
    verdict, _, reasons = gate(base, other)
    assert verdict == "INCOMPARABLE" and "device differs" in reasons[0]
    other = _synthetic(real_result, seed=9)
    other.workload = {**other.workload, "content_hash": "f" * 64}
    assert "workload differs" in gate(base, other)[2][0]
    other = _synthetic(real_result, seed=9)
    other.protocol = {**other.protocol, "evict_mib": 64}
    assert "protocol evict_mib differs" in gate(base, other)[2][0]


def test_a_changed_launch_config_is_compared_and_named(real_result):
    """A slower tuned profile is a regression to catch, not an incomparable run."""
    base = _synthetic(real_result, seed=1)
    slow = _synthetic(real_result, scale_b=1.10, scale_c=1.10, seed=3)
    label = slow.methods[0].label
    base.methods[0].config = {"partial": {"BLOCK_N": 64, "num_warps": 4}}
    slow.methods[0].config = {"partial": {"BLOCK_N": 16, "num_warps": 4}}
    verdict, rows, reasons = gate(base, slow, 0.03)
    assert verdict == "SLOWER" and not reasons
    row = next(r for r in rows if r.method == label)
    assert row.note == "launch config: partial.BLOCK_N 64->16"
    assert next(r for r in rows if r.method != label).note == ""
    # speedup metric: a changed reference (the denominator) is named on every candidate row
    sp = gate(base, slow, 0.03, metric="speedup")[1]
    assert sp and all("reference" in r.note and "partial.BLOCK_N 64->16" in r.note for r in sp)


def test_cli_exit_codes_summary_and_atomic_baseline_update(real_result, tmp_path):
    base_p = save_result(_synthetic(real_result, seed=1), tmp_path / "baselines" / "b.json")
    same_p = save_result(_synthetic(real_result, seed=2), tmp_path / "same.json")
    slow_p = save_result(_synthetic(real_result, scale_b=1.1, scale_c=1.1, seed=3), tmp_path / "slow.json")
    md = tmp_path / "summary.md"
    r = CliRunner().invoke(cli, ["gate", "--baseline", str(base_p), "--candidate", str(same_p), "--summary-md", str(md)])
    assert r.exit_code == 0, r.output
    assert "kprof gate: **SAME**" in md.read_text()
    r = CliRunner().invoke(cli, ["gate", "--baseline", str(base_p), "--candidate", str(slow_p), "--max-regression", "3%"])
    assert r.exit_code == 1 and "SLOWER" in r.output
    r = CliRunner().invoke(cli, ["gate", "--baseline", str(base_p), "--candidate", str(slow_p), "--update-baseline"])
    assert r.exit_code == 1
    updated = load_result(base_p)
    assert np.array_equal(updated.observations["math"], load_result(slow_p).observations["math"])
    assert sorted(p.name for p in (tmp_path / "baselines").iterdir()) == ["b.json", "b.obs.npz"]
    r = CliRunner().invoke(cli, ["gate", "--baseline", str(base_p), "--candidate", str(slow_p), "--max-regression", "x"])
    assert r.exit_code == 1 and "not a number" in r.output


def test_report_markdown_csv_and_plot(real_result, tmp_path):
    path = save_result(_synthetic(real_result, seed=1), tmp_path / "r.json")
    r = CliRunner().invoke(cli, ["report", "--markdown", str(path)])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[2] == "| row | median_us | round_min_us | round_max_us | speedup | speedup_low | speedup_high | launches | valid |"
    assert lines[4].startswith("| math | 49.9") or lines[4].startswith("| math | 50.0")
    assert lines[5].startswith("| math#2 | 39.9") or lines[5].startswith("| math#2 | 40.0")
    assert "| 1.25" in lines[5]
    r = CliRunner().invoke(cli, ["report", "--csv", str(path)])
    assert r.output.splitlines()[0].startswith("workload,kind,row,mode,median_us")
    pytest.importorskip("matplotlib")
    png = tmp_path / "p.png"
    r = CliRunner().invoke(cli, ["report", str(path), "--plot", str(png)])
    assert r.exit_code == 0, r.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_pytest_fixture_writes_pytest_benchmark_json(tmp_path):
    bench = Path(__file__).parent / "bench" / "test_bench_methods.py"
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(bench), "-k", "tiny",
                           f"--benchmark-json={out}"], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).parents[1])
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    doc = json.loads(out.read_text())
    names = [b["name"] for b in doc["benchmarks"]]
    assert len(names) == 2 and all("tiny" in n for n in names)
    assert all(b["stats"]["rounds"] == 6 and b["extra_info"]["kprof_clock"] == "host-clock" for b in doc["benchmarks"])

