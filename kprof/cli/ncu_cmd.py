"""``kprof ncu``: profile a method with Nsight Compute, or import existing ncu output, into tables."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from kprof.cli.console import console, err_console
from kprof.core.errors import KprofError
from kprof.ncu.measured_bytes import READ, WRITE, record_bytes
from kprof.ncu.metrics import METRIC_SETS, TABLE14, resolve_metrics

_HEADERS = {"kernel": "kernel", "ctas": "CTAs", "duration_us": "NCU duration (us)", "occupancy_pct": "occ. (%)",
            "eligible_warps": "elig. warps/sched", "dram_pct": "DRAM (% peak)", "registers_per_thread": "reg./thr."}


def _emit(df, fmt: str, title: str, extra: list[str]) -> None:
    cols = ["kernel", *TABLE14.keys(), *[m for m in extra if m in df.columns and m not in TABLE14.values()]]
    view = df[cols]
    if fmt == "json":
        click.echo(json.dumps(json.loads(view.to_json(orient="records")), indent=2))
    elif fmt == "csv":
        click.echo(view.to_csv(index=False), nl=False)
    elif fmt == "markdown":
        head = [_HEADERS.get(c, c) for c in cols]
        click.echo("| " + " | ".join(head) + " |")
        click.echo("|" + "---|" * len(head))
        for _, row in view.iterrows():
            click.echo("| " + " | ".join(_fmt(row[c]) for c in cols) + " |")
    else:
        t = Table(title=title)
        for c in cols:
            t.add_column(_HEADERS.get(c, c), justify="left" if c == "kernel" else "right")
        for _, row in view.iterrows():
            t.add_row(*(_fmt(row[c]) for c in cols))
        console.print(t)
        console.print(f"sum of NCU durations: {df['duration_us'].sum():.2f} us (kernel replay, caches flushed; "
                      "not a replacement for event-timed latency)")


def _fmt(v) -> str:
    import pandas as pd

    if v is None or (isinstance(v, float) and pd.isna(v)) or v is pd.NA:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.2f}"
    return str(v)


def _format_options(fn):
    fn = click.option("--markdown", "fmt", flag_value="markdown", help="Markdown table.")(fn)
    fn = click.option("--csv", "fmt", flag_value="csv", help="CSV.")(fn)
    fn = click.option("--json", "fmt", flag_value="json", help="JSON records (kernel, ctas, duration_us, ...).")(fn)
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
def ncu(ctx, method, workload, captures, metric_sets, config_mode, out_dir, latency_from, fmt) -> None:
    """Nsight Compute tables (SANTA++ Table 14 columns): run ncu on a method, or `kprof ncu import FILE...`.

    Profiling uses kernel replay, --cache-control all, --clock-control none, and an NVTX range so
    only the method's own launches are measured (no warm-up, eviction or setup kernels).
    """
    from kprof.ncu.parse import medians_over_captures

    if ctx.invoked_subcommand is not None:
        return
    if method is None:
        click.echo(ctx.get_help())
        return
    from kprof.commands import preflight
    from kprof.ncu.run import capture, require_ncu

    preflight.check_methods([method])
    preflight.check_config(config_mode, [method])
    preflight.check_workloads([workload])
    preflight.check_out_dir(out_dir, "--out")
    require_ncu()
    metrics = resolve_metrics([*metric_sets, READ, WRITE])  # the bytes are kept for compare's GB/s
    describe = Path(out_dir) / "target.json"
    target = ["--method", method, "--workload", workload, "--config", config_mode, "--describe", str(describe)]
    frames = []
    for i in range(captures):
        err_console.print(f"[dim]• ncu capture {i + 1}/{captures} of {method}[/]")
        frames.append(capture(metrics, target, Path(out_dir), i)[1])
    if len({len(f) for f in frames}) != 1:
        raise KprofError("captures profiled different numbers of launches: "
                         "the method is not deterministic in its launches")
    table = medians_over_captures(frames)
    _record_bytes(table, describe)
    _emit(table, fmt, f"{method} on {workload}: medians of {captures} ncu captures", metrics)
    if fmt is None:
        _show_event_latency(method, float(table["duration_us"].sum()), latency_from)


def _record_bytes(table, describe: Path) -> None:
    """Keep the measured DRAM bytes per call, so compare shows GB/s from them on this setup."""
    if READ in table and WRITE in table and describe.is_file():
        nbytes = int(table[READ].sum() + table[WRITE].sum())
        record_bytes(json.loads(describe.read_text())["key"], nbytes)
        console.print(f"[dim]DRAM bytes per call {nbytes:,} recorded: kprof compare reports GB/s from them[/]")


def _show_event_latency(method: str, ncu_sum_us: float, result_path: str) -> None:
    """The NCU duration sum next to the same method's event-timed median from a compare Result."""
    from kprof.results.result import load_result

    if not Path(result_path).exists():
        console.print(f"[dim]no compare Result at {result_path}: run `kprof compare --method {method}` for the "
                      "event-timed latency to set beside the NCU sum[/]")
        return
    res = load_result(result_path)
    if method not in res.summaries:
        console.print(f"[dim]{result_path} has no '{method}' run; pass --latency-from RESULT[/]")
        return
    event_us = res.summaries[method].median_us.estimate
    console.print(f"{method}: sum of NCU durations {ncu_sum_us:.2f} us vs event-timed median {event_us:.2f} us "
                  f"({res.workload.get('name')}, {result_path}); ratio {ncu_sum_us / event_us:.2f}")


@ncu.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--metric", "extra", multiple=True, help="Extra metric column to show (repeatable).")
@_format_options
def import_(files, extra, fmt) -> None:
    """Read ncu output made elsewhere: CSV (--page raw or details) or .ncu-rep (needs ncu here)."""
    from kprof.ncu.parse import read_ncu_csv
    from kprof.ncu.run import import_report

    for f in files:
        df = import_report(Path(f)) if f.endswith(".ncu-rep") else read_ncu_csv(f)
        _emit(df, fmt, f, list(extra))
