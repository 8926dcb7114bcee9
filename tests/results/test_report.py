"""kprof report (markdown, CSV, plot) and the pytest plugin's JSON."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kprof.cli.main import cli
from kprof.results.result import save_result
from tests.results.test_gate import synthetic


def test_report_markdown_csv_and_plot(real_result, tmp_path):
    path = save_result(synthetic(real_result, seed=1), tmp_path / "r.json")
    r = CliRunner().invoke(cli, ["report", "--markdown", str(path)])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[2] == ("| row | median_us | round_min_us | round_max_us | speedup | speedup_low | speedup_high "
                        "| launches | valid |")
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
    bench = Path(__file__).parents[1] / "tools" / "test_bench_methods.py"
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(bench), "-k", "tiny",
                           f"--benchmark-json={out}"], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).parents[1])
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    doc = json.loads(out.read_text())
    names = [b["name"] for b in doc["benchmarks"]]
    assert len(names) == 2 and all("tiny" in n for n in names)
    assert all(b["stats"]["rounds"] == 6 and b["extra_info"]["kprof_clock"] == "host-clock" for b in doc["benchmarks"])

