"""Statistics of paired-round measurements.

Observations are arrays ``[rounds, observations]`` in microseconds. A method's latency is the
median of its round medians, with a distribution-free interval from the order statistics of the
round medians.

A speedup ``baseline / candidate`` is built from per-round log ratios of round medians (drift
shared by the round cancels there), averaged within each *pair cycle*: a group of rounds over
which the two methods' positions balance (:mod:`kprof.measure.design`), so position and carry-over
effects cancel too. The estimate is the Hodges-Lehmann estimate of the pair-cycle values and
the interval the Wilcoxon signed-rank interval, exact for symmetric cycle values whatever their
distribution. Below five pair cycles there is no interval. ``tests/test_stats_calibration.py``
simulates sessions with drift, position, carry-over and outlier rounds and checks the coverage.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.stats import binom

from kprof.measure.design import pair_cycles

MIN_CYCLES = 5
SIGNED_RANK = "Hodges-Lehmann estimate, Wilcoxon signed-rank interval over pair cycles"
CYCLE_BOOTSTRAP = "Hodges-Lehmann estimate, percentile bootstrap over pair cycles"
ORDER_STATISTICS = "median of round medians, order-statistic interval"
BAD_LIMIT = 0.01  # more bad observations than this share of a method's fails the run


@dataclass(frozen=True)
class Interval:
    """A point estimate and, when there were enough rounds, an interval.

    ``coverage`` is the interval's exact coverage under the method's assumptions (the nominal
    ``level`` is not always reachable with few cycles); ``n`` is the number of values it rests
    on (pair cycles, or rounds); ``note`` says why there is no interval.
    """

    estimate: float
    low: float | None
    high: float | None
    level: float = 0.95
    method: str = ""
    n: int = 0
    coverage: float | None = None
    note: str = ""

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
    """Whether round medians trend: early rounds slower is the classic warm-up/clock-ramp symptom."""

    first_rounds_ratio: float  # median of the first rounds / median of the rest
    trend_pct_per_round: float  # least-squares slope of round medians, % of the estimate per round
    flagged: bool
    note: str


# ---------------------------------------------------------------- observations and round medians


def bad_mask(observations: np.ndarray) -> np.ndarray:
    """Observations that cannot be durations: not finite, zero or negative."""
    obs = np.asarray(observations, dtype=np.float64)
    return ~np.isfinite(obs) | (obs <= 0)


def clean(observations: np.ndarray) -> tuple[np.ndarray, int]:
    """The observations with bad ones replaced by NaN, and how many there were."""
    obs = np.array(observations, dtype=np.float64)
    if obs.ndim != 2 or obs.shape[0] < 1 or obs.shape[1] < 1:
        raise ValueError(f"observations must be [rounds, observations], got shape {obs.shape}")
    bad = bad_mask(obs)
    obs[bad] = np.nan
    return obs, int(bad.sum())


def round_medians(observations: np.ndarray) -> np.ndarray:
    """Median of each round's good observations (NaN for a round with none)."""
    obs, _ = clean(observations)
    out = np.full(obs.shape[0], np.nan)
    good = ~np.all(np.isnan(obs), axis=1)
    out[good] = np.nanmedian(obs[good], axis=1)
    return out


def median_of_medians(observations: np.ndarray) -> float:
    m = round_medians(observations)
    m = m[np.isfinite(m)]
    return float(np.median(m)) if m.size else math.nan


def round_noise(observations: np.ndarray) -> np.ndarray:
    """Robust coefficient of variation per round: 1.4826 * MAD / median (NaN for an empty round)."""
    obs, _ = clean(observations)
    out = np.full(obs.shape[0], np.nan)
    for r, row in enumerate(obs):
        row = row[np.isfinite(row)]
        if row.size:
            med = np.median(row)
            out[r] = 1.4826 * np.median(np.abs(row - med)) / med
    return out


# ---------------------------------------------------------------- intervals


@lru_cache(maxsize=256)
def _signed_rank_cdf(n: int) -> np.ndarray:
    """P(W+ <= w) for w = 0 .. n(n+1)/2 under the null (exact, by the counting recursion)."""
    p = np.zeros(n * (n + 1) // 2 + 1)
    p[0] = 1.0
    for k in range(1, n + 1):
        shifted = np.zeros_like(p)
        shifted[k:] = p[:-k]
        p = (p + shifted) / 2
    return np.cumsum(p)


def _cut(n_sorted: int, tail, level: float) -> tuple[int, float]:
    """The largest cut k (0-based order statistics k and n-1-k) whose coverage 1 - 2 tail(k)
    reaches ``level``; k = 0 (the widest, with its lower coverage) when none does."""
    best = (0, 1 - 2 * tail(0))
    for k in range(0, (n_sorted - 1) // 2 + 1):
        coverage = 1 - 2 * tail(k)
        if coverage < level:
            break
        best = (k, coverage)
    return best


def signed_rank_interval(values, level: float = 0.95, min_n: int = MIN_CYCLES) -> Interval:
    """Hodges-Lehmann estimate with the Wilcoxon signed-rank interval (in the values' own units).

    The interval is the order statistics of the Walsh averages that the signed-rank test's null
    distribution picks; its coverage is exact for independent values from any continuous
    distribution symmetric about its centre. Below ``min_n`` values: the estimate only.
    """
    x = np.asarray(values, dtype=np.float64)
    x = x[np.isfinite(x)]
    n = x.size
    if n == 0:
        return Interval(math.nan, None, None, level, SIGNED_RANK, 0, note="no complete pair cycle")
    i, j = np.triu_indices(n)
    walsh = np.sort((x[i] + x[j]) / 2)
    estimate = float(np.median(walsh))
    if n < min_n:
        return Interval(estimate, None, None, level, SIGNED_RANK, n,
                        note=f"too few rounds for an interval ({n} pair cycles, need {min_n})")
    if n <= 300:
        cdf = _signed_rank_cdf(n)

        def tail(w: int) -> float:
            return 0.0 if w < 0 else float(cdf[w])
    else:  # normal approximation with continuity correction
        mean, sd = n * (n + 1) / 4, math.sqrt(n * (n + 1) * (2 * n + 1) / 24)

        def tail(w: int) -> float:
            return 0.5 * math.erfc(-((w + 0.5 - mean) / sd) / math.sqrt(2)) if w >= 0 else 0.0
    k, coverage = _cut(walsh.size, tail, level)
    low, high = walsh[k], walsh[walsh.size - 1 - k]
    return Interval(estimate, float(low), float(high), level, SIGNED_RANK, n, float(coverage))


def median_interval(values, level: float = 0.95, min_n: int = MIN_CYCLES) -> Interval:
    """Median with the distribution-free interval from order statistics (binomial, exact for
    independent draws of any continuous distribution)."""
    x = np.sort(np.asarray(values, dtype=np.float64))
    x = x[np.isfinite(x)]
    n = x.size
    if n == 0:
        return Interval(math.nan, None, None, level, ORDER_STATISTICS, 0, note="no round with a valid observation")
    estimate = float(np.median(x))
    if n < min_n:
        return Interval(estimate, None, None, level, ORDER_STATISTICS, n,
                        note=f"too few rounds for an interval ({n}, need {min_n})")
    cdf = binom.cdf(np.arange(n + 1), n, 0.5)

    def tail(w: int) -> float:
        return 0.0 if w < 0 else float(cdf[w])

    k, coverage = _cut(n, tail, level)
    return Interval(estimate, float(x[k]), float(x[n - 1 - k]), level, ORDER_STATISTICS, n, float(coverage))


def latency(observations: np.ndarray, level: float = 0.95) -> Interval:
    """One method's median of round medians (us) with its order-statistic interval."""
    return median_interval(round_medians(observations), level)


def log_ratios(baseline_rounds: np.ndarray, candidate_rounds: np.ndarray) -> np.ndarray:
    """Per-round ``log(baseline median / candidate median)``; NaN where a round has no valid data."""
    b, c = round_medians(baseline_rounds), round_medians(candidate_rounds)
    if b.shape != c.shape:
        raise ValueError(f"paired data needs the same rounds: {b.shape[0]} vs {c.shape[0]}")
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.log(b) - np.log(c)


def cycle_values(ratios: np.ndarray, groups: list[tuple[int, ...]]) -> np.ndarray:
    """Mean per-round log ratio of each pair cycle; a cycle with a round without data is dropped."""
    vals = [float(np.mean(ratios[list(g)])) for g in groups]
    return np.array([v for v in vals if math.isfinite(v)])


def _exp(iv: Interval) -> Interval:
    def exp(v: float | None) -> float | None:
        return None if v is None else math.exp(v)

    return Interval(math.exp(iv.estimate) if math.isfinite(iv.estimate) else math.nan, exp(iv.low), exp(iv.high),
                    iv.level, iv.method, iv.n, iv.coverage, iv.note)


def speedup_from_cycles(values: np.ndarray, level: float = 0.95, interval: str = "signed-rank",
                        resamples: int = 10_000, seed: int = 0) -> Interval:
    """The speedup from pair-cycle log ratios: the signed-rank interval, or a cycle bootstrap."""
    if interval == "signed-rank":
        return _exp(signed_rank_interval(values, level))
    if interval != "bootstrap":
        raise ValueError(f"interval must be 'signed-rank' or 'bootstrap', got {interval!r}")
    x = np.asarray(values, dtype=np.float64)
    iv = signed_rank_interval(x, level)
    if not iv.has_interval:
        return _exp(iv)
    rng = np.random.default_rng(seed)
    i, j = np.triu_indices(x.size)
    hl = np.empty(resamples)
    block = max(1, 2_000_000 // len(i))  # bounded memory: resamples x n^2/2 Walsh averages in blocks
    for start in range(0, resamples, block):
        samples = x[rng.integers(0, x.size, size=(min(block, resamples - start), x.size))]
        hl[start:start + len(samples)] = np.median((samples[:, i] + samples[:, j]) / 2, axis=1)
    tail = (1 - level) / 2
    low, high = np.quantile(hl, [tail, 1 - tail])
    return _exp(Interval(iv.estimate, float(low), float(high), level, CYCLE_BOOTSTRAP, x.size))


def paired_speedup(baseline_rounds: np.ndarray, candidate_rounds: np.ndarray, orders: list[tuple[int, ...]],
                   baseline: int, candidate: int, cycle: int, level: float = 0.95) -> Interval:
    """Speedup ``baseline / candidate`` of two methods timed in the same rounds of a design:
    ``orders[r]`` is round r's order of method indices, ``cycle`` the design's cycle length."""
    ratios = log_ratios(baseline_rounds, candidate_rounds)
    groups = pair_cycles(orders, baseline, candidate, cycle)
    return speedup_from_cycles(cycle_values(ratios, groups), level)


def paired_bootstrap(baseline_rounds: np.ndarray, candidate_rounds: np.ndarray, *, baseline_first=None,
                     resamples: int = 10_000, level: float = 0.95, seed: int = 0,
                     interval: str = "signed-rank") -> Interval:
    """Speedup ``baseline / candidate`` of two methods timed in the same rounds (stable API).

    Inputs are ``[rounds, observations]``. ``baseline_first[r]`` says whether the baseline went
    first in round r (``None``: alternating, baseline first in round 0). The i-th baseline-first
    round and the i-th candidate-first round form a pair cycle; the result is the speedup from
    :func:`speedup_from_cycles` (``interval="bootstrap"`` uses ``resamples`` and ``seed``).
    """
    ratios = log_ratios(baseline_rounds, candidate_rounds)
    n = ratios.size
    first = (np.arange(n) % 2 == 0) if baseline_first is None else np.asarray(baseline_first, dtype=bool)
    if first.shape != (n,):
        raise ValueError(f"baseline_first needs one flag per round ({n}), got {first.shape}")
    groups = list(zip(np.flatnonzero(first).tolist(), np.flatnonzero(~first).tolist()))
    return speedup_from_cycles(cycle_values(ratios, groups), level, interval, resamples, seed)


def position_effect(baseline_rounds: np.ndarray, candidate_rounds: np.ndarray, baseline_first) -> float:
    """How much higher the ratio is in rounds where the baseline precedes the candidate, minus 1.

    0 means the order within a round does not matter. The balanced design cancels such an effect
    in the estimate; this number shows it is there.
    """
    ratios = log_ratios(baseline_rounds, candidate_rounds)
    first = np.asarray(baseline_first, dtype=bool)
    a, b = ratios[first], ratios[~first]
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if not a.size or not b.size:
        return 0.0
    return float(math.exp(np.median(a) - np.median(b)) - 1)


def drift(medians: np.ndarray, first: int = 2, threshold: float = 0.05) -> DriftReport:
    """Flag round medians whose first rounds are > ``threshold`` slower, or that trend over rounds."""
    m = np.asarray(medians, dtype=np.float64)
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
        notes.append(f"round medians trend {slope:+.2f}%/round")
    return DriftReport(ratio, slope, bool(notes), "; ".join(notes) or "no drift")
