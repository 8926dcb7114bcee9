"""``kprof ncu``: profile a method with Nsight Compute, or import existing ncu output, into tables."""

from __future__ import annotations

import json

import click
from rich.table import Table

from kprof.cli.console import console, err_console
from kprof.cli.options import one_format
from kprof.commands.ncu import METRIC_SETS, TABLE14

_HEADERS = {"kernel": "kernel", "ctas": "CTAs", "duration_us": "NCU time\n(us)", "occupancy_pct": "occ.\n(%)",
            "eligible_warps": "elig.\nwarps", "dram_pct": "DRAM\n(% peak)", "registers_per_thread": "reg.\n/thr."}
_MARKDOWN = {"duration_us": "NCU duration (us)", "occupancy_pct": "occ. (%)", "eligible_warps": "elig. warps/sched",
             "dram_pct": "DRAM (% peak)", "registers_per_thread": "reg./thr."}


def _emit(df, fmt: str, title: str, extra: list[str], imported: bool = True) -> None:
    absent = [m for m in extra if m not in df.columns]
    if absent:
        why = ("ncu collects a metric only when asked: kprof ncu --metrics NAME" if imported
               else "ncu gave no numeric value for it")
        err_console.print(f"[yellow]warning:[/] {title} has no metric {', '.join(absent)}: not shown ({why})",
                          highlight=False)
    cols = ["kernel", *TABLE14.keys(), *[m for m in extra if m in df.columns and m not in TABLE14.values()]]
    view = df[cols]
    whole = {c for c in cols if _integral(view[c])}  # counts (registers, CTAs, limits) without ".00"
    if fmt == "json":
        click.echo(json.dumps(json.loads(view.to_json(orient="records")), indent=2))
    elif fmt == "csv":
        click.echo(view.to_csv(index=False), nl=False)
    elif fmt == "markdown":
        head = [_MARKDOWN.get(c, _HEADERS.get(c, c)) for c in cols]
        click.echo("| " + " | ".join(head) + " |")
        click.echo("|" + "---|" * len(head))
        for _, row in view.iterrows():
            click.echo("| " + " | ".join(_fmt(row[c], c in whole) for c in cols) + " |")
    else:
        t = Table(title=title)
        for c in cols:  # names wrap rather than lose their ends; numbers stay whole on one line
            t.add_column(_HEADERS.get(c, c), justify="left" if c == "kernel" else "right", overflow="fold",
                         min_width=12 if c == "kernel" else None, no_wrap=c in TABLE14)
        for _, row in view.iterrows():
            t.add_row(*(_fmt(row[c], c in whole) for c in cols))
        console.print(t)
        console.print(f"sum of NCU durations: {df['duration_us'].sum():.2f} us (kernel replay, caches flushed; "
                      "not a replacement for event-timed latency)")


def _integral(column) -> bool:
    import pandas as pd

    values = pd.to_numeric(column, errors="coerce").dropna()
    return column.name != "kernel" and not values.empty and bool((values == values.round()).all())


def _fmt(v, whole: bool = False) -> str:
    import pandas as pd

    if v is None or (isinstance(v, float) and pd.isna(v)) or v is pd.NA:
        return "n/a"
    if isinstance(v, float):
        return f"{v:,.0f}" if whole else f"{v:.2f}"
    return str(v)


def _format_options(fn):
    fn = click.option("--markdown", "as_markdown", is_flag=True, help="Markdown table.")(fn)
    fn = click.option("--csv", "as_csv", is_flag=True, help="CSV.")(fn)
    fn = click.option("--json", "as_json", is_flag=True, help="JSON records (kernel, ctas, duration_us, ...).")(fn)
    return fn


@click.group(invoke_without_command=True)
@click.option("--method", default=None, help="Method to profile (its own launches only).")
@click.option("--workload", default="qwen2.5-7b-l14-32k", show_default=True, help="Spec name or workload file.")
@click.option("--captures", type=click.IntRange(min=1), default=3, show_default=True,
              help="ncu runs; the table shows per-metric medians.")
@click.option("--metrics", "metric_sets", multiple=True,
              help=f"Extra metric set ({', '.join(METRIC_SETS)}) or any ncu metric name (repeatable).")
@click.option("--config", "config_mode", default="auto", show_default=True,
              help="Launch configs: auto, default or FILE.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="runs/ncu", show_default=True,
              help="Where .ncu-rep and CSV files are kept.")
@click.option("--latency-from", "latency_from", type=click.Path(dir_okay=False), default="runs/latest.json",
              show_default=True, help="A kprof compare Result whose event-timed median is shown beside the NCU sum.")
@_format_options
@click.pass_context
def ncu(ctx, method, workload, captures, metric_sets, config_mode, out_dir, latency_from, as_markdown, as_csv,
        as_json) -> None:
    """Nsight Compute tables (SANTA++ Table 14 columns): run ncu on a method, or `kprof ncu import FILE...`.

    Profiling uses kernel replay, --cache-control all, --clock-control none, and an NVTX range so
    only the method's own launches are measured (no warm-up, eviction or setup kernels).
    """
    if ctx.invoked_subcommand is not None:
        return
    fmt = one_format(markdown=as_markdown, csv=as_csv, json=as_json)
    if method is None:
        click.echo(ctx.get_help())
        return
    from kprof.commands.ncu import event_latency_line, profile

    result = profile(method, workload, captures, list(metric_sets), config_mode, out_dir,
                     status=lambda s: err_console.print(f"[dim]• {s}[/]"))
    if result.bytes_per_call is not None:
        console.print(f"[dim]DRAM bytes per call {result.bytes_per_call:,} recorded: kprof compare reports GB/s "
                      "from them[/]")
    _emit(result.table, fmt, f"{method} on {workload}: medians of {captures} ncu captures", result.metrics,
          imported=False)
    if fmt is None:
        console.print(event_latency_line(method, float(result.table["duration_us"].sum()), latency_from),
                      highlight=False)


@ncu.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--metric", "extra", multiple=True, help="Extra metric column to show (repeatable).")
@_format_options
def import_(files, extra, as_markdown, as_csv, as_json) -> None:
    """Read ncu output made elsewhere: CSV (--page raw or details) or .ncu-rep (needs ncu here)."""
    from kprof.commands.ncu import import_file

    fmt = one_format(markdown=as_markdown, csv=as_csv, json=as_json)
    for f in files:
        _emit(import_file(f), fmt, f, list(extra))
