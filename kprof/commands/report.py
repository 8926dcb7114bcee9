"""Showing and keeping Results: the tables of a finished run, ``kprof report``'s formats, and
saving a run's Result. Imports no torch, so that ``kprof report`` answers at once."""

from __future__ import annotations

import json
from pathlib import Path

from kprof.commands.preflight import check_out_file
from kprof.core.errors import UsageError
from kprof.measure.stats import BAD_LIMIT
from kprof.results import export
from kprof.results.rows import over_bad_limit
from kprof.results.schema import Result
from kprof.results.store import check_destination, load_result, missing_result, save_result
from kprof.results.tables import compare_table, extra_speedups, stages_table

PICTURES = (".png", ".pdf", ".svg")

__all__ = ["Result", "bad_observation_error", "check_destination", "check_html", "check_plot", "extra_speedups",
           "load", "save_run", "table", "to_csv", "to_html", "to_json", "to_markdown", "write_plot"]


def load(paths: list[str]) -> list[Result]:
    """Results from files (with their observations, for the plots); a path that does not exist is
    a usage error (exit 2), checked for every path before any is read."""
    for p in paths:
        if not Path(p).exists():
            raise UsageError(missing_result(Path(p)))
    return [load_result(p) for p in paths]


def table(result: Result, width: int | None = None):
    """The terminal table of a Result: the compare table, or the stages (chain) table."""
    render = compare_table if result.kind == "compare" else stages_table
    return render(result) if width is None else render(result, width=width)


def to_markdown(results: list[Result]) -> str:
    return "\n".join(export.to_markdown(r) for r in results)


def to_csv(results: list[Result]) -> str:
    return export.to_csv(results)


def to_json(results: list[Result]) -> str:
    """One JSON object per timed row of every Result (the CSV's columns; null where missing)."""
    return json.dumps(export.all_rows(results), indent=2, allow_nan=False)


def check_plot(path: str) -> None:
    """Refuse, before anything is read or drawn, a picture path that cannot be written."""
    if Path(path).suffix.lower() not in PICTURES:
        raise UsageError(f"--plot {path}: name a picture file ending in {', '.join(PICTURES)}")
    check_out_file(path, force=True, option="--plot")


def check_html(path: str) -> None:
    """Refuse, before anything is read, an HTML path that cannot be written."""
    if Path(path).suffix.lower() not in (".html", ".htm"):
        raise UsageError(f"--html {path}: name a file ending in .html")
    check_out_file(path, force=True, option="--html")


def write_plot(results: list[Result], path: str) -> Path:
    from kprof.results.plots import plot_results  # matplotlib on demand

    return plot_results(results, path)


def to_html(results: list[Result], path: str) -> Path:
    """One self-contained page with every Result's tables, notes and plots, written atomically."""
    from kprof.core.atomic import atomic_write_text
    from kprof.results.html import to_html as page

    atomic_write_text(path, page(results))
    return Path(path)


def save_run(result: Result, out: str | None, force: bool) -> Path:
    """Save a finished run's Result; an ``out`` that appeared during the run is kept, and the
    Result goes beside it (the path returned says where)."""
    return save_result(result, out, force=force, keep_both=True)


def bad_observation_error(result: Result) -> str | None:
    """The one-line failure when a row has more than 1% bad observations, else None."""
    over = over_bad_limit(result, BAD_LIMIT)
    if not over:
        return None
    rows = ", ".join(f"{label} {100 * share:.1f}%" for label, share in over.items())
    return (f"too many bad observations (not finite, zero or negative; limit {100 * BAD_LIMIT:g}% of a row): {rows}. "
            "The timer or the method misbehaved: check `kprof env`, then re-run")
