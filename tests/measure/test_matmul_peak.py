"""The matmul peak: measured per dtype by kprof env --measure-peak, cached beside the copy peak,
and the compute roof that work rates (flops=) report against."""

import json

import torch
from click.testing import CliRunner

import kprof
from kprof.cli.main import cli
from kprof.measure.matmul_peak import load_matmul_peaks
from kprof.results.rows import compute_rate


def test_measure_peak_caches_a_matmul_roof_and_work_rates_report_against_it(tmp_path):
    assert json.loads(CliRunner().invoke(cli, ["env", "--no-ncu", "--json"]).output)["matmul_peak_tflops"] == {}
    r = CliRunner().invoke(cli, ["env", "--no-ncu", "--measure-peak", "--json"])
    assert r.exit_code == 0, r.output
    env = json.loads(r.output)
    peak = env["matmul_peak_tflops"]["fp32"]
    assert peak > 0 and load_matmul_peaks(env) == {"fp32": peak}
    assert load_matmul_peaks(env | {"torch": "0.0.0"}) == {}
    a, b = torch.randn(128, 128), torch.randn(128, 128)
    n = 2 * 128**3
    res = kprof.compare({"mm": torch.mm}, baseline=lambda input, mat2: input @ mat2, inputs={"input": a, "mat2": b},
                        reference=torch.mm, device="cpu", rounds=4, flops=lambda input, mat2: n,
                        bytes=3 * 128 * 128 * 4)
    us = res.summaries["mm"].median_us.estimate
    assert compute_rate(res, "mm") == (n / us / 1e6, n / us / 1e6 / peak)
    assert res.frame().set_index("row").loc["mm", "tflops"] == float(f"{n / us / 1e6:.4g}")
    assert res.environment["matmul_peak_tflops"]["fp32"] == peak and res.workload["dtype"] == "fp32"
    path = res.save(tmp_path / "gemm.json")
    out = CliRunner().invoke(cli, ["report", str(path), "--plot", str(tmp_path / "roof.png")])
    assert out.exit_code == 0 and (tmp_path / "roof.png").stat().st_size > 10_000, out.output
    assert "TFLOP/s" in CliRunner().invoke(cli, ["report", str(path)]).output


def test_time_gives_work_rates_and_refuses_nonsense():
    a = torch.randn(64, 64)
    s = kprof.time(lambda: a @ a, device="cpu", rounds=2, flops=2 * 64**3, bytes=3 * 64 * 64 * 4)
    assert s.tflops == 2 * 64**3 / s.median_us.estimate / 1e6 and s.gb_per_s > 0
    for bad in (-1, "many", True):
        try:
            kprof.time(lambda: a @ a, device="cpu", rounds=2, flops=bad)
        except kprof.KprofError as exc:
            assert "positive number" in str(exc)
        else:
            raise AssertionError(f"flops={bad!r} was accepted")
