"""The harness's observers: each hook once per run or round, in order, and per-region hooks
bound once, outside the timed region, with telemetry and the stream hold built by default."""

import pytest

from kprof.measure.harness import Harness, TimedOp
from kprof.measure.observer import RunObserver
from kprof.measure.protocol import TimingProtocol
from kprof.measure.stream_hold import StreamHold
from kprof.measure.telemetry import Telemetry
from tests.measure.test_harness import Log, RecordingClock, RecordingEviction


class Recorder(RunObserver):
    def __init__(self, log, name, holds=False, throttled=()):
        self.log, self.name, self.hot = log, name, set(throttled)
        if holds:
            self.hold = lambda: log.append(("hold", name))
            self.release = lambda: log.append(("release", name))

    def run_started(self):
        self.log.append(("run", self.name))

    def round_started(self, r):
        self.log.append(("round", self.name, r))

    def round_finished(self, r):
        self.log.append(("done", self.name, r))

    def throttled_flags(self, rounds):
        return [r in self.hot for r in range(rounds)]

    def run_finished(self):
        self.log.append(("end", self.name))

    def annotate(self, measurement):
        measurement.notes.append(f"seen by {self.name}")


def _harness(log, observers, rounds=2):
    p = TimingProtocol(rounds=rounds, warmup_pairs=0, observations=2, evict_mib=1)
    return Harness("cpu", p, clock=RecordingClock(log), eviction=RecordingEviction(log), observers=observers)


def test_hooks_run_once_per_run_and_round_around_the_device_sync():
    log = Log()
    m = _harness(log, [Recorder(log, "a"), Recorder(log, "b")]).paired([TimedOp("A", lambda: log.append(("op",)))])
    hooks = [e for e in log if e[0] in ("run", "round", "done", "end", "sync")]
    assert hooks == [("run", "a"), ("run", "b"),
                     ("round", "a", 0), ("round", "b", 0), ("sync",), ("done", "a", 0), ("done", "b", 0),
                     ("round", "a", 1), ("round", "b", 1), ("sync",), ("done", "a", 1), ("done", "b", 1),
                     ("end", "b"), ("end", "a")]
    assert m.notes[-2:] == ["seen by a", "seen by b"]


def test_region_hooks_bracket_each_timed_region_nested_in_order():
    log = Log()
    _harness(log, [Recorder(log, "a", holds=True), Recorder(log, "quiet"), Recorder(log, "b", holds=True)],
             rounds=1).paired([TimedOp("A", lambda: log.append(("op",)))])
    region = [e for e in log if e[0] in ("hold", "release", "evict", "start", "op", "stop")]
    assert region == [("hold", "a"), ("hold", "b"), ("evict",), ("start", 0), ("op",), ("stop", 0),
                      ("release", "b"), ("release", "a")] + [("hold", "a"), ("hold", "b"), ("evict",), ("start", 1),
                                                              ("op",), ("stop", 1), ("release", "b"), ("release", "a")]


def test_one_holding_observer_is_called_directly():
    """The timed loop calls the gate's own bound methods: no dispatch over observers per call."""
    class Gate:
        def hold(self):
            pass

        def release(self):
            pass

        def new_expiries(self):
            return 0

    gate = Gate()
    h = Harness("cpu", TimingProtocol(evict_mib=1), clock=RecordingClock(Log()), gate=gate)
    assert h._hold == gate.hold and h._release == gate.release and h.gate is gate
    assert [type(o) for o in h.observers] == [StreamHold, Telemetry]
    assert Harness("cpu", TimingProtocol(evict_mib=1), observers=[])._hold is None


def test_run_finished_runs_when_a_round_raises_and_a_failed_start_is_not_finished():
    log = Log()

    class Boom(Recorder):
        def round_started(self, r):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        _harness(log, [Recorder(log, "a"), Boom(log, "b")]).paired([TimedOp("A", lambda: None)])
    assert ("end", "a") in log and ("end", "b") in log

    class NoStart(Recorder):
        def run_started(self):
            raise RuntimeError("no start")

    log.clear()
    with pytest.raises(RuntimeError, match="no start"):
        _harness(log, [Recorder(log, "a"), NoStart(log, "b")]).paired([TimedOp("A", lambda: None)])
    assert ("end", "a") in log and ("end", "b") not in log


def test_without_telemetry_or_a_stream_hold_the_measurement_says_neither():
    log = Log()
    m = _harness(log, [Recorder(log, "a")]).paired([TimedOp("A", lambda: None)])
    assert m.telemetry is None and m.gate_expiries == 0
    assert m.table is not None  # round summaries need no telemetry


def test_any_observers_throttled_rounds_are_combined():
    from kprof.measure.harness import _throttled

    log = Log()
    assert _throttled([Recorder(log, "a", throttled={1}), RunObserver(), Recorder(log, "b", throttled={3})], 4) == [
        False, True, False, True]
