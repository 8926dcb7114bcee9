import json

from click.testing import CliRunner

from kprof.cli.main import cli
from kprof.workloads import load, synthesize


def test_capture_synthetic_writes_the_spec(tmp_path):
    out = tmp_path / "smoke.safetensors"
    r = CliRunner().invoke(cli, ["capture", "--synthetic", "cpu-smoke", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert load(out).content_hash() == synthesize("cpu-smoke").content_hash()


def test_capture_needs_a_source(tmp_path):
    r = CliRunner().invoke(cli, ["capture", "--out", str(tmp_path / "x.safetensors")])
    assert r.exit_code == 2 and "needs --model, --layer, --context" in r.output


def test_santa_prepare_reports_memory_and_uses_the_cache(tmp_path):
    out = tmp_path / "smoke.safetensors"
    CliRunner().invoke(cli, ["capture", "--synthetic", "cpu-smoke", "--out", str(out)])
    args = ["santa", "prepare", "--workload", str(out), "--parents", "contiguous", "--json"]
    first = json.loads(CliRunner().invoke(cli, args).output)
    assert first["teams_per_kv_head"] == [512, 512]  # 2048 / 16 parents x 4 representatives
    assert first["k_per_query_head"] == [31, 31]
    assert first["memory_mib"]["packed_kv"] == 2.0
    assert first["cache"]["status"] == "built"
    second = json.loads(CliRunner().invoke(cli, args).output)
    assert second["cache"]["status"] == "hit"


def test_santa_prepare_rejects_bad_budget(tmp_path):
    r = CliRunner().invoke(cli, ["santa", "prepare", "--workload", "cpu-smoke", "--s", "125"])
    assert r.exit_code == 2 and "not divisible by P/R" in r.output


def test_validate_runs_three_realisations_of_santa(tmp_path, make_workload):
    from kprof.workloads import save

    path = tmp_path / "tiny.safetensors"
    save(make_workload(4, 2, 160, 16, seed=3, scale=2.0), path)
    spec = "santa:p=8,r=2,s=8,parents=contiguous,topk.BLOCK_T=16,attend.NUM_SPLITS=4"
    r = CliRunner().invoke(cli, ["validate", "--method", spec, "--workload", str(path), "--device", "cpu", "--json"])
    assert r.exit_code == 0, r.output
    recs = json.loads(r.output)
    assert [x["spec"].rsplit("=", 1)[1] for x in recs] == ["0", "1", "2"]
    assert all(x["passed"] and x["max_abs_error"] < 1e-5 for x in recs)
    r = CliRunner().invoke(cli, ["validate", "--method", "math", "--workload", str(path), "--device", "cpu", "--json"])
    assert r.exit_code == 0 and len(json.loads(r.output)) == 1
