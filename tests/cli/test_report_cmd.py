"""kprof report (markdown, CSV, plot) and the pytest plugin's JSON."""


import pytest
from click.testing import CliRunner

from kprof.cli.main import cli
from kprof.results.store import save_result
from tests.results.test_gate import synthetic


def test_report_markdown_csv_and_plot(real_result, tmp_path):
    path = save_result(synthetic(real_result, seed=1), tmp_path / "r.json")
    r = CliRunner().invoke(cli, ["report", "--markdown", str(path)])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[2] == "| row | valid | time us | speedup [95% CI] | round means us | launches | noise |"
    math, math2 = lines[4].split(" | "), lines[5].split(" | ")
    assert math[:2] == ["| math", "ok"] and float(math[2]) == pytest.approx(50, rel=0.01) and math[3] == "baseline"
    assert math2[:2] == ["| math#2", "ok"] and float(math2[2]) == pytest.approx(40, rel=0.01)
    # rounded as the terminal table shows it: 2 decimals of a microsecond, 3 of a speedup
    assert len(math2[2].split(".")[1]) == 2
    assert math2[3].startswith("1.25") and math2[3].endswith("]") and len(math2[3].split("x")[0]) == 5
    r = CliRunner().invoke(cli, ["report", "--csv", str(path)])
    assert r.output.splitlines()[0].startswith("workload,tokens,kind,row,mode,device,valid,median_us")
    pytest.importorskip("matplotlib")
    png = tmp_path / "p.png"
    r = CliRunner().invoke(cli, ["report", str(path), "--plot", str(png)])
    assert r.exit_code == 0, r.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
