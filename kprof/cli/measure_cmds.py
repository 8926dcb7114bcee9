"""``kprof compare`` and ``kprof stages``: run the protocol, show the table, store the Result."""

from __future__ import annotations

import sys

import click
from rich.markup import escape

from kprof.cli.console import console, err_console, measurement_progress
from kprof.cli.exit_codes import EXIT_INTERRUPTED, EXIT_INVALID
from kprof.cli.options import protocol_options, protocol_overrides

GPU_DEFAULT_CANDIDATES = ("santa", "triton-dense")
CPU_DEFAULT_CANDIDATES = ("triton-dense",)  # santa's sorts are slow in the Triton interpreter


def _finish(result, out: str | None, force: bool, as_json: bool, table) -> None:
    """Write the Result first (the observations are kept whatever follows), then show it. A run
    cut short by Ctrl-C is written as a partial Result and exits 130."""
    from kprof.commands.session import bad_observation_error
    from kprof.results.result import save_result
    from kprof.results.tables import extra_speedups

    path = save_result(result, out, force=force, keep_both=True)
    if out and str(path) != str(out):
        err_console.print(f"[yellow]warning:[/] {out} appeared during the run, so the result went to {path}",
                          highlight=False)
    if as_json:
        click.echo(result.to_json())
    else:
        console.print(table(result))
        for line in extra_speedups(result):
            console.print(f"speedup {line}", highlight=False)
        for note in result.notes:
            console.print(f"[yellow]note:[/] {note}")
        console.print(f"[dim]result written to {path}[/]")
    if result.partial:
        err_console.print(f"[bold red]interrupted:[/] {result.partial}; what was measured is in {path}, "
                          "marked partial (`kprof report` reads it, `kprof gate` refuses it)", highlight=False)
        sys.exit(EXIT_INTERRUPTED)
    for m in result.methods:
        for fault in m.faults:
            err_console.print(f"[bold red]fault[/] in {m.label}: {fault}")
    if bad := bad_observation_error(result):
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
                   "revision REV), or =LABEL (the prepared copy of an earlier row timed again, an A/A check "
                   "without a second copy of its buffers). [default: santa and triton-dense on GPU, "
                   "triton-dense on CPU]")
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
    from kprof.commands import preflight
    from kprof.commands.session import MeasurementSession
    from kprof.commands.sweep import run_sweep, with_variants
    from kprof.core.errors import UsageError
    from kprof.core.target import resolve_target
    from kprof.results.result import check_destination
    from kprof.results.tables import compare_table

    force = kw.pop("force")
    check_destination(out, force)
    overrides = protocol_overrides(kw)
    gpu = resolve_target(device).is_gpu
    defaults = GPU_DEFAULT_CANDIDATES if gpu else CPU_DEFAULT_CANDIDATES
    with preflight.as_usage():
        candidates = with_variants(list(methods) or ([] if vary else list(defaults)), list(vary))
    preflight.check_methods([baseline, *candidates])
    preflight.check_config(config_mode, [baseline, *candidates])
    preflight.check_workloads(workload)
    preflight.check_protocol(gpu, overrides, len(candidates) + 1)
    spread = ()
    if devices is not None:
        from kprof.core.pinned import parse_devices
        from kprof.core.target import cuda_device_count

        if len(workload) < 2:
            raise UsageError(f"--devices {devices}: it spreads several --workload runs over devices, and this run "
                             "has one workload: drop --devices or add workloads")
        spread = parse_devices(devices, cuda_device_count() if gpu else 0)
    with measurement_progress(as_json) as progress:
        result = run_sweep(lambda w: MeasurementSession.open(device, w, overrides, progress.status, config_mode,
                                                             keep_invalid),
                           list(workload) or [None], baseline, candidates, progress, devices=spread,
                           session_args={"device": device, "overrides": overrides, "config_mode": config_mode,
                                         "keep_invalid": keep_invalid})
    _finish(result, out, force, as_json, compare_table)


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
    from kprof.commands import preflight
    from kprof.commands.session import MeasurementSession
    from kprof.commands.stages import run_stages
    from kprof.core.config_space import parse_overrides
    from kprof.core.target import resolve_target
    from kprof.results.result import check_destination
    from kprof.results.tables import stages_table

    force = kw.pop("force")
    check_destination(out, force)
    overrides = protocol_overrides(kw) | {"stage_observations": stage_observations}
    launch_overrides = parse_overrides(config_overrides) or None
    preflight.check_methods([method], launch_overrides)
    preflight.check_config(config_mode, [method])
    preflight.check_workloads([workload])
    preflight.check_protocol(resolve_target(device).is_gpu, overrides)
    with measurement_progress(as_json) as progress:
        session = MeasurementSession.open(device, workload, overrides, progress.status, config_mode)
        result = run_stages(session, method, progress, launch_overrides, chain=chain)
    _finish(result, out, force, as_json, stages_table)
