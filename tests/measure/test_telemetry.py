"""Telemetry as an observer: one sampler per run; without a GPU nothing is sampled, and it says so."""

from kprof.measure.harness import Harness, TimedOp
from kprof.measure.protocol import TimingProtocol
from kprof.measure.telemetry import Telemetry, TelemetrySampler


def test_without_a_device_the_report_says_why_and_flags_nothing():
    m = Harness("cpu", TimingProtocol(rounds=3, warmup_pairs=0, observations=1, evict_mib=1)).time(lambda: None)
    assert m.telemetry.available is False and "no GPU" in m.telemetry.note
    assert m.telemetry.throttled_flags(3) == [False] * 3


def test_each_run_gets_its_own_sampler_and_rounds_reach_it(monkeypatch):
    begun = []
    real = TelemetrySampler.begin_round
    monkeypatch.setattr(TelemetrySampler, "begin_round", lambda self, r: (begun.append((id(self), r)),
                                                                           real(self, r))[1])
    t = Telemetry(None)
    h = Harness("cpu", TimingProtocol(rounds=2, warmup_pairs=0, observations=1, evict_mib=1), observers=[t])
    h.paired([TimedOp("A", lambda: None)])
    h.paired([TimedOp("A", lambda: None)])
    assert [r for _, r in begun] == [0, 1, 0, 1] and len({s for s, _ in begun}) == 2
