"""kprof.stats, the public face of kprof's statistics: the same intervals as compare and gate, and
arguments that would give an interval that is not one refused."""

import numpy as np
import pytest

import kprof.stats as ks
from kprof.measure.design import BalancedDesign


def _pair(rounds=20, seed=0):
    rng = np.random.default_rng(seed)
    d = BalancedDesign.williams(2)
    base = 50 * np.exp(0.01 * rng.standard_normal((rounds, 30)))
    cand = 40 * np.exp(0.01 * rng.standard_normal((rounds, 30)))
    return base, cand, d.orders(rounds), d.cycle


def test_the_public_functions_give_compares_intervals():
    base, cand, orders, cycle = _pair()
    iv = ks.paired_speedup(base, cand, orders, 0, 1, cycle)
    assert iv.has_interval and iv.contains(1.25) and iv.n == 10
    assert ks.latency(base).contains(50.0) and ks.paired_bootstrap(base, cand).contains(1.25)
    gate, mde = ks.gate_interval([0.0, 0.01, -0.01], [0.002] * 3, 0.0, 0.002)
    assert gate.contains(1.0) and 0 < mde < 0.2


@pytest.mark.parametrize("level", [0, 1, -1, 1.5, True])
def test_a_level_that_gives_no_real_interval_is_refused(level):
    base, cand, orders, cycle = _pair()
    for call in (lambda: ks.latency(base, level=level), lambda: ks.paired_bootstrap(base, cand, level=level),
                 lambda: ks.paired_speedup(base, cand, orders, 0, 1, cycle, level=level),
                 lambda: ks.gate_interval([0.0, 0.01], [0.001] * 2, 0.0, 0.001, level=level)):
        with pytest.raises(ValueError, match="must lie strictly between 0 and 1"):
            call()


def test_orders_for_fewer_rounds_and_an_empty_history_are_refused():
    base, cand, orders, cycle = _pair()
    with pytest.raises(ValueError, match="one order per round .* got 3 orders, 20 and 20 rounds"):
        ks.paired_speedup(base, cand, orders[:3], 0, 1, cycle)
    with pytest.raises(ValueError, match="at least one history run"):
        ks.gate_interval([], [], 0.02, 0.005)
