"""The default fixed-round run that still gives every interval its minimum of usable cycles.

A run without ``--precision`` or ``--rounds`` (the CPU embedded default) has just enough design
cycles for every speedup interval. Bad rounds (:mod:`kprof.measure.rounds`) are left out of the
intervals, and two of them in different cycles leave a speedup with too few pair cycles: the
table would print it without an interval. So after its rounds the run adds whole design cycles
while some speedup (a single row: its latency) lacks ``MIN_CYCLES`` usable cycles, up to twice
its rounds. The rule looks at
which rounds are bad, never at how wide an interval is, so the intervals keep their nominal level
(``tests/measure/calibration.py`` simulates it; ``docs/statistics.md``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kprof.measure.stats import MIN_CYCLES, judged_intervals, round_table

CAP = 2  # at most this many times the default rounds


@dataclass
class Filled:
    """What one look saw: the rounds so far and whether every interval has its cycles."""

    rounds: int
    done: bool


class CompleteCycles:
    """The stopping rule of a default fixed-round run, with :class:`~kprof.measure.precision.PrecisionStop`'s
    interface: ``first_look``, ``look``, ``next_look``, ``notes``. ``pairs`` are the (baseline row,
    candidate row) speedups whose intervals need their usable cycles; with none, every row's latency's."""

    name = "complete cycles"

    max_time_s = math.inf

    def __init__(self, pairs: list[tuple[int, int]], level: float, min_rounds: int, min_pair_cycles: int):
        self.pairs, self.level = list(pairs), level
        self.min_rounds, self.min_pair_cycles = min_rounds, min_pair_cycles
        self.looks: list[Filled] = []
        self.max_rounds = 0

    def first_look(self, design) -> int:
        """The default rounds (as a run without this rule has); the cap is ``CAP`` times them."""
        rounds = design.default_rounds(self.min_rounds, self.min_pair_cycles)
        self.max_rounds = CAP * rounds
        return rounds

    def next_look(self, rounds: int, cycle: int) -> int:
        """One more design cycle, or ``rounds`` itself at the cap (the run then ends)."""
        return rounds + cycle if rounds + cycle <= self.max_rounds else rounds

    def look(self, observations: np.ndarray, orders: list[tuple[int, ...]], cycle: int, throttled=None) -> Filled:
        ivs = judged_intervals(round_table(observations, throttled, orders), orders, cycle, self.pairs, self.level)
        # usable cycles, not "has an interval": cycles that are all equal keep their count and give none
        filled = Filled(observations.shape[1], all(iv.n >= MIN_CYCLES for iv in ivs))
        self.looks.append(filled)
        return filled

    def notes(self, elapsed_s: float, interrupted: bool = False) -> list[str]:
        first, last = self.looks[0], self.looks[-1]
        if last.rounds == first.rounds or interrupted:  # a partial Result says how it ended
            return []
        text = (f"{last.rounds - first.rounds} rounds added to the default {first.rounds}: bad rounds, left out, had "
                f"left some interval with fewer than {MIN_CYCLES} usable cycles")
        short = not last.done and last.rounds >= self.max_rounds
        return [text + (f"; still too few at the cap of {last.rounds} rounds" if short else "")]
