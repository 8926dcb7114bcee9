"""kprof env: where kprof runs, as a table and as JSON."""

import json

import torch

from kprof.cli.main import cli


def test_env_json_is_valid_and_says_where_it_runs(runner):
    r = runner.invoke(cli, ["env", "--json", "--no-ncu"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["execution"] == ("gpu" if torch.cuda.is_available() else "cpu-interpreter")
    assert doc["torch"] == torch.__version__
    for key in ("gpu", "driver", "cuda_runtime", "nvml", "ncu_path", "triton", "kprof"):
        assert key in doc


def test_env_table(runner):
    r = runner.invoke(cli, ["env", "--no-ncu"])
    assert r.exit_code == 0
    assert "runs on" in r.output
