"""An interval for the mean of a series whose consecutive values are correlated.

On a GPU methods drift on their own over stretches of rounds, so consecutive pair-cycle values
are not independent and an interval that treats them so is too narrow (half the nominal
coverage in simulation). kprof uses the equal-weighted cosine (EWC) estimator of the long-run
variance with fixed-b critical values, as recommended by Lazarus, Lewis, Stock and Watson
(2018, "HAR inference: recommendations for practice"): project the series on the first K
cosines, average their squares, and take Student-t quantiles with K degrees of freedom, which
are exact for independent normal values and stay close under smooth dependence. K grows with
the series as ``0.4 n^(2/3)`` (at least 2), so short runs are robust and long runs precise.

No within-run interval can see drift slower than the run itself: a run of 10 rounds whose
methods wander with a per-round autocorrelation of 0.9 is covered about 70% of the time (the
calibration table in ``docs/statistics.md``); the Result's lag-1 autocorrelation says when a run
is in that regime, and ``--precision`` runs until the interval is narrow enough.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

EWC = "interval robust to drift (equal-weighted cosine long-run variance, docs/statistics.md)"
MIN_VALUES = 5


@dataclass(frozen=True)
class LongRunMean:
    """Mean of a series with its standard error under dependence and the t degrees of freedom."""

    mean: float
    se: float
    df: int
    n: int
    lag1: float  # lag-1 autocorrelation of the series (NaN below 3 values)

    def half_width(self, level: float) -> float:
        from scipy import stats as sps  # on use: reading a Result needs no scipy

        return float(sps.t.ppf(1 - (1 - level) / 2, self.df)) * self.se


def cosines(n: int) -> int:
    """K, the number of cosine terms for a series of ``n`` values."""
    return int(min(n - 1, max(2, round(0.4 * n ** (2 / 3)))))


def lag1(x: np.ndarray) -> float:
    if x.size < 3 or np.ptp(x) == 0:
        return math.nan
    d = x - x.mean()
    return float(np.sum(d[1:] * d[:-1]) / np.sum(d * d))


def long_run_mean(values) -> LongRunMean | None:
    """The EWC estimate for the finite values in run order; None below ``MIN_VALUES``."""
    x = np.asarray(values, dtype=np.float64)
    x = x[np.isfinite(x)]
    n = x.size
    if n < MIN_VALUES:
        return None
    k = cosines(n)
    t = (np.arange(n) + 0.5) / n
    basis = math.sqrt(2) * np.cos(np.pi * np.arange(1, k + 1)[:, None] * t[None, :])  # [K, n]
    proj = basis @ (x - x.mean()) / math.sqrt(n)
    omega = float(np.mean(proj**2))
    return LongRunMean(float(x.mean()), math.sqrt(omega / n), k, n, lag1(x))
