"""BlockingKernel: hold the GPU stream until the host has enqueued a whole timed region.

Event timing measures the device only if the device never waits for the host inside the timed
region. A step of several Python-launched kernels (a Triton launch costs tens of microseconds of
host time) can fall behind a device that has drained its queue: the interval then holds host
time, and a method's rounds turn bimodal. Before each timed region the runner enqueues a
kernel that spins on a pinned host word until the host writes the region's ticket, which it does
only after enqueuing the eviction, the start event, the invocation and the stop event (NVBench's
blocking kernel). The device then runs the eviction and the region back to back; any wait for
the host falls before the eviction, outside the measurement.

The spin gives up after ``MAX_WAIT_NS`` (the device's %globaltimer) and counts that: a timed
call that synchronises with the device inside the region (``.item()``, ``.cpu()``) would
otherwise stall behind its own gate. So would a kernel's first launch: with CUDA's lazy loading
the module load waits for the running kernels, i.e. for the gate (``scripts/probe_blocking_kernel.py``
checks this on a GPU). The runners warm every method up before timing, so only a call that
launches new kernels each time hits it. Runners warn when it happened; those times include host
time. (%globaltimer need not tick at the host clock's rate, so the bound in host time depends on
the GPU.) Where the timed spin cannot be compiled, a poll-counting one is used;
where neither can run (no pinned memory for Triton), there is no gate and the runner says so.
"""

from __future__ import annotations

import warnings

import torch

from kprof.core.target import configure_triton

# first: importing triton.language decorates Triton's own jit helpers (tl.rand4x ...), and whether
# they are interpreted is decided then, so TRITON_INTERPRET must be set before that
configure_triton()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

MAX_WAIT_NS = 1_000_000_000  # a host that never releases costs a second per region, not a hang
MAX_POLLS = 100_000_000  # the fallback's bound: of the order of MAX_WAIT_NS at a GPU's poll rate


@triton.jit
def _now_ns():
    return tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)


@triton.jit(do_not_specialize=["ticket"])
def _spin_timed(Flag, Expired, ticket, max_wait_ns):
    t0 = _now_ns()
    while (tl.load(Flag, volatile=True) < ticket) & (_now_ns() - t0 < max_wait_ns):
        pass
    if tl.load(Flag, volatile=True) < ticket:
        tl.atomic_add(Expired, 1)


@triton.jit(do_not_specialize=["ticket"])
def _spin_until(Flag, Expired, ticket, max_polls):
    polls = 0
    while (tl.load(Flag, volatile=True) < ticket) & (polls < max_polls):
        polls += 1
    if tl.load(Flag, volatile=True) < ticket:
        tl.atomic_add(Expired, 1)


class BlockingKernel:
    """A pinned ticket word, an expiry counter and the spin kernel that waits for the word."""

    def __init__(self, device: torch.device):
        self.device = device
        self._flag = torch.zeros(1, dtype=torch.int64, pin_memory=True)
        self._word = self._flag.numpy()  # the same pinned word: a plain store, no torch dispatch
        self._expired = torch.zeros(1, dtype=torch.int32, device=device)
        self._ticket = 0
        self._reported = 0
        self._spin = None
        errors = []
        for kernel, bound in ((_spin_timed, MAX_WAIT_NS), (_spin_until, MAX_POLLS)):
            try:  # a released ticket: must pass at once on this device and Triton
                self._spin, self._bound = kernel, bound
                self.hold()
                self.release()
                torch.cuda.synchronize(device)
                break
            except Exception as exc:  # noqa: BLE001 - any compile or launch failure: next kernel
                errors.append(f"{kernel.__name__}: {type(exc).__name__}: {exc}"[:200])
                self._spin = None
        if self._spin is None:
            raise RuntimeError("no spin kernel runs here: " + "; ".join(errors))

    @property
    def spin_kernel(self) -> str:
        """Which spin this device runs: ``_spin_timed`` (%globaltimer) or ``_spin_until`` (polls)."""
        return self._spin.__name__

    def hold(self) -> None:
        """Enqueue a kernel that keeps the stream waiting until :meth:`release`."""
        self._ticket += 1
        with torch.cuda.device(self.device):
            self._spin[(1,)](self._flag, self._expired, self._ticket, self._bound, num_warps=1)

    def release(self) -> None:
        """Let the held stream run: everything up to here is enqueued."""
        self._word[0] = self._ticket

    def new_expiries(self) -> int:
        """Regions whose gate gave up since the last call (read after a device sync)."""
        total = int(self._expired.item())
        new, self._reported = total - self._reported, total
        return new


def blocking_kernel_for(device: torch.device | None, host_bound: bool) -> BlockingKernel | None:
    """A gate for event timing on a GPU; none for host-bound runs (they time the host on purpose),
    on the CPU (the interpreter runs synchronously), or where no spin kernel can run (warned)."""
    if host_bound or device is None or device.type != "cuda":
        return None
    try:
        return BlockingKernel(device)
    except RuntimeError as exc:
        warnings.warn(f"timing without a host gate (event times may include host time): {exc}", stacklevel=2)
        return None
