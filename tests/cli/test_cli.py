import json

import pytest
import torch
from click.testing import CliRunner

from kprof.cli.main import cli
from kprof.workloads import save


@pytest.fixture
def runner():
    return CliRunner()


def test_help_explains_the_tool(runner):
    r = runner.invoke(cli, ["--help"])
    assert r.exit_code == 0
    assert "sparse decode-attention" in r.output
    for cmd in ("env", "workload", "methods", "check"):
        assert cmd in r.output


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


def test_check_passes_for_triton_dense_on_the_default_workload(runner):
    r = runner.invoke(cli, ["check", "--method", "triton-dense", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["passed"] and doc["rel_error"] < 1e-5


@pytest.mark.parametrize(
    "args, message",
    [
        (["check", "--method", "nope"], "unknown method 'nope'"),
        (["check", "--method", "math", "--workload", "nope"], "unknown workload 'nope'"),
        (["check", "--method", "triton-dense", "--set", "partial.BLOCK_N=7"], "not allowed"),
        (["workload", "info", "missing.safetensors"], "does not exist"),
    ],
)
def test_user_errors_are_one_line_with_nonzero_exit(runner, args, message):
    r = runner.invoke(cli, args)
    assert r.exit_code == 2  # a usage error: found before anything loads
    assert message in r.output
    assert "Traceback" not in r.output
    assert len([line for line in r.output.splitlines() if line.strip()]) <= 2


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU refusal of a GPU-only method")
def test_flash_on_cpu_fails_with_reason(runner):
    r = runner.invoke(cli, ["check", "--method", "flash"])
    assert r.exit_code == 1
    assert "needs a CUDA GPU" in r.output


def test_every_help_answers_without_importing_torch_or_triton():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from kprof.cli.main import cli\n"
        "r = CliRunner()\n"
        "cmds = [[]] + [[c] for c in cli.commands]\n"
        "cmds += [['workload', 'list'], ['workload', 'info'], ['santa', 'prepare']]\n"
        "for c in cmds:\n"
        "    res = r.invoke(cli, [*c, '--help'])\n"
        "    assert res.exit_code == 0, (c, res.output)\n"
        "heavy = sorted(m for m in ('torch', 'triton', 'numpy', 'pandas', 'scipy') if m in sys.modules)\n"
        "print('HEAVY', heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "HEAVY []" in out.stdout, out.stdout


def test_the_cli_copies_of_tuning_constants_match():
    from kprof.cli import tune_cmd
    from kprof.tuning.search import STRATEGIES

    assert set(tune_cmd.STRATEGIES) == set(STRATEGIES)
