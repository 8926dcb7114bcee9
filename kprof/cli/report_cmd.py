"""``kprof report``: render stored Results as tables, markdown, CSV or plots."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kprof.cli.console import console

PICTURES = (".png", ".pdf", ".svg")


@click.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--markdown", "fmt", flag_value="markdown", help="Markdown tables (paper/PR ready).")
@click.option("--csv", "fmt", flag_value="csv", help="CSV, one row per timed row of every Result.")
@click.option("--json", "fmt", flag_value="json",
              help="JSON for machines: one object per timed row of every Result (the CSV's columns).")
@click.option("--plot", type=click.Path(dir_okay=False), default=None,
              help="Also write a picture (.png, .pdf or .svg, replaced if it exists): round means (drift) and "
                   "speedups with intervals, or stage medians.")
def report(results, fmt, plot) -> None:
    """Render stored Results (runs/*.json): terminal tables by default."""
    from kprof.results.export import to_csv, to_markdown
    from kprof.results.result import load_result
    from kprof.results.tables import compare_table, stages_table

    if plot:  # a place that cannot take the picture is refused before anything is read or drawn
        from kprof.commands.preflight import check_out_file
        from kprof.core.errors import UsageError

        if Path(plot).suffix.lower() not in PICTURES:
            raise UsageError(f"--plot {plot}: name a picture file ending in {', '.join(PICTURES)}")
        check_out_file(plot, force=True, option="--plot")
    loaded = [load_result(p) for p in results]
    if fmt == "markdown":
        click.echo("\n".join(to_markdown(r) for r in loaded))
    elif fmt == "json":
        rows = [{k: None if v == "" else v for k, v in row.items()} for r in loaded for row in r.rows()]
        click.echo(json.dumps(rows, indent=2, allow_nan=False))
    elif fmt == "csv":
        click.echo(to_csv(loaded), nl=False)
    else:
        for r in loaded:
            console.print(compare_table(r) if r.kind == "compare" else stages_table(r))
            for n in r.notes:
                console.print(f"[yellow]note:[/] {n}")
    if plot:
        from kprof.results.plots import plot_results

        console.print(f"plot written to {plot_results(loaded, plot)}")
