"""Shared rich consoles: tables to stdout, diagnostics to stderr (so --json stays clean).

Rich assumes 80 columns when output is not a terminal (CI logs, pipes, files), which would
squeeze result tables until columns vanish; such output gets 160 columns instead.
"""

import contextlib
import os
import sys

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.progress import Progress as RichProgress

from kprof.measure.harness import Progress

_PIPE_WIDTH = 160


def _width(stream) -> int | None:
    if "COLUMNS" in os.environ or (hasattr(stream, "isatty") and stream.isatty()):
        return None
    return _PIPE_WIDTH


console = Console(width=_width(sys.stdout))
err_console = Console(stderr=True, width=_width(sys.stderr))


def format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n:.2f} TiB"


@contextlib.contextmanager
def measurement_progress(quiet: bool):
    """Rich progress on stderr: a status line per phase and a bar over rounds with ETA."""
    bar = RichProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                       TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(), console=err_console,
                       disable=quiet, transient=True)
    state = {}

    def status(msg: str) -> None:
        if not quiet:
            err_console.print(f"[dim]• {msg}[/]")

    def start(total: int) -> None:
        state["task"] = bar.add_task("rounds", total=total)

    def done(r: int) -> None:
        bar.advance(state["task"])

    with bar:
        yield Progress(status, start, done)
