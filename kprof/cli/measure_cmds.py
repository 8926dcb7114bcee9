"""``kprof compare`` and ``kprof stages``: run the protocol, show the table, store the Result."""

from __future__ import annotations

import sys

import click
from rich.markup import escape

from kprof.cli.console import console, err_console, measurement_progress
from kprof.cli.exit_codes import EXIT_INTERRUPTED, EXIT_INVALID
from kprof.cli.options import protocol_options, protocol_overrides


def _finish(result, out: str | None, force: bool, as_json: bool) -> None:
    """Write the Result first (the observations are kept whatever follows), then show it. A run
    cut short by Ctrl-C is written as a partial Result and exits 130."""
    from kprof.commands import report

    path = report.save_run(result, out, force)
    if out and str(path) != str(out):
        err_console.print(f"[yellow]warning:[/] {out} appeared during the run, so the result went to {path}",
                          highlight=False)
    if as_json:
        click.echo(result.to_json())
        # stdout holds the JSON alone
        err_console.print(f"[dim]result written to {path}[/]", highlight=False, soft_wrap=True)
    else:
        console.print(report.table(result, console.width))
        for line in report.extra_speedups(result):
            console.print(f"speedup {line}", highlight=False)
        for note in result.notes:
            console.print(f"[yellow]note:[/] {note}", soft_wrap=True)  # paths stay whole, copyable
        console.print(f"[dim]result written to {path}[/]", soft_wrap=True)
    if result.partial:
        err_console.print(f"[bold red]interrupted:[/] {result.partial}; what was measured is in {path}, "
                          "marked partial (`kprof report` reads it, `kprof gate` refuses it)", highlight=False,
                          soft_wrap=True)
        sys.exit(EXIT_INTERRUPTED)
    for m in result.methods:
        for fault in m.faults:
            err_console.print(f"[bold red]fault[/] in {m.label}: {fault}")
    if bad := report.bad_observation_error(result):
        err_console.print(f"[bold red]error:[/] {escape(bad)} (raw observations kept in {path})", highlight=False)
        sys.exit(EXIT_INVALID)
    failed = [m.label for m in result.methods if not m.validation.passed or m.faults]
    if failed:
        err_console.print(f"[bold red]validation failed or faults reported[/] for {', '.join(failed)}: "
                          "their timings are not comparable")
        sys.exit(EXIT_INVALID)


@click.command()
@click.option("--method", "methods", multiple=True,
              help="Candidate method spec (repeatable): NAME, NAME:key=value,..., NAME@REV (the method at git "
                   "revision REV), MODULE:NAME (your own: a function f(q, k, v) -> o, @kprof.tunable for launch "
                   "parameters, or a Method subclass, in an importable module), or =LABEL (the prepared copy of "
                   "an earlier row timed again, an A/A check without a second copy of its buffers). [default: "
                   "santa and triton-dense on GPU, triton-dense on CPU]")
@click.option("--baseline", default="flash", show_default=True,
              help="Baseline every candidate is paired against (math substitutes for GPU-only ones on CPU).")
@click.option("--vary", multiple=True, metavar="SPEC:KEY=V1,V2,...",
              help="Add one candidate row per value of a method option or launch parameter (repeatable), e.g. "
                   "santa:s=32,64,124 or santa:attend.NUM_SPLITS=16,32.")
@click.option("--devices", default=None, metavar="all|0,1,...",
              help="With several --workload: run the workloads at once on these GPUs of one model, each "
                   "workload's rows one paired run on one GPU (a worker process pinned to it). [default: one "
                   "device, one workload after another]")
@click.option("--keep-invalid", is_flag=True,
              help="Time a row whose output failed validation anyway, marked FAIL in every table and plot "
                   "(by default such a row stops the run before anything is timed, exit 3).")
@protocol_options(many_workloads=True)
def compare(methods: tuple[str, ...], baseline: str, vary: tuple[str, ...], devices: str | None, keep_invalid: bool,
            workload: tuple[str, ...], device, config_mode, as_json, out, **kw) -> None:
    """Time candidates against a baseline in the same rounds, with a speedup interval.

    Each round interleaves all methods in the order of a balanced (Williams) design, evicts L2
    before every timed call outside the timed interval, and times each complete call with CUDA
    events. Reported: time per call (the mean over Latin squares of the design of each round's
    fenced mean) with its interval, the range of round means, speedup = baseline/candidate
    from per-round log ratios averaged over pair cycles (position effects cancel) with an
    interval that allows for drift between cycles (bad rounds left out and counted), noise,
    drift, validation against fp64 and
    launch counts from a separate profiler pre-run. A method spec NAME@REV times the method as it
    was at git revision REV, in the same rounds. An output that fails validation stops the run
    before timing (exit 3; --keep-invalid times it, marked FAIL). Exit 3 too if a method reports
    a fault in its runs, or more than 1% of a row's observations are bad (the Result is written
    first).
    """
    from kprof.commands.compare_request import compare_request, run_request

    force = kw.pop("force")
    req = compare_request(list(methods), baseline, list(vary), list(workload), device, protocol_overrides(kw),
                          config_mode, keep_invalid, devices, out, force)
    from kprof.commands.errors import InvalidOutput

    with measurement_progress() as progress:
        try:
            result = run_request(req, progress)
        except InvalidOutput as exc:
            if as_json and exc.kept is not None:  # stdout holds what was kept, as --json promises; the error follows
                click.echo(exc.kept.to_json())
            raise
    _finish(result, out, force, as_json)


@click.command()
@click.option("--method", required=True, help="Method whose launches are timed one by one.")
@click.option("--set", "config_overrides", multiple=True, metavar="LAUNCH.PARAM=V",
              help="Override a launch parameter (repeatable).")
@click.option("--stage-observations", type=int, default=None,
              help="Timed observations per stage per round. [default: 500 on GPU, 3 on CPU]")
@click.option("--chain", is_flag=True,
              help="Time the chain's prefixes (launches 1..k, each from a cold cache) instead of isolated "
                   "stages: consecutive differences are each launch's marginal cost inside the running "
                   "chain (with programmatic dependent launch and a warm L2), and they add up.")
@protocol_options
def stages(method: str, config_overrides: tuple[str, ...], stage_observations: int | None, chain: bool, workload,
           device, config_mode, as_json, out, **kw) -> None:
    """Isolated per-launch timings (SANTA++ Table 13 style) and the complete operator measured directly.

    Each stage is timed alone: its upstream stages run untimed, then the eviction buffer, then the
    timed launch; the order of stages rotates across observations. Stage medians are not additive.
    With --chain, the prefixes of the launch chain are timed instead (see --chain).
    """
    from kprof.commands.stages import run_stages_request, stages_request

    force = kw.pop("force")
    overrides = protocol_overrides(kw) | {"stage_observations": stage_observations}
    req = stages_request(method, list(config_overrides), workload, device, overrides, config_mode, chain, out, force)
    with measurement_progress() as progress:
        result = run_stages_request(req, progress)
    _finish(result, out, force, as_json)
