"""Observations of one timed row -> its Summary (estimate, interval, spread, noise, drift)."""

from __future__ import annotations

import numpy as np

from kprof.protocol import TimingProtocol
from kprof.results import Summary
from kprof.stats import bootstrap_median, drift, round_medians, round_noise


def summarize(observations: np.ndarray, protocol: TimingProtocol) -> Summary:
    medians = round_medians(observations)
    return Summary(
        median_us=bootstrap_median(observations, protocol.bootstrap_resamples, protocol.level, protocol.seed),
        round_median_min_us=float(medians.min()),
        round_median_max_us=float(medians.max()),
        noise=float(np.median(round_noise(observations))),
        drift=drift(medians),
        round_medians_us=[float(m) for m in medians],
    )
