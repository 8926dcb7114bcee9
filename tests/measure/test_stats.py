"""Statistics: speedups and latencies from round tables, bad observations and rounds, drift."""

import math

import numpy as np
import pytest

from kprof.measure.design import BalancedDesign
from kprof.measure.stats import (
    LATENCY,
    MIN_CYCLES,
    SPEEDUP,
    clean,
    drift,
    latency,
    paired_speedup,
    position_effect,
    round_noise,
    round_summaries,
    round_table,
)


def _pair(rounds: int, seed: int = 0, sd: float = 0.002, obs: int = 60):
    rng = np.random.default_rng(seed)
    base = 60 * np.exp(rng.normal(0, sd, (rounds, obs)))
    cand = 50 * np.exp(rng.normal(0, sd, (rounds, obs)))
    design = BalancedDesign.williams(2)
    return base, cand, design.orders(rounds), design.cycle


def test_speedup_of_a_planted_ratio_with_its_interval():
    base, cand, orders, cycle = _pair(20)
    iv = paired_speedup(base, cand, orders, 0, 1, cycle)
    assert iv.contains(1.2) and iv.half_width_rel < 0.003 and iv.method == SPEEDUP
    assert iv.n == 10 and iv.df == 2 and iv.left_out == 0


def test_position_effect_cancels_within_pair_cycles():
    base, cand, orders, cycle = _pair(20, seed=1)
    first = np.array([o[0] == 0 for o in orders])
    base = base * np.where(first[:, None], 1.03, 1.0)  # whoever goes first is 3% slower
    cand = cand * np.where(first[:, None], 1.0, 1.03)
    iv = paired_speedup(base, cand, orders, 0, 1, cycle)
    assert iv.contains(1.2) and iv.half_width_rel < 0.003, iv
    table = round_table([base, cand])
    assert position_effect(table, orders, 0, 1) == pytest.approx(0.0609, abs=0.005)


@pytest.mark.parametrize("rounds", [2, 8])
def test_too_few_cycles_give_no_interval_and_say_why(rounds):
    base, cand, orders, cycle = _pair(rounds)
    iv = paired_speedup(base, cand, orders, 0, 1, cycle)
    assert not iv.has_interval and iv.estimate == pytest.approx(1.2, rel=0.01)
    assert "too few rounds for an interval" in iv.note and iv.n == rounds // 2 < MIN_CYCLES
    assert "left out" not in iv.note


def test_too_few_cycles_after_a_bad_round_say_how_many_were_left_out():
    base, cand, orders, cycle = _pair(10, seed=4)
    cand[3] = np.nan  # its pair cycle goes, leaving four of five
    iv = paired_speedup(base, cand, orders, 0, 1, cycle)
    assert not iv.has_interval and iv.n == 4 and iv.left_out == 1
    assert "(4 cycles after 1 left out for a bad round, need 5)" in iv.note, iv.note


def test_a_round_without_data_drops_its_pair_cycle_not_the_run():
    base, cand, orders, cycle = _pair(12, seed=4)
    cand[3] = np.nan
    iv = paired_speedup(base, cand, orders, 0, 1, cycle)
    assert iv.n == 5 and iv.left_out == 1 and iv.contains(1.2)


def test_one_round_30_percent_slower_is_left_out_and_does_not_widen_the_interval():
    base, cand, orders, cycle = _pair(20, seed=5)
    clean_iv = paired_speedup(base, cand, orders, 0, 1, cycle)
    cand[7] *= 1.3
    iv = paired_speedup(base, cand, orders, 0, 1, cycle)
    assert iv.left_out == 1 and iv.n == 9
    assert iv.half_width_rel < 2 * clean_iv.half_width_rel and iv.contains(1.2)
    table = round_table([base, cand])
    assert np.flatnonzero(table.bad[1]).tolist() == [7] and not table.bad[0].any()


def test_identical_cycles_give_no_zero_width_interval():
    obs = np.full((20, 10), 4.512)
    design = BalancedDesign.williams(2)
    iv = paired_speedup(obs, obs / 1.25, design.orders(20), 0, 1, design.cycle)
    assert not iv.has_interval and "cannot resolve" in iv.note
    assert iv.estimate == pytest.approx(1.25)


def test_round_summaries_leave_the_timer_grid():
    """Two steady 4.5 us kernels on a 32 ns grid: the round medians repeat, the fenced means do not."""
    rng = np.random.default_rng(6)
    grid = 0.032
    true = 4.5 * np.exp(rng.normal(0, 0.002, (10, 200)))
    phase = rng.uniform(0, grid, true.shape)
    read = grid * (np.floor((phase + true) / grid) - np.floor(phase / grid))
    assert len(np.unique(np.median(read, axis=1))) <= 2
    summaries = round_summaries(read)
    assert len(np.unique(summaries)) == 10
    assert np.mean(summaries) == pytest.approx(np.mean(true), rel=5e-4)


def test_fences_drop_spikes_but_keep_real_spread():
    rng = np.random.default_rng(7)
    obs = 50 * np.exp(rng.normal(0, 0.02, (4, 1000)))
    spiked = obs.copy()
    spiked[:, :20] *= 3.0
    assert round_summaries(spiked) == pytest.approx(np.mean(obs[:, 20:], axis=1), rel=1e-3)
    assert round_summaries(obs) == pytest.approx(np.mean(obs, axis=1), rel=1e-12)


def test_latency_of_one_method_uses_groups_of_rounds():
    rng = np.random.default_rng(8)
    obs = 80 * np.exp(rng.normal(0, 0.01, (12, 100)))
    iv = latency(obs)
    assert iv.method == LATENCY and iv.n == 12 and iv.contains(80 * math.exp(0.01**2 / 2))
    assert latency(obs, cycle=2).n == 6


def test_bad_observations_are_dropped_and_counted():
    obs = np.full((6, 10), 50.0)
    obs[0, :3] = [np.nan, np.inf, -1.0]
    obs[1, 0] = 0.0
    obs[2, :] = np.nan  # a round without one valid observation
    cleaned, bad = clean(obs)
    assert bad == 14 and np.isnan(cleaned[0, :3]).all()
    s = round_summaries(obs)
    assert s[0] == 50.0 and math.isnan(s[2])
    iv = latency(obs)
    assert iv.estimate == pytest.approx(50.0) and iv.n == 5 and iv.left_out == 1
    assert math.isnan(round_noise(obs)[2]) and round_noise(obs)[0] == 0.0


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


def test_throttled_rounds_are_left_out_unless_most_rounds_are_throttled():
    base, cand, orders, cycle = _pair(20, seed=9)
    few = [r in (3, 4) for r in range(20)]
    table = round_table([base, cand], few, orders)
    assert table.bad[:, 3].all() and table.bad[:, 4].all() and table.bad.sum() == 4
    every = round_table([base, cand], [True] * 20, orders)  # a power-limited GEMM: its steady state
    assert not every.bad.any()
