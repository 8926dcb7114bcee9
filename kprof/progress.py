"""Progress callbacks a long measurement reports through (the CLI renders them with rich)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass
class Progress:
    status: Callable[[str], None] = lambda msg: None
    start_rounds: Callable[[int], None] = lambda total: None
    round_done: Callable[[int], None] = lambda r: None
