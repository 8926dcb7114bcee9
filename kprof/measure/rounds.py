"""From a round's observations to one number, and which rounds are bad.

A round's summary is its *fenced mean*: the mean of the observations that lie within
``[Q1 - w, Q3 + w]``, ``w = max(3 IQR, 2% of the median)`` (Tukey's far-out fences with a floor).
The mean, not the median: CUDA events tick every 32 ns, so a median of a 4 us kernel sits on
that grid and two steady kernels give the same log ratio round after round; a mean of many
ticks lands between them, unbiased when the timer's phase is random. The fences drop spikes
(a pre-empted call) without trimming real spread; the floor keeps a round whose middle half
sits on one tick from fencing off the neighbouring ticks.

A *bad round* of a method is one whose log summary is far from its neighbours: more than
``BAD_ROUND_K`` robust deviations (and at least ``BAD_ROUND_FLOOR``) from the running median of
the method's rounds (window of 5). The running median follows drift and steps; a throttled or
pre-empted round stands out. Rounds NVML saw throttled are bad for every method, unless most
rounds were (a GEMM at the power limit throttles in every round: that is what it costs). Bad
rounds are left out of intervals and counted, never silently.
"""

from __future__ import annotations

import warnings

import numpy as np

FENCE_IQR = 3.0
FENCE_FLOOR = 0.02
BAD_ROUND_K = 6.0
BAD_ROUND_FLOOR = 0.03  # log units: a round 3% off is never called bad, whatever the method's steadiness
BAD_ROUND_MAX_SHARE = 0.2  # more rounds than this flagged: that is the method's behaviour, not bad rounds
WINDOW = 5


def bad_mask(observations: np.ndarray) -> np.ndarray:
    """Observations that cannot be durations: not finite, zero or negative."""
    obs = np.asarray(observations, dtype=np.float64)
    return ~np.isfinite(obs) | (obs <= 0)


def clean(observations: np.ndarray) -> tuple[np.ndarray, int]:
    """The observations ``[rounds, observations]`` with bad ones replaced by NaN, and how many there were."""
    obs = np.array(observations, dtype=np.float64)
    if obs.ndim != 2 or obs.shape[0] < 1 or obs.shape[1] < 1:
        raise ValueError(f"observations must be [rounds, observations], got shape {obs.shape}")
    bad = bad_mask(obs)
    obs[bad] = np.nan
    return obs, int(bad.sum())


def fenced_mean(observations: np.ndarray) -> np.ndarray:
    """The fenced mean along the last axis (any leading shape); NaN where nothing is valid."""
    obs = np.array(observations, dtype=np.float64)
    obs[bad_mask(obs)] = np.nan
    out = np.full(obs.shape[:-1], np.nan)
    valid = ~np.all(np.isnan(obs), axis=-1)
    if not valid.any():
        return out
    x = obs[valid]
    q1, med, q3 = np.nanquantile(x, [0.25, 0.5, 0.75], axis=-1)
    w = np.maximum(FENCE_IQR * (q3 - q1), FENCE_FLOOR * med)
    inside = (x >= (q1 - w)[..., None]) & (x <= (q3 + w)[..., None])
    out[valid] = np.nansum(np.where(inside, x, 0.0), axis=-1) / np.maximum(inside.sum(axis=-1), 1)
    return out


def round_summaries(observations: np.ndarray) -> np.ndarray:
    """One fenced mean per round of ``[rounds, observations]`` (NaN for a round without valid data)."""
    obs, _ = clean(observations)
    return fenced_mean(obs)


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


def running_median(x: np.ndarray, window: int = WINDOW) -> np.ndarray:
    """Centred running median over the last axis, ignoring NaN, the window shrinking at the ends."""
    x = np.asarray(x, dtype=np.float64)
    half, n = window // 2, x.shape[-1]
    flat = x.reshape(-1, n)
    out = np.full(flat.shape, np.nan)
    for r in range(n):
        part = flat[:, max(0, r - half): r + half + 1]
        ok = ~np.all(np.isnan(part), axis=1)
        out[ok, r] = np.nanmedian(part[ok], axis=1)
    return out.reshape(x.shape)


def bad_rounds(log_summaries: np.ndarray, throttled: np.ndarray | None = None,
               positions: np.ndarray | None = None) -> np.ndarray:
    """Flags ``[..., methods, rounds]`` of bad (method, round)s from log round summaries.

    A round without a summary (NaN) is flagged too. ``throttled[r]`` flags round r for every
    method. ``positions[i, r]`` (the method's place in round r's order) lets a position effect
    the design balances count as what it is: each position's typical deviation is taken out first.
    """
    y = np.asarray(log_summaries, dtype=np.float64)
    flags = np.isnan(y)
    if y.shape[-1] >= 3:
        with warnings.catch_warnings():  # a row without any summary has no scale: it is all flagged above
            warnings.simplefilter("ignore", RuntimeWarning)
            dev = y - running_median(y)
            if positions is not None:
                pos = np.broadcast_to(np.asarray(positions), y.shape)
                for p in np.unique(pos):
                    at = pos == p
                    typical = np.nanmedian(np.where(at, dev, np.nan), axis=-1, keepdims=True)
                    dev = np.where(at, dev - np.nan_to_num(typical), dev)
            scale = 1.4826 * np.nanmedian(np.abs(dev), axis=-1, keepdims=True)
        limit = np.maximum(BAD_ROUND_K * np.nan_to_num(scale), BAD_ROUND_FLOOR)
        far = np.abs(np.nan_to_num(dev)) > limit
        too_many = far.sum(axis=-1, keepdims=True) > BAD_ROUND_MAX_SHARE * y.shape[-1]
        flags |= far & ~too_many
    if throttled is not None:
        hot = np.asarray(throttled, dtype=bool)
        if hot.sum() <= BAD_ROUND_MAX_SHARE * hot.size:  # most rounds throttled: that is the work's steady state
            flags |= hot
    return flags


def positions_of(orders: list[tuple[int, ...]], methods: int) -> np.ndarray:
    """``[methods, rounds]``: each method's place in each round's order."""
    return np.array([[o.index(i) for o in orders] for i in range(methods)]).reshape(methods, len(orders))
