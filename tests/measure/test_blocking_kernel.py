"""BlockingKernel: the spin kernel waits for its ticket (and no longer than its poll bound), and the
runners enqueue every timed region, eviction included, between hold and release."""

import time

import numpy as np
import pytest
import torch

from kprof.measure.blocking_kernel import BlockingKernel, _spin_until, blocking_kernel_for


def test_no_gate_on_the_cpu_or_for_host_bound_runs():
    assert blocking_kernel_for(torch.device("cpu"), host_bound=False) is None
    assert blocking_kernel_for(None, host_bound=False) is None
    assert blocking_kernel_for(torch.device("cuda", 0), host_bound=True) is None


def test_spin_kernel_passes_a_released_ticket_and_counts_a_gate_that_gave_up():
    import kprof.kernels

    if not kprof.kernels.INTERPRETED:
        pytest.skip("runs the poll-counting spin on CPU tensors, which only the interpreter accepts")
    flag = torch.tensor([7], dtype=torch.int64)
    expired = torch.zeros(1, dtype=torch.int32)
    t0 = time.perf_counter()
    _spin_until[(1,)](flag, expired, 7, 1_000_000_000)  # already released: returns at once
    assert time.perf_counter() - t0 < 5.0 and int(expired[0]) == 0
    _spin_until[(1,)](flag, expired, 8, 50)  # never released: the poll bound ends it, and counts
    assert int(flag[0]) == 7 and int(expired[0]) == 1


def test_host_clock_gets_no_gate():
    from kprof.measure.clocks import HostClock
    from kprof.measure.harness import Harness
    from kprof.measure.protocol import TimingProtocol

    assert Harness("cpu", TimingProtocol(evict_mib=1), clock=HostClock()).gate is None


def test_runner_enqueues_eviction_and_region_inside_the_gate():
    from kprof.measure.harness import Harness, TimedOp
    from kprof.measure.protocol import TimingProtocol
    from tests.measure.test_harness import Log, RecordingClock, RecordingEviction

    class RecordingGate:
        def __init__(self, log):
            self.log = log

        def hold(self):
            self.log.append(("hold",))

        def release(self):
            self.log.append(("release",))

        def new_expiries(self):
            return 0

    log = Log()
    p = TimingProtocol(rounds=2, warmup_pairs=0, observations=2, evict_mib=1)
    runner = Harness("cpu", p, clock=RecordingClock(log), eviction=RecordingEviction(log), gate=RecordingGate(log))
    ops = [TimedOp(name, lambda name=name: log.append(("op", name))) for name in ("A", "B")]
    runner.paired(ops)
    kinds = [e[0] for e in log if e[0] != "sync"]  # the round's closing sync
    assert kinds == ["hold", "evict", "start", "op", "stop", "release"] * 8


@pytest.mark.gpu
def test_gpu_gate_holds_the_stream_until_released(target):
    gate = BlockingKernel(target.device)
    x = torch.zeros(1 << 20, device=target.device)
    x.add_(1)  # load the kernel first: a first launch may wait for the held stream (lazy loading)
    torch.cuda.synchronize()
    gate.hold()
    x.add_(1)  # queued behind the spin kernel
    done = torch.cuda.Event()
    done.record()
    time.sleep(0.05)
    assert not done.query(), "the stream ran past the gate before its release"
    gate.release()
    done.synchronize()
    assert torch.all(x == 2) and gate.new_expiries() == 0
    gate.hold()  # a released-ahead ticket passes at once
    gate.release()
    torch.cuda.synchronize()


@pytest.mark.gpu
def test_gpu_event_timing_of_a_slow_host_region_excludes_the_host(target):
    """A region whose launches are separated by 2 ms of host sleep: ungated, the device waits for
    the host inside the interval; gated, the interval holds only the two tiny kernels."""
    from kprof.measure.clocks import clock_for

    clock = clock_for(target.device)
    x = torch.ones(1024, device=target.device)

    def slow_region():
        x.add_(1)
        time.sleep(0.002)
        x.add_(1)

    times = {}
    for gated in (False, True):
        gate = BlockingKernel(target.device) if gated else None
        rec = clock.recorder(5)
        for i in range(5):
            if gate:
                gate.hold()
            rec.start(i)
            slow_region()
            rec.stop(i)
            if gate:
                gate.release()
        clock.synchronize()
        times[gated] = float(np.median(rec.elapsed_us(5)))
    assert times[False] > 1500 and times[True] < 500, times


def test_runner_warns_when_the_gate_gave_up():
    from kprof.measure.harness import Harness, TimedOp
    from kprof.measure.protocol import TimingProtocol
    from tests.measure.test_harness import Log, RecordingClock, RecordingEviction

    class ExpiringGate:
        def hold(self):
            pass

        def release(self):
            pass

        def new_expiries(self):
            return 2

    p = TimingProtocol(rounds=1, warmup_pairs=0, observations=1, evict_mib=1)
    log = Log()
    runner = Harness("cpu", p, clock=RecordingClock(log), eviction=RecordingEviction(log), gate=ExpiringGate())
    with pytest.warns(UserWarning, match="gave up on 2 timed region"):
        runner.paired([TimedOp("A", lambda: None), TimedOp("B", lambda: None)])


@pytest.mark.gpu
def test_gpu_event_timing_is_gated_even_without_eviction(target):
    from kprof.measure.clocks import clock_for
    from kprof.measure.harness import Harness
    from kprof.measure.protocol import TimingProtocol

    harness = Harness(target.device, TimingProtocol(evict_mib=0), clock=clock_for(target.device))
    assert harness.gate is not None and harness.eviction is None


@pytest.mark.gpu
def test_gpu_gate_gives_up_on_a_region_that_synchronises(target):
    """A timed call that waits for the device inside its own region stalls until the gate's
    bound, then runs on, and the gate counts it."""
    gate = BlockingKernel(target.device)
    gate.hold()
    x = torch.ones(16, device=target.device).sum().item()  # a sync behind the held stream
    gate.release()
    torch.cuda.synchronize()
    assert x == 16 and gate.new_expiries() == 1
