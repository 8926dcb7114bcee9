"""kprof report (markdown, CSV, plot) and the pytest plugin's JSON."""


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
    assert r.output.splitlines()[0].startswith("workload,tokens,kind,row,mode,median_us")
    pytest.importorskip("matplotlib")
    png = tmp_path / "p.png"
    r = CliRunner().invoke(cli, ["report", str(path), "--plot", str(png)])
    assert r.exit_code == 0, r.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
