"""The balanced design: positions and ordered neighbours balance over a cycle; pair cycles balance
each pair's positions; the default round count gives every speedup an interval."""

from collections import Counter

import pytest

from kprof.measure.design import DEFAULT_PAIR_CYCLES, BalancedDesign, pair_cycles


@pytest.mark.parametrize("m", range(2, 9))
def test_williams_cycle_balances_positions_and_ordered_neighbours(m):
    d = BalancedDesign.williams(m)
    assert d.cycle == (m if m % 2 == 0 else 2 * m)
    positions = Counter((method, pos) for row in d.rows for pos, method in enumerate(row))
    assert set(positions.values()) == {d.cycle // m}, "every method holds every position equally often"
    assert len(positions) == m * m
    neighbours = Counter((row[i], row[i + 1]) for row in d.rows for i in range(m - 1))
    assert len(neighbours) == m * (m - 1) and len(set(neighbours.values())) == 1, \
        "every ordered pair is adjacent equally often"
    assert all(sorted(row) == list(range(m)) for row in d.rows)


@pytest.mark.parametrize("m", range(2, 9))
def test_pair_cycles_balance_both_methods_positions(m):
    d = BalancedDesign.williams(m)
    rounds = d.default_rounds()
    orders = d.orders(rounds)
    for a in range(m):
        for b in range(m):
            if a == b:
                continue
            groups = pair_cycles(orders, a, b, d.cycle)
            assert len(groups) >= DEFAULT_PAIR_CYCLES
            used = [r for g in groups for r in g]
            assert len(used) == len(set(used)), "a round belongs to one pair cycle"
            for g in groups:
                assert sorted(orders[r].index(a) for r in g) == sorted(orders[r].index(b) for r in g)


def test_default_rounds_are_whole_cycles_of_at_least_twenty_with_ten_pair_cycles():
    # from four methods on a pair cycle is a whole design cycle: 10 of them for every pair
    assert [BalancedDesign.williams(m).default_rounds() for m in range(1, 9)] == [20, 20, 24, 40, 100, 60, 140, 80]
    assert BalancedDesign.williams(2).default_rounds(10, 5) == 10
    assert BalancedDesign.williams(3).whole_cycles(7) == 12
    assert BalancedDesign.williams(2).whole_cycles(1) == 2


def test_two_methods_swap_every_two_rounds_and_three_make_three_swaps_per_cycle():
    d2 = BalancedDesign.williams(2)
    assert d2.orders(4) == [(0, 1), (1, 0), (0, 1), (1, 0)]
    assert pair_cycles(d2.orders(4), 0, 1, 2) == [(0, 1), (2, 3)]
    d3 = BalancedDesign.williams(3)
    groups = pair_cycles(d3.orders(6), 0, 1, 6)
    assert len(groups) == 3 and all(len(g) == 2 for g in groups)


@pytest.mark.parametrize("m", [4, 5, 6])
def test_from_four_methods_every_pair_cycle_is_a_whole_design_cycle_with_the_same_neighbours(m):
    """Swaps in a Williams design of four or more pair rounds whose cyclic neighbours differ
    (pairs 0/2 and 1/3 of four alternate neighbour sets); whole cycles give every pair the same
    neighbours each cycle and an interval at the default round count."""
    d = BalancedDesign.williams(m)
    orders = d.orders(3 * d.cycle)
    for a in range(m):
        for b in range(a + 1, m):
            groups = pair_cycles(orders, a, b, d.cycle)
            assert groups == [tuple(range(s, s + d.cycle)) for s in range(0, 3 * d.cycle, d.cycle)]
    assert d.default_rounds() // d.cycle >= DEFAULT_PAIR_CYCLES
