"""kprof report (markdown, CSV, plot) and the pytest plugin's JSON."""


import pytest
from click.testing import CliRunner

from kprof.cli.main import cli
from kprof.results.store import save_result
from tests.results.test_gate import synthetic


def test_report_markdown_csv_and_plot(real_result, tmp_path):
    res = synthetic(real_result, seed=1)
    path = save_result(res, tmp_path / "r.json")
    r = CliRunner().invoke(cli, ["report", "--markdown", str(path)])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[2] == "| row | valid | time us | speedup [95% CI] | round means us | launches | noise |"
    math, math2 = lines[4].split(" | "), lines[5].split(" | ")
    assert math[:2] == ["| math", "ok"] and float(math[2]) == pytest.approx(50, rel=0.01) and math[3] == "baseline"
    assert math2[:2] == ["| math#2", "ok"] and float(math2[2]) == pytest.approx(40, rel=0.01)
    # rounded as the terminal table shows it: 2 decimals of a microsecond, 3 of a speedup
    assert len(math2[2].split(".")[1]) == 2
    iv = res.speedups[0].interval  # the estimate rounded once, as the terminal does (not 4 places, then 3)
    assert math2[3] == f"{iv.estimate:.3f}x [{iv.low:.3f}, {iv.high:.3f}]" and math2[3].startswith("1.2")
    r = CliRunner().invoke(cli, ["report", "--csv", str(path)])
    assert r.output.splitlines()[0].startswith("workload,tokens,kind,row,mode,device,valid,median_us")
    pytest.importorskip("matplotlib")
    png = tmp_path / "p.png"
    r = CliRunner().invoke(cli, ["report", str(path), "--plot", str(png)])
    assert r.exit_code == 0, r.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_partial_result_says_so_in_every_format(real_result, tmp_path):
    res = synthetic(real_result, seed=1)
    res.partial = "stopped by Ctrl-C after 2 round(s)"
    path = save_result(res, tmp_path / "r.json")
    runner = CliRunner()
    table = runner.invoke(cli, ["report", str(path)], env={"COLUMNS": "100"})
    assert table.exit_code == 0 and "partial result: stopped by Ctrl-C after 2 round(s)" in table.output
    assert "**partial result**: stopped by Ctrl-C" in runner.invoke(cli, ["report", "--markdown", str(path)]).output
    csv = runner.invoke(cli, ["report", "--csv", str(path)]).output.splitlines()
    assert csv[0].endswith(",partial") and all(line.endswith(",stopped by Ctrl-C after 2 round(s)") for line in csv[1:])
    import json

    rows = json.loads(runner.invoke(cli, ["report", "--json", str(path)]).output)
    assert {r["partial"] for r in rows} == {"stopped by Ctrl-C after 2 round(s)"}
    complete = save_result(synthetic(real_result, seed=1), tmp_path / "c.json")
    assert "partial" not in runner.invoke(cli, ["report", str(complete)]).output
    assert {r["partial"] for r in json.loads(runner.invoke(cli, ["report", "--json", str(complete)]).output)} == {None}


@pytest.mark.parametrize("flags", [["--markdown", "--csv"], ["--json", "--csv"], ["--markdown", "--json"]])
def test_two_output_formats_are_refused(real_result, tmp_path, flags):
    path = save_result(synthetic(real_result, seed=1), tmp_path / "r.json")
    r = CliRunner().invoke(cli, ["report", *flags, str(path)])
    assert r.exit_code == 2 and "each choose the output format: pass one" in r.output
