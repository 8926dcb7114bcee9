"""Shared rich consoles: tables to stdout, diagnostics to stderr (so --json stays clean).

Rich assumes 80 columns when output is not a terminal (CI logs, pipes, files), which would
squeeze result tables until columns vanish; such output gets 160 columns instead.
"""

import contextlib
import os
import sys
import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.progress import Progress as RichProgress

_PIPE_WIDTH = 160
_MIN_WIDTH = 40  # below this rich drops whole messages (at COLUMNS=0, every error line)


def _width(stream) -> int | None:
    columns = os.environ.get("COLUMNS", "")
    if columns.strip().isdigit():
        return max(int(columns), _MIN_WIDTH)
    if hasattr(stream, "isatty") and stream.isatty():
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


LONG_RUN_S = 120  # after the first round, a run expected to last longer than this says so


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


@contextlib.contextmanager
def measurement_progress():
    """Progress of a measurement on stderr (stdout keeps the table, or the JSON of ``--json``): a
    status line per phase, then a bar over rounds with an ETA on a terminal, or one plain line per
    round with elapsed time and ETA elsewhere (CI logs, pipes). After the first round, a run that
    will take over two minutes says so."""
    from kprof.commands.session import Progress  # the measurement observer the commands take

    live = err_console.is_terminal
    bar = RichProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                       TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(), console=err_console,
                       disable=not live, transient=True)
    state = {}

    def status(msg: str) -> None:
        err_console.print(f"[dim]• {msg}[/]", highlight=False)

    def start(total: int) -> None:
        state.update(task=bar.add_task("rounds", total=total), total=total, t0=time.monotonic())

    def done(r: int) -> None:
        bar.advance(state["task"])
        elapsed = time.monotonic() - state["t0"]
        remaining = elapsed / (r + 1) * (state["total"] - r - 1)
        if r == 0 and remaining > LONG_RUN_S:
            err_console.print(f"[yellow]this run will take about {_duration(elapsed + remaining)} "
                              f"({state['total']} rounds at {_duration(elapsed)} each); Ctrl-C stops it[/]",
                              highlight=False)
        if not live:
            err_console.print(f"round {r + 1}/{state['total']} done, {_duration(elapsed)} elapsed, "
                              f"eta {_duration(remaining)}", highlight=False)

    with bar:
        yield Progress(status, start, done)
