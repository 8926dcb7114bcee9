"""HostGate: hold the GPU stream until the host has enqueued a whole timed region.

Event timing measures the device only if the device never waits for the host inside the timed
region. A step of several Python-launched kernels (a Triton launch costs tens of microseconds of
host time) can fall behind a device that has drained its queue: the interval then holds host
time, and a method's rounds turn bimodal (seen on the H200: SANTA++ rounds at 32 us and at
100-170 us while Flash, one launch, stayed flat). Before each timed region the runner enqueues a
kernel that spins on a pinned host word until the host writes the region's ticket, which it does
only after enqueuing the eviction, the start event, the invocation and the stop event (NVBench's
blocking kernel). The device then runs the eviction and the region back to back; any wait for
the host falls before the eviction, outside the measurement.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

import kprof.kernels  # noqa: F401  (the interpreter decision comes before any @triton.jit)

# Polls before the spin gives up on a host that never releases (release() runs in a finally, so
# only a host bug gets there). On the H200 a stream held with a 5M-poll bound ran on within 50 ms
# without a release: that bound runs out in ~50 ms at ~10 ns per poll of the pinned word, so the
# bound is now the int32 maximum (tens of seconds, not a hang). The hold test has not yet passed
# on a GPU with this bound.
MAX_POLLS = 2**31 - 1


@triton.jit
def _spin_until(Flag, ticket, max_polls):
    polls = 0
    while (tl.load(Flag, volatile=True) < ticket) & (polls < max_polls):
        polls += 1


class HostGate:
    """A pinned ticket word and the spin kernel that waits for it; one gate per timing loop."""

    def __init__(self, device: torch.device, max_polls: int = MAX_POLLS):
        self.device = device
        self.max_polls = max_polls
        self._flag = torch.zeros(1, dtype=torch.int64, pin_memory=True)
        self._word = self._flag.numpy()  # the same pinned word: a plain store, no torch dispatch
        self._ticket = 0

    def hold(self) -> None:
        """Enqueue a kernel that keeps the stream waiting until :meth:`release`."""
        self._ticket += 1
        with torch.cuda.device(self.device):
            _spin_until[(1,)](self._flag, self._ticket, self.max_polls, num_warps=1)

    def release(self) -> None:
        """Let the held stream run: everything up to here is enqueued."""
        self._word[0] = self._ticket


def gate_for(device: torch.device | None, host_bound: bool) -> HostGate | None:
    """A gate for event timing on a GPU; none for host-bound runs (they time the host on purpose)
    or on the CPU (the interpreter runs synchronously)."""
    if host_bound or device is None or device.type != "cuda":
        return None
    return HostGate(device)
