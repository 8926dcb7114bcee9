"""Entry point: the ``kprof`` group, its commands, and one-line error reporting."""

from __future__ import annotations

import sys

import click
from rich.markup import escape

from kprof.cli.console import err_console
from kprof.cli.exit_codes import EPILOG, EXIT_FAILED, EXIT_INTERRUPTED, NO_VALIDATION_EPILOG
from kprof.commands.errors import KprofError


def error_line(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)


class KprofGroup(click.Group):
    """Turns :class:`KprofError` into one red line and its exit code, never a traceback; an
    operating-system error on a path one line too (exit 1); Ctrl-C exits 130. Messages are
    printed as plain text (a ``[plot]`` in an install hint stays). Click's own usage errors (an
    unknown option, a value out of range, a missing one) are one line too, exit 2, naming the
    command whose --help lists the options."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.UsageError as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # a bare `kprof`: the help, as click shows it
                exc.show()
                sys.exit(exc.exit_code)
            where = exc.ctx.command_path if exc.ctx is not None else (prog_name or "kprof")
            words = [a for a in (args if args is not None else sys.argv[1:]) if not a.startswith("-")]
            if (exc.ctx is None or exc.ctx.parent is None) and words and words[0] in self.commands:
                where = f"{prog_name or 'kprof'} {words[0]}"  # raised before the subcommand's context existed
            error_line(f"{exc.format_message()} ({where} --help lists the options)")
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            error_line(exc.format_message())
            sys.exit(exc.exit_code)
        except click.exceptions.Abort:
            err_console.print("[bold red]interrupted[/] (Ctrl-C)", highlight=False)
            sys.exit(EXIT_INTERRUPTED)
        sys.exit(rv if isinstance(rv, int) and not isinstance(rv, bool) else 0)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KprofError as exc:
            error_line(str(exc))
            sys.exit(exc.exit_code)
        except OSError as exc:
            where = f" {exc.filename}" if exc.filename else ""
            error_line(f"cannot use{where}: {exc.strerror or exc}: check the path and its permissions")
            sys.exit(EXIT_FAILED)
        except KeyboardInterrupt:
            err_console.print("[bold red]interrupted[/] (Ctrl-C): files already written are complete; nothing was "
                              "half-written", highlight=False, soft_wrap=True)
            sys.exit(EXIT_INTERRUPTED)


@click.group(cls=KprofGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 120})
@click.version_option(package_name="kprof")
def cli() -> None:
    """kprof: profile, validate and autotune sparse decode-attention kernels against dense baselines.

    Without a GPU, kernels run through the Triton interpreter on small workloads (not GPU numbers).
    """


VALIDATING = ("capture", "check", "compare", "stages", "tune", "validate", "suite", "ncu")  # may exit 3
SUMMARIES = {
    "capture": "Record one layer's decode step (q, post-RoPE K/V) from a model, or a spec.",
    "check": "Run a method once against the fp64 reference; exit 3 on a mismatch.",
    "compare": "Time methods against a baseline in paired rounds: times and speedup intervals.",
    "env": "GPU, driver, clocks, versions, ncu; --measure-peak caches the copy and matmul peaks.",
    "gate": "CI regression gate: FASTER, SAME, SLOWER, UNCERTAIN or INCOMPARABLE.",
    "methods": "Registered methods, their options, launches and tunable parameters.",
    "ncu": "Nsight Compute tables of a method's own launches, or `ncu import FILE`.",
    "report": "Stored Results as tables, markdown, CSV, JSON, plots or one HTML page.",
    "santa": "SANTA++ preparation (teams, packing) outside timing.",
    "stages": "Each launch timed alone beside the complete operator (--chain: prefixes).",
    "suite": "Run a benchmark suite's steps in order, each with a time limit and a log.",
    "tune": "Search each launch's config space; validated, cached, resumable, confirmed.",
    "validate": "Check a method against fp64 over several sampling realisations.",
    "workload": "Named workload specs and workload files: list, info.",
}


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
    for name, command in cli.commands.items():  # whole in `kprof --help`, where a docstring's first line is cut
        command.short_help = SUMMARIES.get(name, command.short_help)
    for command in _all_commands(cli):
        command.epilog = command.epilog or (EPILOG if command.name in VALIDATING else NO_VALIDATION_EPILOG)


def _all_commands(group: click.Group):
    for command in group.commands.values():
        yield command
        if isinstance(command, click.Group):
            yield from _all_commands(command)


_register()


def main() -> None:
    cli(prog_name="kprof")
