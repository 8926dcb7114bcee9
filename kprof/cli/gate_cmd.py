"""``kprof gate``: CI performance regression gate with exit codes."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from kprof.atomic import atomic_write_text
from kprof.cli.console import console
from kprof.errors import KprofError
from kprof.gate import EXIT, gate, replace_baseline, summary_markdown
from kprof.results import load_result


def _threshold(text: str) -> float:
    t = text.strip()
    try:
        return float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise KprofError(f"--max-regression {text!r} is not a number: write e.g. 3% or 0.03") from None


@click.command("gate")
@click.option("--baseline", required=True, type=click.Path(dir_okay=False), help="Committed baseline Result (profiles/baselines/).")
@click.option("--candidate", required=True, type=click.Path(dir_okay=False), help="Result of the run under test.")
@click.option("--max-regression", default="3%", show_default=True, help="Threshold t: SLOWER above 1+t, FASTER below 1-t.")
@click.option("--metric", type=click.Choice(["latency", "speedup"]), default="latency", show_default=True,
              help="latency: each method's median latency; speedup: each candidate's speedup vs its run's baseline.")
@click.option("--summary-md", type=click.Path(dir_okay=False), default=None, help="Write a markdown summary (for CI comments).")
@click.option("--update-baseline", is_flag=True, help="After gating, replace the baseline with the candidate (atomic).")
def gate_cmd(baseline, candidate, max_regression, metric, summary_md, update_baseline) -> None:
    """Compare a candidate Result with a baseline Result; exit 0 FASTER/SAME, 1 SLOWER, 2 UNCERTAIN/incomparable.

    Intervals come from resampling the rounds of each run independently (the runs were not
    interleaved). Incomparable runs (other device, workload hash or protocol) say which and exit 2.
    A method whose launch config changed is still compared; the row names the change.
    """
    threshold = _threshold(max_regression)
    base, cand = load_result(baseline), load_result(candidate)
    overall, rows, reasons = gate(base, cand, threshold, metric)
    md = summary_markdown(overall, rows, reasons, threshold, metric)
    if summary_md:
        atomic_write_text(summary_md, md)
    t = Table(title=f"kprof gate ({metric}, threshold {threshold:.1%}): {overall}")
    for col in ("method", "baseline us", "candidate us", "ratio", "95% CI", "verdict", "note"):
        t.add_column(col, justify="left" if col in ("method", "verdict", "note") else "right")
    for r in rows:
        if r.ratio is None:
            t.add_row(r.method, "", "", "", "", r.verdict, r.note)
        else:
            t.add_row(r.method, f"{r.baseline_us:.2f}", f"{r.candidate_us:.2f}", f"{r.ratio.estimate:.4f}",
                      f"[{r.ratio.low:.4f}, {r.ratio.high:.4f}]", r.verdict, r.note)
    console.print(t)
    for reason in reasons:
        console.print(f"[yellow]incomparable:[/] {reason}")
    if update_baseline:
        replace_baseline(Path(candidate), Path(baseline))
        console.print(f"baseline {baseline} updated from {candidate}")
    raise SystemExit(EXIT[overall])
