"""The harness observed through a recording fake clock (no GPU needed)."""

import numpy as np
import pytest

from kprof.measure.clocks import Clock, HostClock, IntervalRecorder
from kprof.measure.design import BalancedDesign
from kprof.measure.harness import Harness, TimedOp, rotation
from kprof.measure.protocol import TimingProtocol
from tests.measure.clock_fakes import GivenRecorder


class Log(list):
    pass


class RecordingClock(Clock):
    """Logs start/stop marks; each interval's 'duration' is the number of log entries inside it."""

    name = "recording"

    def __init__(self, log):
        self.log = log
        self.syncs = 0

    def recorder(self, n):
        log = self.log

        class Rec(IntervalRecorder):
            def __init__(self):
                self.marks = {}

            def start(self, i):
                log.append(("start", i))
                self.marks[i] = [len(log)]

            def stop(self, i):
                self.marks[i].append(len(log))
                log.append(("stop", i))

            def elapsed_us(self, count):
                return np.array([self.marks[i][1] - self.marks[i][0] for i in range(count)], dtype=float)

        return Rec()

    def synchronize(self):
        self.syncs += 1
        self.log.append(("sync",))


class RecordingEviction:
    def __init__(self, log):
        self.log = log
        self.nbytes = self.requested_bytes = 1

    def evict(self):
        self.log.append(("evict",))


def _ops(log, labels):
    return [TimedOp(lab, (lambda lab=lab: log.append(("op", lab)))) for lab in labels]


def _timed_calls(log):
    """(label, preceded-by-evict) for each op that sits inside a start/stop pair."""
    out = []
    for i, e in enumerate(log):
        if e[0] == "op" and i > 0 and log[i - 1][0] == "start":
            assert log[i + 1][0] == "stop", "exactly one op inside each timed interval"
            out.append((e[1], log[i - 2] == ("evict",)))
    return out


def _split_rounds(log):
    rounds, current = [], []
    for e in log:
        if e == ("sync",):
            rounds.append(current)
            current = []
        else:
            current.append(e)
    return rounds


def _harness(p, log, clock=None):
    return Harness("cpu", p, clock=clock or RecordingClock(log), eviction=RecordingEviction(log), gate=None)


def test_interleaving_alternation_and_eviction_placement():
    log = Log()
    p = TimingProtocol(rounds=4, warmup_pairs=2, observations=3, evict_mib=1)
    clock = RecordingClock(log)
    m = _harness(p, log, clock).paired(_ops(log, ["A", "B"]))
    obs = m.observations
    assert m.orders == [(0, 1), (1, 0), (0, 1), (1, 0)] and m.cycle == 2
    assert obs.shape == (2, 4, 3)
    assert np.all(obs == 1)  # only the invocation itself is inside each interval: no eviction inside
    assert clock.syncs == 4  # host sync once per round, never per observation
    rounds = _split_rounds(log)
    assert len(rounds) == 4
    for r, events in enumerate(rounds):
        timed = _timed_calls(events)
        assert len(timed) == 6
        labels = [lab for lab, _ in timed]
        pairs = [labels[i : i + 2] for i in range(0, 6, 2)]
        assert all(sorted(pair) == ["A", "B"] for pair in pairs), "each pair invokes both methods once"
        first = "A" if r % 2 == 0 else "B"
        assert pairs[0][0] == first, f"round {r} starts with {first}: alternation between rounds"
        assert [pair[0] for pair in pairs] == [first] * 3, "strict A,B,A,B interleaving within a round"
        assert all(evicted for _, evicted in timed), "eviction right before every timed call"
        warm = [e[1] for e in events if e[0] == "op"][:4]
        assert sorted(warm[:2]) == ["A", "B"] and sorted(warm[2:]) == ["A", "B"], "warm-up pairs come first"
        assert sum(1 for e in events if e == ("evict",)) == 10  # 2 warm-up pairs + 3 timed pairs, x2 methods
        assert ("sync",) not in events


def test_three_methods_follow_the_williams_design_and_rounds_round_up_to_whole_cycles():
    log = Log()
    p = TimingProtocol(rounds=4, warmup_pairs=0, observations=2, evict_mib=1)
    m = _harness(p, log).paired(_ops(log, ["A", "B", "C"]))
    design = BalancedDesign.williams(3)
    assert m.observations.shape == (3, 6, 2) and m.orders == design.orders(6)
    assert "rounded up from 4 to 6" in m.notes[0]
    starts = [[e[1] for e in r if e[0] == "op"][:3] for r in _split_rounds(log)]
    assert [tuple("ABC".index(x) for x in s) for s in starts] == design.orders(6)


def test_default_rounds_come_from_the_design():
    log = Log()
    p = TimingProtocol(warmup_pairs=0, observations=1, evict_mib=1)
    assert _harness(p, log).paired(_ops(log, ["A", "B", "C"])).observations.shape[1] == 24
    assert _harness(TimingProtocol(min_rounds=10, min_pair_cycles=5, warmup_pairs=0, observations=1, evict_mib=1),
                    log).paired(_ops(log, ["A", "B"])).observations.shape[1] == 10


def test_host_bound_mode_never_evicts():
    log = Log()
    p = TimingProtocol(rounds=2, warmup_pairs=1, observations=2, host_bound=True)
    _harness(p, log).paired(_ops(log, ["A", "B"]))
    assert ("evict",) not in log


def test_rotation_for_stage_rows():
    assert [rotation(3, r) for r in range(4)] == [[0, 1, 2], [1, 2, 0], [2, 0, 1], [0, 1, 2]]


def test_harness_requires_eviction_unless_host_bound():
    with pytest.raises(ValueError):
        Harness("cpu", TimingProtocol(), clock=HostClock(), eviction=None, gate=None)


def test_stage_runner_runs_upstream_untimed_then_evicts_then_times_one_stage():
    log = Log()
    p = TimingProtocol(rounds=2, warmup_pairs=0, observations=1, stage_observations=3, evict_mib=1)
    stages = _ops(log, ["s0", "s1", "s2"])
    complete = TimedOp("complete", lambda: log.append(("op", "complete")))
    obs = _harness(p, log).stages(stages, complete).observations
    assert obs.shape == (4, 2, 3)
    assert np.all(obs == 1)
    for i, e in enumerate(log):
        if e[0] == "start":
            stage = log[i + 1][1]
            assert log[i - 1] == ("evict",)
            if stage in ("s1", "s2"):
                k = int(stage[1])
                upstream = [x[1] for x in log[i - 1 - k : i - 1]]
                assert upstream == [f"s{j}" for j in range(k)], "upstream stages ran, in order, untimed"
    firsts = []
    timed = [log[i + 1][1] for i, e in enumerate(log) if e[0] == "start"]
    for j in range(0, len(timed), 4):
        firsts.append(timed[j])
    assert len(set(firsts)) > 1, "stage order rotates across observations"


def test_chain_runner_times_each_prefix_whole_after_eviction_with_nothing_untimed():
    log = Log()
    p = TimingProtocol(rounds=2, warmup_pairs=1, observations=1, stage_observations=3, evict_mib=1)
    launches = [lambda name=name: log.append(("op", name)) for name in ("s0", "s1", "s2")]
    prefixes = [TimedOp(f"p{k}", lambda k=k: [f() for f in launches[: k + 1]]) for k in range(3)]
    obs = _harness(p, log).chain(prefixes).observations
    assert obs.shape == (3, 2, 3)
    assert [set(obs[k].ravel()) for k in range(3)] == [{1.0}, {2.0}, {3.0}], "prefix k times launches 1..k"
    starts = [i for i, e in enumerate(log) if e[0] == "start"]
    assert len(starts) == 3 * 2 * 3
    assert all(log[i - 1] == ("evict",) for i in starts), "eviction right before every timed prefix"
    inside, untimed = False, []
    for e in log:
        inside = True if e[0] == "start" else False if e[0] == "stop" else inside
        if e[0] == "op" and not inside:
            untimed.append(e[1])
    assert untimed == ["s0", "s1", "s2"] * 2, "only one warm-up chain per round runs untimed"
    sizes = [int(obs[k, 0, 0]) for k in range(3)]
    firsts = {sum(1 for e in log[i + 1: i + 5] if e[0] == "op") for i in starts[::3]}
    assert sizes == [1, 2, 3] and len(firsts) > 1, "prefix order rotates across observations"


def test_whole_protocol_with_host_clock_on_real_work(make_workload, cpu_target):
    from kprof.methods import get_method

    w = make_workload(4, 2, 64, 16)
    a = get_method("math").prepare(w, cpu_target)
    p = TimingProtocol(rounds=3, warmup_pairs=1, observations=4, evict_mib=1)
    obs = Harness(cpu_target.device, p).paired([TimedOp("a", a.run), TimedOp("b", a.run)]).observations
    assert obs.shape == (2, 4, 4)
    assert np.all(obs > 0) and np.all(np.isfinite(obs))


def test_phase_pads_run_untimed_before_every_odd_observation_cycle():
    log = Log()
    p = TimingProtocol(rounds=2, warmup_pairs=1, observations=4, evict_mib=1)
    h = _harness(p, log)
    assert h._pad is None, "no pads on the CPU: there is no launch stream"

    class Pad:
        def add_(self, x):
            log.append(("pad",))

    h._pad = Pad()
    h.paired(_ops(log, ["A", "B"]))
    for events in _split_rounds(log):
        starts, inside, starts_before_pad = 0, False, []
        for e in events:
            if e[0] == "start":
                starts, inside = starts + 1, True
            elif e[0] == "stop":
                inside = False
            elif e == ("pad",):
                assert not inside, "a pad never sits inside a timed interval"
                starts_before_pad.append(starts)
        assert starts_before_pad == [2, 6], "before observation cycles 1 and 3 (two methods each)"


class NoisyClock(Clock):
    """Each row's intervals are its base time with log-normal noise (rows in creation order)."""

    name = "noisy"

    def __init__(self, bases, sd, seed=0):
        self.bases, self.sd, self.rng, self.made = bases, sd, np.random.default_rng(seed), 0

    def recorder(self, n):
        base = self.bases[self.made % len(self.bases)]
        self.made += 1
        return GivenRecorder(lambda count: base * np.exp(self.sd * self.rng.standard_normal(count)))

    def synchronize(self):
        pass


def _noisy_harness(protocol, sd):
    return Harness("cpu", protocol, telemetry=False, clock=NoisyClock([60.0, 50.0], sd), eviction=None, gate=None)


def test_a_precision_stop_runs_until_the_speedup_is_that_narrow():
    from kprof.measure.precision import PrecisionStop
    from kprof.measure.stats import speedup

    p = TimingProtocol(precision=0.002, warmup_pairs=0, observations=20, evict_mib=0, host_bound=True)
    stop = PrecisionStop(p.precision, [(0, 1)], p.level, max_time_s=60)
    m = _noisy_harness(p, 0.05).paired(_ops(Log(), ["A", "B"]), stop=stop)
    rounds = [look.rounds for look in m.looks]
    assert rounds[0] == 10 and len(rounds) > 1 and m.looks[-1].done and not any(k.done for k in m.looks[:-1])
    assert m.observations.shape[1] == rounds[-1] and rounds == sorted(rounds)
    iv = speedup(m.table, m.orders, 0, 1, m.cycle, p.interval_level)
    assert iv.half_width_rel <= 0.002 and iv.contains(1.2) and "reached after" in m.notes[0]


def test_a_precision_stop_out_of_time_says_so():
    from kprof.measure.precision import PrecisionStop

    p = TimingProtocol(precision=0.0001, warmup_pairs=0, observations=4, evict_mib=0, host_bound=True)
    m = _noisy_harness(p, 0.05).paired(_ops(Log(), ["A", "B"]), stop=PrecisionStop(p.precision, [(0, 1)], 0.95, 0))
    assert m.observations.shape[1] == 10 and len(m.looks) == 1 and "NOT reached" in m.notes[0]
