"""``kprof report``: render stored Results as tables, markdown, CSV, JSON, plots or one HTML page."""

from __future__ import annotations

import click

from kprof.cli.console import console
from kprof.cli.options import one_format


@click.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--markdown", is_flag=True, help="Markdown tables (paper/PR ready), rounded as shown.")
@click.option("--csv", "as_csv", is_flag=True,
              help="CSV, one row per timed row of every Result, every column (empty where missing).")
@click.option("--json", "as_json", is_flag=True,
              help="JSON for machines: one object per timed row of every Result (the CSV's columns, null where "
                   "missing).")
@click.option("--plot", type=click.Path(dir_okay=False), default=None,
              help="Also write a picture (.png, .pdf or .svg, replaced if it exists): round means (drift) and "
                   "speedups with intervals, or stage times.")
@click.option("--html", "html", type=click.Path(dir_okay=False), default=None,
              help="Also write one self-contained HTML page (tables, notes and plots of every Result; replaced "
                   "if it exists), for a pull request or a lab notebook.")
def report(results, markdown, as_csv, as_json, plot, html) -> None:
    """Render stored Results (runs/*.json): terminal tables by default, as wide as the terminal
    allows (columns that do not fit are named under the table)."""
    from kprof.commands import report as use

    fmt = one_format(markdown=markdown, csv=as_csv, json=as_json)

    if plot:  # a place that cannot take the picture is refused before anything is read or drawn
        use.check_plot(plot)
    if html:
        use.check_html(html)
    loaded = use.load(results)
    if fmt == "markdown":
        click.echo(use.to_markdown(loaded))
    elif fmt == "json":
        click.echo(use.to_json(loaded))
    elif fmt == "csv":
        click.echo(use.to_csv(loaded), nl=False)
    else:
        for r in loaded:
            console.print(use.table(r, console.width))
            if r.partial:
                console.print(f"[red]partial result:[/] {r.partial}: less was timed than the run asked for")
            for n in r.notes:
                console.print(f"[yellow]note:[/] {n}", soft_wrap=True)
    if plot:
        console.print(f"plot written to {use.write_plot(loaded, plot)}")
    if html:
        console.print(f"report written to {use.to_html(loaded, html)}")
