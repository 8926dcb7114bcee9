"""kprof santa prepare: teams, memory and the layout cache."""

import json

from click.testing import CliRunner

from kprof.cli.main import cli


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
