"""The kprof group: help, one-line errors, exit codes, and --help without torch."""


import pytest

from kprof.cli.main import cli


def test_help_explains_the_tool(runner):
    r = runner.invoke(cli, ["--help"])
    assert r.exit_code == 0
    assert "sparse decode-attention" in r.output
    for cmd in ("env", "workload", "methods", "check"):
        assert cmd in r.output


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


def test_every_command_has_a_whole_summary_in_kprof_help():
    from kprof.cli.main import SUMMARIES, VALIDATING, cli

    assert set(SUMMARIES) == set(cli.commands), "a command renamed or added: give it a line in SUMMARIES"
    assert set(VALIDATING) <= set(cli.commands), "a command renamed: its --help's exit codes follow VALIDATING"
    assert all(cli.commands[name].short_help == line for name, line in SUMMARIES.items())
