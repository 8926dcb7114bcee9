"""kprof workload info: a spec from its declaration, a file or --stats with attention statistics."""

import json

from kprof.cli.main import cli
from kprof.workloads import save


def test_workload_info_json_reports_peakedness(runner):
    r = runner.invoke(cli, ["workload", "info", "cpu-smoke", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["shape"]["hq"] == 14 and doc["spec"]["model"] == "synthetic" and "attention" not in doc
    r = runner.invoke(cli, ["workload", "info", "cpu-smoke", "--stats", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert 0.4 < doc["attention"]["top1pct_mass"]["mean"] < 0.9
    assert len(doc["heads"]) == 14


def test_workload_info_reads_files(runner, tmp_path, make_workload):
    path = tmp_path / "w.safetensors"
    save(make_workload(4, 2, 300, 16), path)
    r = runner.invoke(cli, ["workload", "info", str(path)])
    assert r.exit_code == 0, r.output
    assert "Hq=4 Hkv=2 N=300" in r.output
