"""Stop a paired run as soon as every interval is as precise as asked.

``--precision 0.5%`` runs whole design cycles and *looks* at the intervals at a fixed schedule:
first when every pair has ``MIN_CYCLES`` pair cycles, then each time the rounds have grown by
half. It stops at the first look where every speedup interval (or, for one method, its latency
interval) has a relative half-width at most the target, or when ``max_time_s`` of timing has
passed (and says so).

Stopping on the data selects runs whose variance estimate happened to be small, which would
narrow the stopped interval below its level. kprof spends the error over looks: every interval
of a stopped run is computed at ``look_level`` (97.5% for a 95% target), which simulation shows
brings the stopped interval back to about its nominal coverage under the drift, position and
outlier effects of ``tests/measure/calibration.py`` (``docs/statistics.md``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kprof.measure.protocol import LOOK_SPEND
from kprof.measure.stats import MIN_CYCLES, judged_intervals, round_table

GROWTH = 1.5  # each look comes once the rounds have grown by this factor


def look_level(level: float) -> float:
    """The level every interval of a precision-stopped run is computed at."""
    return 1 - (1 - level) / LOOK_SPEND


@dataclass
class Look:
    """What one look saw: the rounds so far, the widest relative half-width (None: some
    interval is missing) and whether the target is met."""

    rounds: int
    worst: float | None
    done: bool


class PrecisionStop:
    """The stopping rule of a paired run: ``next_look(rounds)`` and ``look(observations, ...)``.

    ``pairs`` are the (baseline row, candidate row) speedups that must be precise; with none,
    every row's latency must be.
    """

    name = "precision"

    def __init__(self, target: float, pairs: list[tuple[int, int]], level: float, max_time_s: float):
        if not 0 < target < 0.5 or math.isnan(target):
            raise ValueError(f"precision must lie in (0, 50%), got {target}")
        self.target, self.pairs, self.level, self.max_time_s = target, list(pairs), look_level(level), max_time_s
        self.looks: list[Look] = []

    def first_look(self, design) -> int:
        """Rounds (whole design cycles) at which every pair first has ``MIN_CYCLES`` pair cycles."""
        return design.default_rounds(min_rounds=design.cycle, min_pair_cycles=MIN_CYCLES) if self.pairs else \
            design.whole_cycles(MIN_CYCLES * design.cycle)

    @staticmethod
    def next_look(rounds: int, cycle: int) -> int:
        grown = max(math.ceil(rounds * GROWTH), rounds + cycle)
        return -(-grown // cycle) * cycle

    def look(self, observations: np.ndarray, orders: list[tuple[int, ...]], cycle: int,
             throttled=None) -> Look:
        """Judge the rounds so far (``observations[i, r, j]``)."""
        ivs = judged_intervals(round_table(observations, throttled, orders), orders, cycle, self.pairs, self.level)
        widths = [iv.half_width_rel for iv in ivs]
        worst = None if any(w is None for w in widths) else max(widths)
        look = Look(observations.shape[1], worst, worst is not None and worst <= self.target)
        self.looks.append(look)
        return look

    def notes(self, elapsed_s: float, interrupted: bool = False) -> list[str]:
        """What the run's last look found, for the Result's notes."""
        last = self.looks[-1]
        target = f"+-{100 * self.target:g}%"
        if interrupted and not last.done:
            return [f"precision {target} not reached: stopped by Ctrl-C after {last.rounds} rounds at the last look"]
        if last.done:
            return [f"precision {target} reached after {last.rounds} rounds ({len(self.looks)} looks; "
                    f"intervals at {100 * self.level:g}% per look, so the stopped one covers about 95%)"]
        worst = "some speedup has no interval" if last.worst is None else f"the widest is +-{100 * last.worst:.2f}%"
        first = self.looks[0].rounds
        return [f"precision {target} NOT reached after {last.rounds} rounds and {elapsed_s:.1f} s of timing "
                f"(--max-time {self.max_time_s:g} s, checked at each look; the first comes after {first} rounds, "
                f"the fewest that give every interval): {worst}; raise --max-time or relax --precision"]
