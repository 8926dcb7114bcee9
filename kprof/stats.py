"""kprof's statistics as a stable public module.

The functions ``kprof compare`` and ``kprof gate`` use, for people who time things their own way:

- :func:`paired_speedup`: the speedup interval of two methods timed in the same rounds of a design;
- :func:`paired_bootstrap`: the same for two methods in alternating (or flagged) rounds, kept
  for existing callers; ``method="bootstrap"`` asks for a moving-block bootstrap instead;
- :func:`latency`: one method's latency with its interval;
- :func:`gate_interval`: the cross-run gate's prediction interval of a run against a history.

Inputs are ``[rounds, observations]`` arrays of times. Every interval is an :class:`Interval`;
how it is made is in ``docs/statistics.md``.
"""

from __future__ import annotations

import math

import numpy as np

from kprof.measure import stats as _stats
from kprof.measure.stats import SPEEDUP, Interval, RoundTable, log_interval, round_table
from kprof.results.gate import prediction_ratio

__all__ = ["Interval", "RoundTable", "gate_interval", "latency", "paired_bootstrap", "paired_speedup",
           "round_table"]

BLOCK_BOOTSTRAP = "mean of pair-cycle log ratios, moving-block bootstrap percentile interval"


def _level(level: float) -> None:
    """A level of 0 or 1 gives an interval of zero or infinite width that still claims to be one."""
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ValueError(f"level={level!r} must lie strictly between 0 and 1, e.g. 0.95")


def latency(observations, level: float = 0.95, cycle: int = 1, throttled=None) -> Interval:
    """One method's latency from its own ``[rounds, observations]`` (rounds taken ``cycle`` at a time)."""
    _level(level)
    return _stats.latency(np.asarray(observations, dtype=np.float64), level, cycle, throttled)


def paired_speedup(baseline_rounds, candidate_rounds, orders: list[tuple[int, ...]], baseline: int, candidate: int,
                   cycle: int, level: float = 0.95) -> Interval:
    """Speedup ``baseline / candidate``; ``orders[r]`` is round r's order of method indices in the
    design (one per round: a shorter list would silently drop rounds), ``cycle`` its cycle length."""
    _level(level)
    rounds = np.shape(baseline_rounds)[0]
    if len(orders) != rounds or np.shape(candidate_rounds)[0] != rounds:
        raise ValueError(f"paired_speedup needs one order per round and the same rounds for both rows: got "
                         f"{len(orders)} orders, {rounds} and {np.shape(candidate_rounds)[0]} rounds")
    return _stats.paired_speedup(np.asarray(baseline_rounds, dtype=np.float64),
                                 np.asarray(candidate_rounds, dtype=np.float64), orders, baseline, candidate, cycle,
                                 level)


def gate_interval(history, history_sd, candidate: float, candidate_sd: float, level: float = 0.95,
                  threshold: float = 0.03) -> tuple[Interval, float]:
    """The cross-run gate's prediction interval of a run's log value against a history of them
    (each with its own standard error), and the smallest regression it catches 9 times in 10."""
    _level(level)
    if len(history) == 0 or len(history) != len(history_sd):
        raise ValueError(f"gate_interval needs at least one history run and one sd per run: got {len(history)} "
                         f"runs and {len(history_sd)} sds")
    return prediction_ratio(np.asarray(history, dtype=np.float64), np.asarray(history_sd, dtype=np.float64),
                            candidate, candidate_sd, level, threshold)


def _block_bootstrap(values: np.ndarray, level: float, resamples: int, seed: int) -> tuple[float, float]:
    """Percentile interval of the mean from a moving-block bootstrap (blocks of about n^(1/3)
    consecutive values keep short-range dependence)."""
    n = values.size
    block = max(1, round(n ** (1 / 3)))
    starts = np.arange(n - block + 1)
    rng = np.random.default_rng(seed)
    per = -(-n // block)
    picks = rng.choice(starts, size=(resamples, per))
    idx = (picks[:, :, None] + np.arange(block)[None, None, :]).reshape(resamples, -1)[:, :n]
    means = values[idx].mean(axis=1)
    tail = (1 - level) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return float(low), float(high)


def paired_bootstrap(baseline_rounds, candidate_rounds, *, baseline_first=None, resamples: int = 10_000,
                     level: float = 0.95, seed: int = 0, method: str = "har") -> Interval:
    """Speedup ``baseline / candidate`` of two methods timed in the same rounds.

    ``baseline_first[r]`` says whether the baseline went first in round r (``None``: alternating,
    baseline first in round 0); the i-th baseline-first round and the i-th candidate-first round
    form a pair cycle. By default the interval is the one ``kprof compare`` gives two methods
    (``method="har"``); ``method="bootstrap"`` uses a moving-block bootstrap of the pair-cycle
    values with ``resamples`` and ``seed``. Rounds without a partner of the other order are
    counted in ``left_out`` and named in ``note``, never silently dropped.
    """
    _level(level)
    base = np.asarray(baseline_rounds, dtype=np.float64)
    cand = np.asarray(candidate_rounds, dtype=np.float64)
    n = base.shape[0] if base.ndim == 2 else 0
    first = (np.arange(n) % 2 == 0) if baseline_first is None else np.asarray(baseline_first, dtype=bool)
    if first.shape != (n,):
        raise ValueError(f"baseline_first needs one flag per round ({n}), got {first.shape}")
    if method not in ("har", "bootstrap"):
        raise ValueError(f"method must be 'har' or 'bootstrap', got {method!r}")
    table = round_table([base, cand], orders=[(0, 1) if f else (1, 0) for f in first])
    groups = list(zip(np.flatnonzero(first).tolist(), np.flatnonzero(~first).tolist()))
    unpaired = n - 2 * len(groups)
    ratios = table.kept[0] - table.kept[1]
    values = np.array([np.mean(ratios[list(g)]) for g in groups])
    kept = values[np.isfinite(values)]
    left_out = values.size - kept.size
    iv = log_interval(kept, level, SPEEDUP if method == "har" else BLOCK_BOOTSTRAP, left_out)
    notes = [iv.note] if iv.note else []
    if unpaired:
        notes.append(f"{unpaired} round(s) had no partner of the other order and were left out")
    if method == "bootstrap" and iv.has_interval:
        low, high = _block_bootstrap(kept, level, resamples, seed)
        iv = Interval(iv.estimate, math.exp(low), math.exp(high), level, BLOCK_BOOTSTRAP, iv.n, None, "", None,
                      left_out, iv.lag1)
    return Interval(iv.estimate, iv.low, iv.high, iv.level, iv.method, iv.n, iv.coverage, "; ".join(notes),
                    iv.df, iv.left_out + unpaired, iv.lag1)
