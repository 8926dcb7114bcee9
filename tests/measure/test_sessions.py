"""The session simulator must be right before it can judge kprof's intervals: its data must carry
the effects the spec names, with the signs and neighbours it names, around the truth it reports."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tests.measure.sessions import Effects, _orders, simulate


def _round_means(s) -> np.ndarray:
    return np.log(s.observations).mean(axis=3)  # [S, m, R]


def test_shapes_and_validation():
    e = Effects(methods=3, rounds=6, observations=5)
    s = simulate(e, _orders(3, 6), 4, np.random.default_rng(0))
    assert s.observations.shape == (4, 3, 6, 5) and s.observations.dtype == np.float64
    assert (s.observations > 0).all()
    assert s.log_speedup.shape == (4, 3, 3) and s.log_latency.shape == (4, 3)
    with pytest.raises(ValueError):
        simulate(e, _orders(3, 5), 4, np.random.default_rng(0))
    with pytest.raises(ValueError):
        simulate(e, [(0, 1, 1)] * 6, 4, np.random.default_rng(0))


def test_method_times_and_speedup_sign():
    e = Effects(methods=4, rounds=8, observations=4)
    s = simulate(e, _orders(4, 8), 3, np.random.default_rng(0))
    want = np.log([60.0, 50.0 * np.exp(-0.025), 50.0, 50.0 * np.exp(0.025)])
    np.testing.assert_allclose(s.log_latency, np.broadcast_to(want, (3, 4)), atol=1e-12)
    np.testing.assert_allclose(s.log_speedup[:, 0, 2], np.log(1.2), atol=1e-12)  # baseline slower: positive
    np.testing.assert_allclose(s.log_speedup, -s.log_speedup.transpose(0, 2, 1), atol=1e-12)


def test_balanced_effects_are_in_the_truth_with_their_sign():
    """Position, carry-over, trend and step: each session's mean log time sits on its truth to within
    noise, so a flipped sign or a part left out of the truth shows up by orders of magnitude."""
    m, R, n = 4, 40, 50
    e = Effects(methods=m, rounds=R, observations=n, noise=0.01, first_position=0.04, carry_sd=0.1,
                shared_trend=0.2, shared_step=-0.1)
    s = simulate(e, _orders(m, R), 100, np.random.default_rng(1))
    resid = _round_means(s).mean(axis=2) - s.log_latency
    assert np.abs(resid).max() < 5 * e.noise / np.sqrt(R * n)
    assert s.log_latency.std(axis=0).min() > 0.01  # carry-over is drawn per session


def test_bimodal_enters_the_truth_as_its_expected_shift():
    e = Effects(methods=2, rounds=20, observations=20, noise=0.01, bimodal_share=0.3, bimodal_size=0.2)
    s = simulate(e, _orders(2, 20), 400, np.random.default_rng(2))
    resid = _round_means(s).mean(axis=2) - s.log_latency
    se = e.bimodal_size * np.sqrt(e.bimodal_share * (1 - e.bimodal_share) / e.rounds)
    assert abs(resid.mean()) < 4 * se / np.sqrt(resid.size)
    assert resid.std() == pytest.approx(se, rel=0.1)
    slow = _round_means(s) - s.log_latency[..., None] > 0.05
    assert slow.mean() == pytest.approx(e.bimodal_share, abs=0.02)


def test_carry_over_comes_from_the_cyclic_predecessor():
    """Method 0's predecessor is 2 in rounds 0 and 1 (in round 0 cyclically: it opens the round and 2
    closes it); its successor is 2 in rounds 2 and 3. Equal times must follow the predecessor."""
    orders = [(0, 1, 3, 2), (1, 2, 0, 3), (2, 3, 1, 0), (3, 0, 2, 1)] * 5
    e = Effects(methods=4, rounds=20, observations=20, noise=0.002, carry_sd=0.1)
    r0 = _round_means(simulate(e, orders, 50, np.random.default_rng(3)))[:, 0]
    same_pred = np.abs(r0[:, 0] - r0[:, 1])
    same_succ = np.abs(r0[:, 2] - r0[:, 3])
    assert same_pred.max() < 0.003
    assert np.mean(same_succ > 0.01) > 0.8


def test_first_position_slows_the_opener():
    e = Effects(methods=3, rounds=12, observations=20, noise=0.002, first_position=0.05)
    orders = _orders(3, 12)
    s = simulate(e, orders, 5, np.random.default_rng(4))
    net = _round_means(s) - e.method_log_us()[None, :, None]
    for r, order in enumerate(orders):
        np.testing.assert_allclose(net[:, order[0], r], 0.05, atol=0.003)
        np.testing.assert_allclose(net[:, list(order[1:]), r], 0.0, atol=0.003)
    np.testing.assert_allclose(s.log_latency - e.method_log_us(), 0.05 / 3, atol=1e-12)


def test_random_parts_and_outliers_stay_out_of_the_truth():
    e = Effects(methods=3, rounds=20, observations=10, shared_drift_sd=0.1, method_drift_sd=0.1, noise=0.05,
                tail_df=3.0, spikes=0.05, bad_round=0.5)
    s = simulate(e, _orders(3, 20), 30, np.random.default_rng(5))
    np.testing.assert_allclose(s.log_latency, np.broadcast_to(e.method_log_us(), (30, 3)), atol=1e-12)


def test_method_drift_is_stationary_ar1():
    e = Effects(methods=3, rounds=30, observations=10, method_drift_sd=0.1, method_drift_rho=0.7,
                shared_drift_sd=0.1, noise=0.01)
    s = simulate(e, _orders(3, 30), 600, np.random.default_rng(6))
    lr = _round_means(s)
    d = (lr[:, 1] - lr[:, 2]) - (s.log_latency[:, 1] - s.log_latency[:, 2])[:, None]  # shared drift cancels
    rho = (d[:, 1:] * d[:, :-1]).sum() / (d[:, :-1] ** 2).sum()
    assert rho == pytest.approx(0.7, abs=0.03)
    sd = np.sqrt(2) * e.method_drift_sd
    assert d[:, 0].std() == pytest.approx(sd, rel=0.1)
    assert d[:, -1].std() == pytest.approx(sd, rel=0.1)


def test_grid_quantiser_is_unbiased():
    e = Effects(methods=2, rounds=20, observations=50, base_us=5.0, noise=0.05, grid_ns=500.0)
    exact = simulate(replace(e, grid_ns=0.0), _orders(2, 20), 100, np.random.default_rng(7)).observations
    grid = simulate(e, _orders(2, 20), 100, np.random.default_rng(7)).observations
    steps = grid / 0.5
    np.testing.assert_allclose(steps, np.round(steps), atol=1e-9)
    diff = grid - exact
    assert np.abs(diff).max() < 0.5
    assert abs(diff.mean()) < 4 * diff.std() / np.sqrt(diff.size)
    assert 0.3 < np.mean(diff > 0) < 0.7  # both floor and ceil readings occur
    with pytest.raises(ValueError):
        simulate(replace(e, base_us=1.0), _orders(2, 20), 1, np.random.default_rng(0))


def test_exactly_one_bad_round_of_method_one():
    e = Effects(methods=3, rounds=20, observations=20, noise=0.01, bad_round=0.4)
    s = simulate(e, _orders(3, 20), 200, np.random.default_rng(8))
    excess = np.median(np.log(s.observations), axis=3) - s.log_latency[..., None]
    slow = excess > np.log1p(e.bad_round) / 2
    assert (slow[:, 1].sum(axis=1) == 1).all()
    assert not slow[:, [0, 2]].any()
    np.testing.assert_allclose(np.exp(excess[:, 1][slow[:, 1]]), 1.4, rtol=0.01)
    rounds = np.argmax(slow[:, 1], axis=1)
    assert len(np.unique(rounds)) > 10  # chosen afresh per session


def test_spikes_and_tails_keep_the_median_at_the_truth():
    e = Effects(methods=2, rounds=20, observations=50, noise=0.02, tail_df=2.0, spikes=0.1)
    s = simulate(e, _orders(2, 20), 100, np.random.default_rng(9))
    resid = np.log(s.observations) - s.log_latency[..., None, None]
    assert np.mean(resid > np.log(1.5) / 2) == pytest.approx(0.1, abs=0.01)
    clean = resid[resid < np.log(1.5) / 2]
    assert abs(np.median(clean)) < 0.002
    plain = np.log(simulate(replace(e, tail_df=0.0, spikes=0.0), _orders(2, 20), 100,
                            np.random.default_rng(9)).observations) - s.log_latency[..., None, None]
    kurt = lambda x: np.mean((x - x.mean()) ** 4) / x.var() ** 2  # noqa: E731
    assert kurt(clean) > 2 * kurt(plain)


def test_grid_reads_floor_or_ceil_by_random_phase():
    """A constant 5.2 us interval on a 0.5 us grid reads 5.0 or 5.5, 5.5 in 40% of readings (a fixed
    rounding or flooring rule would always read 5.0 and be biased)."""
    e = Effects(methods=2, rounds=20, observations=50, base_us=5.2, noise=0.0, grid_ns=500.0)
    t = simulate(e, _orders(2, 20), 50, np.random.default_rng(10)).observations[:, 1]
    assert set(np.round(np.unique(t), 9)) == {5.0, 5.5}
    assert t.mean() == pytest.approx(5.2, abs=4 * 0.5 * np.sqrt(0.24 / t.size))
