import time

import numpy as np
import pytest

from kprof.stats import (bootstrap_median, drift, median_of_medians, paired_bootstrap, round_medians, round_noise,
                         start_order_effect, unpaired_bootstrap)


def _paired(rng, ratio, rounds=20, obs=200, round_sd=0.05, noise=0.03, mu=50.0):
    shared = np.exp(rng.normal(0, round_sd, rounds))[:, None]
    base = ratio * mu * shared * (1 + noise * rng.standard_normal((rounds, obs)))
    cand = mu * shared * (1 + noise * rng.standard_normal((rounds, obs)))
    return base, cand


def test_estimate_is_ratio_of_medians_of_round_medians():
    base = np.array([[10.0, 11, 12], [20, 21, 22], [30, 31, 32]])
    cand = base / 2
    iv = paired_bootstrap(base, cand, resamples=100)
    assert iv.estimate == pytest.approx(2.0)
    assert median_of_medians(base) == 21.0
    assert list(round_medians(base)) == [11, 21, 31]


@pytest.mark.parametrize("round_sd", [0.0, 0.05])
def test_interval_covers_the_true_ratio_about_95_percent_of_the_time(round_sd):
    rng = np.random.default_rng(123)
    trials, hits = 200, 0
    for t in range(trials):
        base, cand = _paired(rng, 1.7, round_sd=round_sd)
        hits += paired_bootstrap(base, cand, resamples=1000, seed=t).contains(1.7)
    coverage = hits / trials
    assert 0.85 <= coverage <= 1.0, coverage


def test_pairing_narrows_the_interval_under_round_correlated_drift():
    rng = np.random.default_rng(7)
    base, cand = _paired(rng, 1.2, round_sd=0.2)
    paired = paired_bootstrap(base, cand, seed=1)
    unpaired = unpaired_bootstrap(base, cand, seed=1)
    assert paired.contains(1.2)
    assert (paired.high - paired.low) < 0.3 * (unpaired.high - unpaired.low)


def test_bootstrap_is_seeded_and_fast():
    rng = np.random.default_rng(0)
    base, cand = _paired(rng, 1.1, obs=1000)
    t = time.perf_counter()
    a = paired_bootstrap(base, cand, resamples=10_000, seed=3)
    elapsed = time.perf_counter() - t
    assert a == paired_bootstrap(base, cand, resamples=10_000, seed=3)
    assert elapsed < 1.0


def test_mismatched_rounds_are_refused():
    with pytest.raises(ValueError):
        paired_bootstrap(np.ones((3, 4)), np.ones((4, 4)))


def test_drift_flags_slow_first_rounds_and_not_flat_ones():
    flat = np.full(20, 50.0) + np.random.default_rng(0).normal(0, 0.2, 20)
    assert not drift(flat).flagged
    slow_start = flat.copy()
    slow_start[:2] *= 1.5
    d = drift(slow_start)
    assert d.flagged and "first 2 rounds" in d.note and d.first_rounds_ratio > 1.4


def test_round_noise_is_robust_cv():
    rng = np.random.default_rng(2)
    obs = 100 * (1 + 0.02 * rng.standard_normal((5, 5000)))
    assert np.allclose(round_noise(obs), 0.02, rtol=0.1)


def test_single_method_interval_brackets_its_estimate():
    rng = np.random.default_rng(3)
    base, _ = _paired(rng, 1.0)
    iv = bootstrap_median(base, resamples=2000)
    assert iv.low <= iv.estimate <= iv.high


def test_start_order_effect_recovers_a_planted_leader_penalty():
    rng = np.random.default_rng(4)
    rounds, obs = 10, 400
    a_leads = np.broadcast_to((np.arange(rounds) % 2 == 0)[:, None], (rounds, obs))
    a = 50 * (1 + 0.01 * rng.standard_normal((rounds, obs)))
    b = 50 * (1 + 0.01 * rng.standard_normal((rounds, obs)))
    a_planted = np.where(a_leads, a * 1.03, a)  # the leader is 3% slower
    assert start_order_effect(a_planted, b, a_leads) == pytest.approx(0.03, abs=0.004)
    assert abs(start_order_effect(a, b, a_leads)) < 0.004
    # the artifact cancels in the estimate but honestly widens the paired interval
    clean = paired_bootstrap(a * 1.015, b)
    iv = paired_bootstrap(a_planted, b)
    assert iv.contains(1.015) and iv.half_width_rel > 3 * clean.half_width_rel
