"""The default fixed-round run: whole cycles added while bad rounds leave an interval without its cycles."""

import numpy as np
import pytest

from kprof.measure.clocks import Clock
from kprof.measure.complete_cycles import CompleteCycles
from kprof.measure.harness import Harness, TimedOp, stopping_rule
from kprof.measure.precision import PrecisionStop
from kprof.measure.protocol import CPU_EMBEDDED, TimingProtocol
from kprof.measure.stats import MIN_CYCLES, speedup
from tests.measure.clock_fakes import GivenRecorder


class BadRoundsClock(Clock):
    """Row i's calls take bases[i] us with 1% noise, 1.6x in the rounds ``bad[i]`` lists."""

    name = "bad-rounds"

    def __init__(self, bases, bad, seed=0):
        self.bases, self.bad, self.rng, self.made = bases, bad, np.random.default_rng(seed), 0

    def recorder(self, n):
        row = self.made % len(self.bases)
        self.made += 1
        rounds = [0]

        def times(count):
            r = rounds[0]
            rounds[0] += 1
            slow = 1.6 if r in self.bad.get(row, ()) else 1.0
            return self.bases[row] * slow * np.exp(0.01 * self.rng.standard_normal(count))

        return GivenRecorder(times)

    def synchronize(self):
        pass


PROTOCOL = TimingProtocol(min_rounds=12, min_pair_cycles=6, warmup_pairs=0, observations=5, evict_mib=0,
                          host_bound=True)


def _run(bad, rule=CompleteCycles, bases=(60.0, 50.0)):
    harness = Harness("cpu", PROTOCOL, telemetry=False, clock=BadRoundsClock(bases, bad), eviction=None, gate=None)
    ops = [TimedOp(f"row {i}", lambda: None) for i in range(len(bases))]
    pairs = [(0, c) for c in range(1, len(bases))]
    return harness.paired(ops, stop=rule(pairs, PROTOCOL.level, PROTOCOL.min_rounds, PROTOCOL.min_pair_cycles))


class NeverFilled(CompleteCycles):
    """Every look finds some interval still short (as bad rounds in every cycle would)."""

    def look(self, *args, **kwargs):
        filled = super().look(*args, **kwargs)
        filled.done = False
        return filled


def test_without_bad_rounds_the_run_is_the_default_rounds_and_says_nothing():
    m = _run(bad={})
    assert m.observations.shape[1] == 12 and len(m.looks) == 1 and m.looks[0].done and m.notes == []


def test_bad_rounds_in_two_cycles_add_a_cycle_and_the_speedup_gets_its_interval():
    m = _run(bad={0: (3, 8)})  # rounds of cycles 1 and 4: 4 of 6 pair cycles left, one short of MIN_CYCLES
    assert MIN_CYCLES == 5 and m.table.bad[0, 3] and m.table.bad[0, 8]
    assert m.observations.shape[1] == 14 and [k.rounds for k in m.looks] == [12, 14]
    iv = speedup(m.table, m.orders, 0, 1, m.cycle, PROTOCOL.level)
    assert iv.has_interval and iv.n == MIN_CYCLES and iv.contains(1.2)
    assert "2 rounds added to the default 12" in m.notes[0] and "still" not in m.notes[0]


def test_the_run_stops_at_twice_its_rounds_and_says_the_interval_is_still_missing():
    m = _run(bad={}, rule=NeverFilled)
    assert m.observations.shape[1] == 24 and [k.rounds for k in m.looks] == list(range(12, 25, 2))
    assert "12 rounds added" in m.notes[0] and "still too few at the cap of 24 rounds" in m.notes[0]


def test_every_speedup_needs_its_cycles_not_just_one():
    m = _run(bad={2: (1, 8)}, bases=(60.0, 50.0, 55.0))  # only the third row's rounds are bad
    first = m.looks[0].rounds
    assert not m.looks[0].done and m.observations.shape[1] > first and m.looks[-1].done
    assert speedup(m.table, m.orders, 0, 1, m.cycle, PROTOCOL.level).n > MIN_CYCLES
    assert speedup(m.table, m.orders, 0, 2, m.cycle, PROTOCOL.level).has_interval


class FlatClock(BadRoundsClock):
    """Every call of row i takes exactly bases[i]: cycles that are all equal give no interval."""

    def recorder(self, n):
        base = self.bases[self.made % len(self.bases)]
        self.made += 1
        return GivenRecorder(lambda count: np.full(count, base))


def test_cycles_that_are_all_equal_are_usable_and_add_no_rounds():
    """The timer cannot resolve the ratio, which no number of cycles changes: the rule stops."""
    harness = Harness("cpu", PROTOCOL, telemetry=False, clock=FlatClock([60.0, 50.0], {}), eviction=None,
                      gate=None)
    ops = [TimedOp(f"row {i}", lambda: None) for i in range(2)]
    m = harness.paired(ops, stop=CompleteCycles([(0, 1)], PROTOCOL.level, 12, 6))
    iv = speedup(m.table, m.orders, 0, 1, m.cycle, PROTOCOL.level)
    assert m.observations.shape[1] == 12 and m.notes == [] and not iv.has_interval and iv.n == 6


@pytest.mark.parametrize("rule", [NeverFilled, lambda pairs, level, *_: PrecisionStop(1e-6, pairs, level, 60)])
def test_a_run_stopped_by_ctrl_c_says_nothing_false_about_why(rule):
    calls = [0]

    def op():
        calls[0] += 1
        if calls[0] == 5 * 14 + 1:  # the first call of round 15: after the looks at 12 and 14 (the precision
            # stop's at 10)
            raise KeyboardInterrupt

    harness = Harness("cpu", PROTOCOL, telemetry=False, clock=BadRoundsClock([60.0, 50.0], {}), eviction=None,
                      gate=None, keep_on_interrupt=True)
    m = harness.paired([TimedOp("a", op), TimedOp("b", lambda: None)],
                       stop=rule([(0, 1)], PROTOCOL.level, PROTOCOL.min_rounds, PROTOCOL.min_pair_cycles))
    assert m.interrupted and m.observations.shape[1] < 24
    assert not any("cap" in n or "--max-time" in n for n in m.notes), m.notes
    assert all("Ctrl-C" in n for n in m.notes)


@pytest.mark.parametrize("overrides, kind", [({}, CompleteCycles), ({"rounds": 12}, type(None)),
                                             ({"precision": 0.01}, PrecisionStop)])
def test_only_the_default_round_count_gets_the_rule(overrides, kind):
    """A round count the user gave is run exactly; a precision target has its own rule."""
    assert isinstance(stopping_rule(CPU_EMBEDDED.with_overrides(**overrides), [(0, 1)]), kind)
