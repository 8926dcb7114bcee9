"""``kprof gate``: CI performance regression gate with exit codes."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from kprof.cli.console import console, err_console, measurement_progress
from kprof.cli.exit_codes import EXIT_INTERRUPTED, EXIT_INVALID, EXIT_USAGE, GATE_EPILOG
from kprof.cli.options import protocol_options, protocol_overrides

EXIT_ERROR = 5  # kprof.results.gate.EXIT_ERROR, kept here so that --help imports no numerics


def _threshold(ctx, param, text: str) -> float:
    from kprof.commands.errors import UsageError
    from kprof.commands.percent import parse_percent

    try:
        return parse_percent(text, "3% or 0.03")
    except UsageError as exc:
        raise click.BadParameter(str(exc)) from None


def _print(report, as_json: bool) -> None:
    from kprof.commands.gate import format_value, report_json, value_unit

    if as_json:
        click.echo(report_json(report))
        return
    detectable = any(r.mde is not None for r in report.rows)
    t = Table(title=f"kprof gate ({report.metric}, threshold {report.threshold:.1%}): {report.verdict}",
              caption=f"ratio = now / then (above 1: slower); intervals: {report.method}"
              + ("; detectable: the smallest regression this history catches 9 times in 10" if detectable
                 else ""))
    unit = value_unit(report.metric)
    cols = ["method", f"then {unit}", f"now {unit}", "ratio", "95% interval", "verdict"]
    cols += ["detectable"] * detectable + ["note"] * any(r.note for r in report.rows)
    for col in cols:  # a method's name is never broken; notes and long intervals wrap whole
        t.add_column(col, justify="left" if col in ("method", "verdict", "note") else "right",
                     no_wrap=col in ("method", "verdict", "ratio"), overflow="fold")
    for r in report.rows:
        if r.ratio is None:
            cells = [r.method, "", "", "", "", r.verdict, "", r.note]
        else:
            ci = f"[{r.ratio.low:.4f}, {r.ratio.high:.4f}]" if r.ratio.has_interval else r.ratio.note
            then, now = (format_value(v, report.metric) for v in (r.baseline_value, r.candidate_value))
            mde = "" if r.mde is None else ">100%" if r.mde > 1 else f"{r.mde:.1%}"  # beyond 100%: nothing is
            cells = [r.method, then, now, f"{r.ratio.estimate:.4f}", ci, r.verdict, mde, r.note]
        t.add_row(*cells[:6], *[c for c, on in zip(cells[6:], (detectable, "note" in cols)) if on])
    if report.rows:
        console.print(t)
    else:  # nothing could be compared: the verdict and why, without an empty table
        console.print(f"kprof gate ({report.metric}, threshold {report.threshold:.1%}): {report.verdict}",
                      highlight=False)
    for reason in report.reasons:
        console.print(f"[yellow]incomparable:[/] {reason}", highlight=False)
    for warning in report.warnings:
        err_console.print(f"[yellow]warning:[/] {warning}", highlight=False)


def _decide(rev, baselines, candidate, methods, workload, device, config_mode, out, overrides, threshold, metric,
            update_baseline, force: bool):
    """The report; None when --update-baseline started a new history with the candidate."""
    from kprof.commands import gate

    if rev is None:
        if update_baseline and (started := gate.start_history(candidate, Path(baselines[0]))):
            console.print(started.message)
            return None
        return gate.against_history(list(baselines), candidate, threshold, metric)
    with measurement_progress() as progress:
        report, result, path = gate.revision_run(rev, methods, threshold, workload, device, config_mode, overrides,
                                                 out, force, progress)
    if result.partial:
        err_console.print(f"[bold red]interrupted:[/] {result.partial}; no verdict; what was measured is in "
                          f"{path}, marked partial", highlight=False)
        sys.exit(EXIT_INTERRUPTED)
    err_console.print(f"[dim]result written to {path}[/]", soft_wrap=True)
    return report


@click.command("gate", epilog=GATE_EPILOG)
@click.option("--baseline", "baselines", multiple=True, type=click.Path(),
              help="Baseline history: a folder of Results of the same setup (profiles/baselines/NAME/), or Result "
                   "files (repeatable). Three or more runs give the run-to-run spread the verdict needs.")
@click.option("--candidate", type=click.Path(dir_okay=False), default=None, help="Result of the run under test.")
@click.option("--against", "rev", default=None, metavar="REV",
              help="Instead of stored Results: time each --method now and at git revision REV in the same rounds "
                   "and judge from that run's paired interval (the sound gate for 'did this commit slow it down?').")
@click.option("--method", "methods", multiple=True,
              help="With --against: methods to gate (repeatable). [default: santa and triton-dense on GPU, "
                   "triton-dense on CPU]")
@click.option("--max-regression", default="3%", show_default=True, callback=_threshold,
              help="Threshold t in (0, 50%): SLOWER needs the interval above 1 and the estimate above 1+t; SAME "
                   "needs the interval within [1-t, 1+t].")
@click.option("--metric", type=click.Choice(["speedup", "latency"]), default="speedup", show_default=True,
              help="Across runs: speedup compares each candidate's speedup over its run's own baseline method "
                   "(machine speed cancels); latency compares each method's absolute median.")
@click.option("--uncertain", type=click.Choice(["fail", "pass"]), default="fail", show_default=True,
              help="Exit code for UNCERTAIN: fail (3) or pass (0).")
@click.option("--summary-md", type=click.Path(dir_okay=False), default=None,
              help="Write a markdown summary (for CI comments), appended to the file if it exists (as to "
                   "$GITHUB_STEP_SUMMARY).")
@click.option("--update-baseline", is_flag=True,
              help="After gating, add the candidate to the history folder given as --baseline: while the history "
                   "holds fewer than 3 runs any comparable run (it cannot judge yet), then only a SAME run (or any "
                   "but INCOMPARABLE with --force); an empty or new folder starts a history with it.")
@click.option("--force", is_flag=True,
              help="With --update-baseline: add a candidate whose verdict is not SAME; with --against: replace "
                   "the file --out names.")
@protocol_options(force=False, json_help="Print the gate's report as JSON on stdout: verdict, rows with their "
                  "intervals, reasons and warnings (progress stays on stderr; --against still writes its Result "
                  "to --out).")
def gate_cmd(baselines, candidate, rev, methods, max_regression, metric, uncertain, summary_md, update_baseline, force,
             workload, device, config_mode, as_json, out, **kw) -> None:
    """Decide whether a change made kernels slower; exit 0 FASTER/SAME, 1 SLOWER, 2 usage error,
    3 UNCERTAIN, 4 INCOMPARABLE, 5 unreadable input or another error.

    With --against REV (recommended): each method is timed now and at REV in the same rounds of a
    balanced design, and the verdict comes from that run's paired interval. With --baseline and
    --candidate: the candidate Result is judged against a history of Results of the same setup,
    adding the history's run-to-run spread to the interval; the table prints the smallest
    regression that would be caught with 90% probability. The protocol options apply to
    --against only.
    """
    if rev is None and (not baselines or not candidate):
        raise click.UsageError("pass --baseline HISTORY and --candidate RESULT, or --against REV")
    if rev is not None and any("@" in m.split("=", 1)[0] for m in methods):
        raise click.UsageError("--against compares each --method with itself at REV: pass plain method specs")
    if rev is not None and (baselines or candidate):
        raise click.UsageError("--against times both versions itself: drop --baseline and --candidate")
    if update_baseline and (rev is not None or len(baselines) != 1 or Path(baselines[0]).is_file()):
        raise click.UsageError("--update-baseline adds the candidate to a history folder: pass one --baseline DIR")
    from kprof.commands import gate
    from kprof.commands.errors import KprofError

    overrides = protocol_overrides(kw)
    try:
        gate.gate_request(rev, list(methods), workload, device, config_mode, overrides, out, force, summary_md)
    except KprofError as exc:
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        sys.exit(EXIT_USAGE if exc.exit_code == EXIT_USAGE else EXIT_ERROR)
    try:
        report = _decide(rev, baselines, candidate, methods, workload, device, config_mode, out, overrides,
                         max_regression, metric, update_baseline, force)
        if report is None:  # the first run of a new history
            return
        _print(report, as_json)
        if summary_md:
            gate.append_summary(summary_md, report)
        if update_baseline:
            update = gate.update_history(report, candidate, Path(baselines[0]), force)
            if update.added is None and update.exit_code is None:  # already there: the verdict decides the exit
                err_console.print(f"[yellow]note:[/] {update.message}", highlight=False, soft_wrap=True)
            elif update.added is None:
                err_console.print(f"[bold red]error:[/] {update.message}", highlight=False)
                sys.exit(update.exit_code)
            else:
                console.print(update.message)
                if update.exit_code is not None:  # a growing history took it: its verdict cannot fail the job yet
                    sys.exit(update.exit_code)
    except KprofError as exc:  # usage and validation keep their codes; anything else is no verdict (5)
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code if exc.exit_code in (EXIT_USAGE, EXIT_INVALID) else EXIT_ERROR)
    except Exception as exc:  # noqa: BLE001 - exit 1 would read as SLOWER: any other failure is exit 5
        first = (str(exc).strip().splitlines() or [""])[0]
        err_console.print(f"[bold red]error:[/] {type(exc).__name__}: {escape(first[:300])}", highlight=False,
                          soft_wrap=True)
        sys.exit(EXIT_ERROR)
    sys.exit(gate.exit_code(report, uncertain))
