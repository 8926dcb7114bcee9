"""StreamHold: the host gate's hold and release around each region, its give-ups counted per run."""

import pytest

from kprof.measure.harness import Harness, TimedOp
from kprof.measure.protocol import TimingProtocol
from kprof.measure.stream_hold import StreamHold
from tests.measure.test_harness import Log, RecordingClock, RecordingEviction


class Gate:
    def __init__(self, expiries):
        self.expiries, self.held = list(expiries), 0

    def hold(self):
        self.held += 1

    def release(self):
        pass

    def new_expiries(self):
        return self.expiries.pop(0) if self.expiries else 0


def test_give_ups_are_warned_per_round_and_counted_per_run():
    gate = Gate([0, 2, 1, 0])
    hold = StreamHold(gate)
    p = TimingProtocol(rounds=2, warmup_pairs=0, observations=3, evict_mib=1)
    log = Log()
    h = Harness("cpu", p, clock=RecordingClock(log), eviction=RecordingEviction(log), observers=[hold])
    with pytest.warns(UserWarning, match="round 1: the host gate gave up on 2 timed region"):
        first = h.paired([TimedOp("A", lambda: None)])
    assert first.gate_expiries == 2 and gate.held == 6
    with pytest.warns(UserWarning, match="round 0: the host gate gave up on 1"):
        second = h.paired([TimedOp("A", lambda: None)])
    assert second.gate_expiries == 1, "counted per run"
