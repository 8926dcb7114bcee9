"""Statistics: the signed-rank and order-statistic intervals, the stable paired_bootstrap API,
bad observations, drift and noise."""

import itertools
import math

import numpy as np
import pytest

from kprof.measure.stats import (
    MIN_CYCLES,
    SIGNED_RANK,
    clean,
    drift,
    latency,
    median_interval,
    median_of_medians,
    paired_bootstrap,
    position_effect,
    round_medians,
    round_noise,
    signed_rank_interval,
)


def _walsh_brute(x):
    return sorted((a + b) / 2 for a, b in itertools.combinations_with_replacement(x, 2))


def test_hodges_lehmann_is_the_median_of_walsh_averages_and_the_interval_cuts_them():
    rng = np.random.default_rng(0)
    x = rng.normal(size=10)
    iv = signed_rank_interval(x)
    walsh = _walsh_brute(x)
    assert iv.estimate == pytest.approx(float(np.median(walsh)))
    # n = 10: the 95% cut is 8 Walsh averages from each end (coverage 1 - 2 P(W+ <= 8) = 0.951)
    assert iv.low == pytest.approx(walsh[8]) and iv.high == pytest.approx(walsh[-9])
    assert iv.coverage == pytest.approx(1 - 2 * 25 / 1024)
    assert iv.method == SIGNED_RANK and iv.n == 10


def test_signed_rank_null_distribution_matches_enumeration():
    n = 7
    from kprof.measure.stats import _signed_rank_cdf

    counts = np.zeros(n * (n + 1) // 2 + 1)
    for signs in itertools.product((0, 1), repeat=n):
        counts[sum(r for r, s in zip(range(1, n + 1), signs) if s)] += 1
    assert np.allclose(_signed_rank_cdf(n), np.cumsum(counts) / 2**n)


def test_exact_coverage_holds_by_monte_carlo_for_a_skewless_heavy_tail():
    rng = np.random.default_rng(1)
    hits = sum(signed_rank_interval(rng.standard_t(3, size=12)).contains(0.0) for _ in range(3000))
    assert 0.94 <= hits / 3000 <= 0.975


def test_order_statistic_interval_of_the_median():
    x = np.arange(1.0, 21.0)  # n = 20: x(6)..x(15), coverage 1 - 2 P(B <= 5) = 0.9586
    iv = median_interval(x)
    assert (iv.estimate, iv.low, iv.high) == (10.5, 6.0, 15.0)
    assert iv.coverage == pytest.approx(1 - 2 * sum(math.comb(20, k) for k in range(6)) / 2**20)
    assert not median_interval([1.0, 2.0, 3.0]).has_interval


def test_paired_bootstrap_pairs_baseline_first_rounds_with_candidate_first_rounds():
    rng = np.random.default_rng(2)
    rounds = 20
    base = 60 * np.exp(rng.normal(0, 0.001, (rounds, 100)))
    cand = 50 * np.exp(rng.normal(0, 0.001, (rounds, 100)))
    b_first = np.arange(rounds) % 2 == 0
    base = base * np.where(b_first[:, None], 1.03, 1.0)  # whoever goes first is 3% slower
    cand = cand * np.where(b_first[:, None], 1.0, 1.03)
    iv = paired_bootstrap(base, cand)
    assert iv.contains(1.2) and iv.half_width_rel < 0.002, iv
    # the same data with the order flags wrong: pairs no longer cancel the position effect
    wrong = paired_bootstrap(base, cand, baseline_first=np.r_[np.ones(10, bool), np.zeros(10, bool)])
    assert wrong.half_width_rel > 5 * iv.half_width_rel
    boot = paired_bootstrap(base, cand, interval="bootstrap", resamples=2000, seed=3)
    assert boot.estimate == iv.estimate and boot.method != iv.method
    assert boot == paired_bootstrap(base, cand, interval="bootstrap", resamples=2000, seed=3)


@pytest.mark.parametrize("rounds", [1, 2, 8])
def test_too_few_rounds_give_no_interval(rounds):
    base = np.full((rounds, 5), 60.0) * (1 + 0.01 * np.arange(rounds))[:, None]
    iv = paired_bootstrap(base, base / 1.2)
    assert not iv.has_interval and iv.low is None and iv.high is None
    assert iv.estimate == pytest.approx(1.2) or rounds == 1 and math.isnan(iv.estimate)
    assert "too few rounds for an interval" in iv.note or rounds == 1
    assert iv.n == rounds // 2 < MIN_CYCLES


def test_bad_observations_are_dropped_and_counted():
    obs = np.full((4, 10), 50.0)
    obs[0, :3] = [np.nan, np.inf, -1.0]
    obs[1, 0] = 0.0
    obs[2, :] = np.nan  # a round without one valid observation
    cleaned, bad = clean(obs)
    assert bad == 14 and np.isnan(cleaned[0, :3]).all()
    med = round_medians(obs)
    assert med[0] == 50.0 and math.isnan(med[2])
    assert median_of_medians(obs) == 50.0
    assert latency(obs).estimate == 50.0
    assert math.isnan(round_noise(obs)[2]) and round_noise(obs)[0] == 0.0


def test_a_round_without_data_drops_its_pair_cycle_not_the_run():
    rng = np.random.default_rng(4)
    base = 60 * np.exp(rng.normal(0, 0.002, (12, 50)))
    cand = 50 * np.exp(rng.normal(0, 0.002, (12, 50)))
    cand[3] = np.nan
    iv = paired_bootstrap(base, cand)
    assert iv.n == 5 and iv.contains(1.2)


def test_position_effect_recovers_a_planted_leader_penalty():
    rng = np.random.default_rng(5)
    rounds, obs = 10, 400
    b_first = np.arange(rounds) % 2 == 0
    a = 50 * np.exp(0.01 * rng.standard_normal((rounds, obs)))
    b = 50 * np.exp(0.01 * rng.standard_normal((rounds, obs)))
    planted = np.where(b_first[:, None], a * 1.03, a)
    assert position_effect(planted, b, b_first) == pytest.approx(0.03, abs=0.004)
    assert abs(position_effect(a, b, b_first)) < 0.004


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
