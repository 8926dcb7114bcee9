"""Statistics of paired-round measurements (SANTA++ Appendix E).

Observations are arrays ``[rounds, observations]`` in microseconds. A method's estimate is the
median of its round medians. A speedup is ``baseline / candidate`` of those estimates, and its
interval comes from resampling *rounds* with replacement, the same rounds for both methods, so
slow phases shared by both (clock ramps, a noisy neighbour) cancel instead of widening it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Interval:
    """A point estimate with a bootstrap percentile interval."""

    estimate: float
    low: float
    high: float
    level: float = 0.95
    resamples: int = 10_000

    @property
    def half_width_rel(self) -> float:
        """Half the interval width relative to the estimate (0.005 = +-0.5%)."""
        return (self.high - self.low) / 2 / self.estimate

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high


@dataclass(frozen=True)
class DriftReport:
    """Whether round medians trend: early rounds slower is the classic warm-up/clock-ramp symptom."""

    first_rounds_ratio: float  # median of the first rounds / median of the rest
    trend_pct_per_round: float  # least-squares slope of round medians, % of the estimate per round
    flagged: bool
    note: str


def round_medians(observations: np.ndarray) -> np.ndarray:
    obs = np.asarray(observations, dtype=np.float64)
    if obs.ndim != 2 or obs.shape[0] < 1 or obs.shape[1] < 1:
        raise ValueError(f"observations must be [rounds, observations], got shape {obs.shape}")
    return np.median(obs, axis=1)


def median_of_medians(observations: np.ndarray) -> float:
    return float(np.median(round_medians(observations)))


def _percentiles(samples: np.ndarray, level: float) -> tuple[float, float]:
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(samples, [tail, 100 - tail])
    return float(low), float(high)


def _ratio_interval(b: np.ndarray, c: np.ndarray, bi: np.ndarray, ci: np.ndarray, level: float) -> Interval:
    """median(b)/median(c) with the percentile interval of the resampled ratios (rows of bi/ci)."""
    ratios = np.median(b[bi], axis=1) / np.median(c[ci], axis=1)
    low, high = _percentiles(ratios, level)
    return Interval(float(np.median(b) / np.median(c)), low, high, level, bi.shape[0])


def paired_bootstrap(
    baseline_rounds: np.ndarray,
    candidate_rounds: np.ndarray,
    resamples: int = 10_000,
    level: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Speedup ``baseline/candidate`` (medians of round medians) with a paired-round bootstrap interval.

    Both inputs are ``[rounds, observations]`` from the same rounds; each resample draws round
    indices with replacement and applies the same indices to both methods.
    """
    b = round_medians(baseline_rounds)
    c = round_medians(candidate_rounds)
    if b.shape != c.shape:
        raise ValueError(f"paired data needs the same rounds: {b.shape[0]} vs {c.shape[0]}")
    idx = np.random.default_rng(seed).integers(0, b.shape[0], size=(resamples, b.shape[0]))
    return _ratio_interval(b, c, idx, idx, level)


def start_order_effect(baseline: np.ndarray, candidate: np.ndarray, baseline_leads: np.ndarray) -> float:
    """How much faster the baseline/candidate ratio is when the baseline goes first, minus 1.

    ``baseline``/``candidate`` are ``[rounds, observations]`` from the same pairs and
    ``baseline_leads`` a boolean mask of the same shape. 0 means invoking order does not matter.
    Round alternation cancels such an effect in the estimate, but it widens the round-bootstrap
    interval: this number says why an interval is wide.
    """
    ratio = np.asarray(baseline, dtype=np.float64) / np.asarray(candidate, dtype=np.float64)
    lead = np.asarray(baseline_leads, dtype=bool)
    if lead.all() or not lead.any():
        return 0.0
    return float(np.median(ratio[lead]) / np.median(ratio[~lead]) - 1)


def unpaired_bootstrap(
    baseline_rounds: np.ndarray,
    candidate_rounds: np.ndarray,
    resamples: int = 10_000,
    level: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Same ratio, but rounds of each method resampled independently (ignores the pairing).

    For comparison only: it is the right interval for runs that were *not* interleaved, e.g. a
    gate comparing a candidate run with a baseline run from another day.
    """
    b = round_medians(baseline_rounds)
    c = round_medians(candidate_rounds)
    rng = np.random.default_rng(seed)
    bi = rng.integers(0, b.shape[0], size=(resamples, b.shape[0]))
    ci = rng.integers(0, c.shape[0], size=(resamples, c.shape[0]))
    return _ratio_interval(b, c, bi, ci, level)


def bootstrap_median(rounds: np.ndarray, resamples: int = 10_000, level: float = 0.95, seed: int = 0) -> Interval:
    """One method's median of round medians with a round-bootstrap interval (microseconds)."""
    m = round_medians(rounds)
    rng = np.random.default_rng(seed)
    est = np.median(m[rng.integers(0, m.shape[0], size=(resamples, m.shape[0]))], axis=1)
    low, high = _percentiles(est, level)
    return Interval(float(np.median(m)), low, high, level, resamples)


def round_noise(observations: np.ndarray) -> np.ndarray:
    """Robust coefficient of variation per round: 1.4826 * MAD / median."""
    obs = np.asarray(observations, dtype=np.float64)
    med = np.median(obs, axis=1, keepdims=True)
    mad = np.median(np.abs(obs - med), axis=1)
    return 1.4826 * mad / med[:, 0]


def drift(medians: np.ndarray, first: int = 2, threshold: float = 0.05) -> DriftReport:
    """Flag round medians whose first rounds are > ``threshold`` slower, or that trend over rounds."""
    m = np.asarray(medians, dtype=np.float64)
    est = float(np.median(m))
    if m.shape[0] <= first:
        return DriftReport(1.0, 0.0, False, "too few rounds to judge drift")
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
