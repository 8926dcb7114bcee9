"""Shared rich consoles: tables to stdout, diagnostics to stderr (so --json stays clean)."""

from rich.console import Console

console = Console()
err_console = Console(stderr=True)


def format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n:.2f} TiB"
