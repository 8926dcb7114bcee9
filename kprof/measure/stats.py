"""Statistics of paired-round measurements: latencies and speedups with intervals.

Observations are ``[rounds, observations]`` per method, in microseconds. Each round becomes one
fenced mean (:mod:`kprof.measure.rounds`), bad rounds are flagged and left out, and everything
else works on log round summaries.

A speedup ``baseline / candidate`` is the mean over *pair cycles* (groups of rounds over which
the two methods' positions balance, :mod:`kprof.measure.design`) of the mean per-round log
ratio: drift shared by a round cancels in each ratio, position and carry-over effects within
each cycle. A method's latency is the mean over design cycles of its log round summaries. Both
intervals treat their values as a dependent series (:mod:`kprof.measure.har`): methods drift
on their own. Below five values there is no interval; a series that does not vary (the timer
cannot resolve the ratio) gets none either, and says so. Calibration: ``docs/statistics.md``,
rerun with ``python -m tests.measure.calibration``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kprof.measure.design import pair_cycles, precedes
from kprof.measure.har import EWC, MIN_VALUES, long_run_mean
from kprof.measure.rounds import bad_rounds, clean, positions_of, round_noise, round_summaries

MIN_CYCLES = MIN_VALUES
SPEEDUP = f"mean of pair-cycle log ratios, {EWC}"
LATENCY = f"mean of log round means over Latin squares of the design, {EWC}"
BAD_LIMIT = 0.01  # more bad observations than this share of a method's fails the run

__all__ = ["BAD_LIMIT", "Interval", "RoundTable", "clean", "drift", "latency", "paired_speedup", "round_noise",
           "round_summaries", "round_table"]


@dataclass(frozen=True)
class Interval:
    """A point estimate and, when the data allow, an interval.

    ``n`` is the number of values it rests on (pair cycles, design cycles or runs), ``df`` the
    t degrees of freedom of its variance, ``left_out`` the values dropped (a bad or incomplete
    round in them), ``lag1`` the lag-1 autocorrelation of the values (drift that outlasts a few
    rounds shows as a large one), ``note`` why there is no interval.
    """

    estimate: float
    low: float | None
    high: float | None
    level: float = 0.95
    method: str = ""
    n: int = 0
    coverage: float | None = None
    note: str = ""
    df: int | None = None
    left_out: int = 0
    lag1: float | None = None

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    @property
    def half_width_rel(self) -> float | None:
        """Half the interval width relative to the estimate (0.005 = +-0.5%)."""
        if not self.has_interval:
            return None
        return (self.high - self.low) / 2 / self.estimate

    def contains(self, value: float) -> bool:
        return self.has_interval and self.low <= value <= self.high

    def text(self, digits: int = 3, suffix: str = "x") -> str:
        """``1.234x [1.230, 1.238]``, or the estimate and why there is no interval."""
        if not self.has_interval:
            return f"{self.estimate:.{digits}f}{suffix} ({self.note or 'no interval'})"
        return f"{self.estimate:.{digits}f}{suffix} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


@dataclass(frozen=True)
class DriftReport:
    """Whether round summaries trend: early rounds slower is the classic warm-up/clock-ramp symptom."""

    first_rounds_ratio: float  # median of the first rounds / median of the rest
    trend_pct_per_round: float  # least-squares slope of round summaries, % of the estimate per round
    flagged: bool
    note: str


@dataclass(frozen=True)
class RoundTable:
    """Log round summaries ``[methods, rounds]`` and the bad (method, round)s among them."""

    log_summaries: np.ndarray
    bad: np.ndarray

    @property
    def kept(self) -> np.ndarray:
        """Log summaries with bad rounds as NaN."""
        return np.where(self.bad, np.nan, self.log_summaries)


def round_table(observations, throttled=None, orders: list[tuple[int, ...]] | None = None) -> RoundTable:
    """The round table of ``observations[i]`` = method i's ``[rounds, observations]``; ``orders``
    (each round's order of method indices) lets bad rounds be judged net of position effects."""
    rows = [round_summaries(o) for o in observations]
    if len({r.shape for r in rows}) > 1:
        raise ValueError(f"paired data needs the same rounds for every method: {[r.size for r in rows]}")
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.log(np.array(rows, dtype=np.float64).reshape(len(rows), -1))
    positions = positions_of(orders, y.shape[0]) if orders and len(orders) == y.shape[1] else None
    return RoundTable(y, bad_rounds(y, throttled, positions))


# ---------------------------------------------------------------- intervals from series


def log_interval(values, level: float, method: str, left_out: int = 0) -> Interval:
    """``exp`` of the long-run mean of log ``values`` (run order) with its interval."""
    x = np.asarray(values, dtype=np.float64)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return Interval(math.nan, None, None, level, method, 0, note="no complete cycle", left_out=left_out)
    est = long_run_mean(x)
    if est is None:
        dropped = f" after {left_out} left out for a bad round" if left_out else ""
        return Interval(math.exp(float(x.mean())), None, None, level, method, x.size, left_out=left_out,
                        note=f"too few rounds for an interval ({x.size} cycles{dropped}, need {MIN_VALUES})")
    lag = None if math.isnan(est.lag1) else est.lag1
    if np.ptp(x) <= 1e-12:  # every value the same, up to rounding
        return Interval(math.exp(est.mean), None, None, level, method, est.n, df=est.df, left_out=left_out,
                        note="every cycle gave the same value: the timer cannot resolve this ratio")
    hw = est.half_width(level)
    return Interval(math.exp(est.mean), math.exp(est.mean - hw), math.exp(est.mean + hw), level, method, est.n,
                    level, "", est.df, left_out, lag)


def pair_values(table: RoundTable, orders: list[tuple[int, ...]], baseline: int, candidate: int,
                cycle: int) -> tuple[np.ndarray, int]:
    """Mean log ratio ``baseline - candidate`` of each pair cycle in run order, and how many
    cycles were left out for a bad or missing round."""
    y = table.kept
    ratios = y[baseline] - y[candidate]
    groups = pair_cycles(orders, baseline, candidate, cycle)
    values = [float(np.mean(ratios[list(g)])) for g in groups]
    kept = np.array([v for v in values if math.isfinite(v)])
    return kept, len(values) - kept.size


def speedup(table: RoundTable, orders: list[tuple[int, ...]], baseline: int, candidate: int, cycle: int,
            level: float = 0.95) -> Interval:
    """Speedup ``baseline / candidate`` of two rows of a paired run."""
    values, left_out = pair_values(table, orders, baseline, candidate, cycle)
    return log_interval(values, level, SPEEDUP, left_out)


def design_cycle_values(log_summaries: np.ndarray, bad: np.ndarray, cycle: int) -> tuple[np.ndarray, int]:
    """Mean log summary of each group of ``cycle`` consecutive rounds of one method, and how many
    groups were left out for a bad or missing round. With ``cycle`` the number of methods, each
    group is a Latin square of the balanced design: the method held every position once."""
    y = np.where(bad, np.nan, log_summaries)
    whole = y.size // max(cycle, 1) * max(cycle, 1)
    chunks = y[:whole].reshape(-1, max(cycle, 1))
    values = chunks.mean(axis=1)
    kept = values[np.isfinite(values)]
    return kept, values.size - kept.size


def method_latency(table: RoundTable, method: int, cycle: int = 1, level: float = 0.95) -> Interval:
    """One row's latency (us): exp of the mean log summary of groups of ``cycle`` rounds (the
    number of methods in a paired run, so that positions balance), with its interval."""
    values, left_out = design_cycle_values(table.log_summaries[method], table.bad[method], cycle)
    return log_interval(values, level, LATENCY, left_out)


def judged_intervals(table: RoundTable, orders: list[tuple[int, ...]], cycle: int, pairs: list[tuple[int, int]],
                     level: float) -> list[Interval]:
    """What a stopping rule judges: the speedup of every (baseline row, candidate row) pair, or,
    with no pairs, every row's latency."""
    if pairs:
        return [speedup(table, orders, b, c, cycle, level) for b, c in pairs]
    rows = table.log_summaries.shape[0]
    return [method_latency(table, i, rows, level) for i in range(rows)]


def latency(observations: np.ndarray, level: float = 0.95, cycle: int = 1, throttled=None) -> Interval:
    """One method's latency from its own ``[rounds, observations]`` (rounds taken ``cycle`` at a time)."""
    return method_latency(round_table([observations], throttled), 0, cycle, level)


def paired_speedup(baseline_rounds: np.ndarray, candidate_rounds: np.ndarray, orders: list[tuple[int, ...]],
                   baseline: int, candidate: int, cycle: int, level: float = 0.95) -> Interval:
    """Speedup ``baseline / candidate`` from the two rows' observations; ``orders[r]`` is round r's
    order of method indices in the design, ``cycle`` its cycle length."""
    rows = {baseline: baseline_rounds, candidate: candidate_rounds}
    m = len(orders[0]) if orders else 2
    filler = np.full_like(np.asarray(baseline_rounds, dtype=np.float64), np.nan)
    table = round_table([rows.get(i, filler) for i in range(m)], orders=orders)
    return speedup(table, orders, baseline, candidate, cycle, level)


# ---------------------------------------------------------------- diagnostics


def position_effect(table: RoundTable, orders: list[tuple[int, ...]], baseline: int, candidate: int) -> float:
    """How much higher the ratio is in rounds where the baseline precedes the candidate, minus 1.

    0 means the order within a round does not matter. The balanced design cancels such an effect
    in the estimate; this number shows it is there.
    """
    y = table.kept
    ratios = y[baseline] - y[candidate]
    first = np.array([precedes(o, baseline, candidate) for o in orders])
    a, b = ratios[first], ratios[~first]
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if not a.size or not b.size:
        return 0.0
    return float(math.exp(np.median(a) - np.median(b)) - 1)


def drift(summaries: np.ndarray, first: int = 2, threshold: float = 0.05) -> DriftReport:
    """Flag round summaries whose first rounds are > ``threshold`` slower, or that trend over rounds."""
    m = np.asarray(summaries, dtype=np.float64)
    m = m[np.isfinite(m)]
    if m.shape[0] <= first:
        return DriftReport(1.0, 0.0, False, "too few rounds to judge drift")
    est = float(np.median(m))
    ratio = float(np.median(m[:first]) / np.median(m[first:]))
    x = np.arange(m.shape[0], dtype=np.float64)
    slope = float(np.polyfit(x, m, 1)[0]) / est * 100
    total_trend = abs(slope) * (m.shape[0] - 1) / 100
    notes = []
    if ratio > 1 + threshold:
        notes.append(f"first {first} rounds {100 * (ratio - 1):.1f}% slower")
    if total_trend > threshold:
        notes.append(f"round means trend {slope:+.2f}%/round")
    return DriftReport(ratio, slope, bool(notes), "; ".join(notes) or "no drift")
