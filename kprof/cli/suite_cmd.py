"""``kprof suite``: run a benchmark suite file (a list of kprof commands), logs in one folder."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.table import Table

from kprof.cli.console import console, err_console


@click.command()
@click.argument("suite_file", type=click.Path(dir_okay=False))
@click.option("--out", "out_dir", type=click.Path(file_okay=False),
              help="Folder for each step's log and suite.json (the outcome of every step, rewritten after each); "
                   "required unless --list.")
@click.option("--only", multiple=True, metavar="STEP", help="Run only these steps (repeatable).")
@click.option("--resume", is_flag=True, help="Skip the steps that passed in an earlier run into the same --out.")
@click.option("--list", "list_only", is_flag=True, help="Print the steps and their commands; run nothing.")
def suite(suite_file: str, out_dir: str | None, only: tuple[str, ...], resume: bool, list_only: bool) -> None:
    """Run SUITE_FILE's steps in order, each a fresh process with its own time limit and log.

    A step that fails, hangs past its limit or needs a GPU that is not there is recorded and the
    suite goes on; the exit code is 1 if any step failed or timed out. profiles/suites/h200.toml
    holds the project's H200 checks: kprof suite profiles/suites/h200.toml --out DIR.

    \b
    SUITE_FILE is TOML: [suite] with description and timeout_s (a step's default limit, 300 s),
    then one [[step]] a command, with:
      name       the step's name; its log is OUT/NAME.log
      kprof      a kprof command's arguments, e.g. ["compare", "--out", "{out}/c.json"]
      run        or any program's: ["{python}", "scripts/x.py"]
      timeout_s  this step's limit in seconds
      requires   "gpu": skipped, and said so, without CUDA
      ok_exit    exit codes that count as passing (default [0])
      env        environment variables for the step, a table of strings
    {out} becomes --out and {python} this Python.
    """
    from kprof.commands.suite import load_suite, run_suite

    if out_dir is None and not list_only:
        raise click.UsageError("pass --out DIR for the steps' logs and suite.json (only --list runs without it)")
    spec = load_suite(suite_file, kprof_commands=set(click.get_current_context().find_root().command.commands))
    if list_only:
        for step in spec.steps:
            console.print(f"{step.name}: {' '.join(step.argv)}" + ("  (needs a GPU)" if step.requires_gpu else ""),
                          highlight=False, soft_wrap=True)
        return
    out = Path(out_dir)
    outcomes = run_suite(spec, out, only=set(only) or None, resume=resume,
                         say=lambda line: err_console.print(line, highlight=False, soft_wrap=True))
    t = Table(title=f"{spec.path.name}: {sum(o.status == 'passed' for o in outcomes)} of {len(outcomes)} passed",
              caption=f"logs and suite.json in {out}")
    for col in ("step", "status", "exit", "seconds", "note"):
        t.add_column(col, justify="right" if col in ("exit", "seconds") else "left")
    for o in outcomes:
        color = {"passed": "green", "skipped": "yellow"}.get(o.status, "red")
        t.add_row(o.name, f"[{color}]{o.status}[/]", "" if o.exit_code is None else str(o.exit_code),
                  f"{o.seconds:.0f}", o.note)
    console.print(t)
    if any(o.status in ("failed", "timeout") for o in outcomes):
        sys.exit(1)
