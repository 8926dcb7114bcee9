"""The paired-round protocol observed through a recording fake clock (no GPU needed)."""

import numpy as np
import pytest

from kprof.clocks import Clock, HostClock, IntervalRecorder
from kprof.protocol import TimingProtocol
from kprof.runner import ChainRunner, PairedRoundRunner, StageRunner, TimedOp, round_order


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


def test_interleaving_alternation_and_eviction_placement():
    log = Log()
    p = TimingProtocol(rounds=4, warmup_pairs=2, observations=3, evict_mib=1)
    clock = RecordingClock(log)
    obs = PairedRoundRunner(p, clock, RecordingEviction(log)).run(_ops(log, ["A", "B"]))
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


def test_goes_before_follows_the_round_rotation():
    from kprof.runner import goes_before

    shifts = np.arange(4)
    assert list(goes_before(2, shifts, 0, 1)) == [True, False, True, False]
    assert list(goes_before(3, shifts, 0, 2)) == [True, False, False, True]


def test_host_bound_mode_never_evicts():
    log = Log()
    p = TimingProtocol(rounds=2, warmup_pairs=1, observations=2, host_bound=True)
    PairedRoundRunner(p, RecordingClock(log), RecordingEviction(log)).run(_ops(log, ["A", "B"]))
    assert ("evict",) not in log


def test_round_order_rotates_for_three_methods():
    assert [round_order(3, r) for r in range(4)] == [[0, 1, 2], [1, 2, 0], [2, 0, 1], [0, 1, 2]]


def test_runner_requires_eviction_unless_host_bound():
    with pytest.raises(ValueError):
        PairedRoundRunner(TimingProtocol(), HostClock(), None)


def test_stage_runner_runs_upstream_untimed_then_evicts_then_times_one_stage():
    log = Log()
    p = TimingProtocol(rounds=2, warmup_pairs=0, observations=1, stage_observations=3, evict_mib=1)
    stages = _ops(log, ["s0", "s1", "s2"])
    complete = TimedOp("complete", lambda: log.append(("op", "complete")))
    obs = StageRunner(p, RecordingClock(log), RecordingEviction(log)).run(stages, complete)
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
    obs = ChainRunner(p, RecordingClock(log), RecordingEviction(log)).run(prefixes)
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
    from kprof.eviction import EvictionBuffer
    from kprof.methods import get_method

    w = make_workload(4, 2, 64, 16)
    a = get_method("math").prepare(w, cpu_target)
    p = TimingProtocol(rounds=3, warmup_pairs=1, observations=4, evict_mib=1)
    obs = PairedRoundRunner(p, HostClock(), EvictionBuffer(cpu_target.device, 1)).run(
        [TimedOp("a", a.run), TimedOp("b", a.run)])
    assert obs.shape == (2, 3, 4)
    assert np.all(obs > 0) and np.all(np.isfinite(obs))
