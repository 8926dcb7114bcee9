"""Entry point: the ``kprof`` group, its commands, and one-line error reporting."""

from __future__ import annotations

import sys

import click
from rich.markup import escape

from kprof.cli.console import err_console
from kprof.core.errors import KprofError

EXIT_INTERRUPTED = 130  # the shell's code for a process ended by Ctrl-C (128 + SIGINT)


class KprofGroup(click.Group):
    """Turns :class:`KprofError` into one red line and a non-zero exit, never a traceback; Ctrl-C
    exits 130. Messages are printed as plain text (a ``[plot]`` in an install hint stays)."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KprofError as exc:
            err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            err_console.print("[bold red]interrupted[/] (Ctrl-C): files already written are complete; a tune "
                              "resumes where it stopped", highlight=False)
            sys.exit(EXIT_INTERRUPTED)


@click.group(cls=KprofGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kprof")
def cli() -> None:
    """kprof: profile, validate and autotune sparse decode-attention kernels against dense baselines.

    Without a GPU, kernels run through the Triton interpreter on small workloads (not GPU numbers).
    """


def _register() -> None:
    from kprof.cli import (
        capture_cmd,
        env_cmd,
        gate_cmd,
        measure_cmds,
        methods_cmd,
        ncu_cmd,
        report_cmd,
        santa_cmd,
        suite_cmd,
        tune_cmd,
        workload_cmd,
    )

    cli.add_command(capture_cmd.capture)
    cli.add_command(santa_cmd.santa)
    cli.add_command(measure_cmds.compare)
    cli.add_command(measure_cmds.stages)
    cli.add_command(tune_cmd.tune)
    cli.add_command(ncu_cmd.ncu)
    cli.add_command(gate_cmd.gate_cmd)
    cli.add_command(report_cmd.report)
    cli.add_command(env_cmd.env)
    cli.add_command(workload_cmd.workload)
    cli.add_command(methods_cmd.methods)
    cli.add_command(methods_cmd.check)
    cli.add_command(methods_cmd.validate)
    cli.add_command(suite_cmd.suite)


_register()


def main() -> None:
    cli(prog_name="kprof")
