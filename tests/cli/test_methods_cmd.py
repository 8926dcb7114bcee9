"""kprof check and validate: a method's output against its fp64 reference."""

import json

import pytest
import torch
from click.testing import CliRunner

from kprof.cli.main import cli
from kprof.workloads import save


def test_check_passes_for_triton_dense_on_the_default_workload(runner):
    r = runner.invoke(cli, ["check", "--method", "triton-dense", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["passed"] and doc["rel_error"] < 1e-5


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU refusal of a GPU-only method")
def test_flash_on_cpu_fails_with_reason(runner):
    r = runner.invoke(cli, ["check", "--method", "flash"])
    assert r.exit_code == 1
    assert "needs a CUDA GPU" in r.output


def test_validate_runs_three_realisations_of_santa(tmp_path, make_workload):

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


def test_methods_lists_each_methods_options_and_keeps_brackets_in_summaries(runner):
    r = runner.invoke(cli, ["methods"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert "options: pdl=0|1, window=0|1" in r.output
    assert "kprof[flashinfer]" in r.output  # rich markup would eat "[flashinfer]"
    doc = json.loads(runner.invoke(cli, ["methods", "--json"]).output)
    dense = next(c for c in doc if c["name"] == "triton-dense")
    assert dense["options"]["window"].startswith("0|1: K and V copied into one buffer")


def test_methods_at_100_columns_wraps_value_lists_and_cuts_none():
    import os
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "kprof", "methods"], capture_output=True, text=True,
                       env=os.environ | {"COLUMNS": "100"})
    assert r.returncode == 0 and "…" not in r.stdout, r.stderr
    assert max(len(line) for line in r.stdout.splitlines()) <= 100
    flat = " ".join(r.stdout.split())
    assert "4096}" in flat and "CHUNK={256," in flat  # the whole of Fathom's gather.CHUNK list is there
