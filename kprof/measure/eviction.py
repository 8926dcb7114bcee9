"""The L2 eviction buffer read and written before each measured invocation.

Decode kernels read their inputs once, so timing them back to back with warm caches measures the
L2 instead of HBM (a 64 MiB K/V cache mostly fits in a 50-60 MiB L2 after compression tricks and
repeated runs). One in-place kernel over a buffer several times the L2 pushes the inputs out.

That kernel (the paper's protocol) leaves L2 full of dirty lines, so the timed call that follows
also pays their write-back to HBM as its reads evict them: up to an L2's worth of writes, which
a memory-bound call of tens of MiB feels. ``mode="read"`` evicts with a reduction that only
reads the buffer, so L2 holds clean lines, as it does in a decode step after the weight reads.
"""

from __future__ import annotations

import warnings

import torch

from kprof.measure.protocol import EVICTION_MODES

DEFAULT_MIB = 512
MIN_L2_MULTIPLE = 8


class EvictionBuffer:
    """A buffer of ``max(requested, 8 x L2)`` bytes; :meth:`evict` reads and writes all of it in one
    launch, or with ``mode="read"`` reads it only."""

    def __init__(self, device: torch.device, mib: int = DEFAULT_MIB, mode: str = "read-write"):
        if mode not in EVICTION_MODES:
            raise ValueError(f"eviction mode must be one of {EVICTION_MODES}, got {mode!r}")
        self.device, self.mode = device, mode
        requested = mib * 2**20
        floor = MIN_L2_MULTIPLE * _l2_bytes(device)
        size = max(requested, floor)
        if device.type == "cuda":
            free, _ = torch.cuda.mem_get_info(device)
            budget = int(free * 0.5)
            if size > budget:
                warnings.warn(
                    f"eviction buffer cut from {size >> 20} MiB to {budget >> 20} MiB: only {free >> 20} MiB free",
                    stacklevel=2,
                )
                size = budget
        self.nbytes = size - size % 4
        self.requested_bytes = requested
        self.l2_bytes = floor // MIN_L2_MULTIPLE
        self._buf = torch.ones(self.nbytes // 4, dtype=torch.int32, device=device)
        self._sink = torch.empty((), dtype=torch.int32, device=device)

    @property
    def mib(self) -> float:
        return self.nbytes / 2**20

    def evict(self) -> None:
        """One kernel: an in-place add that reads and writes every byte (2 x nbytes of traffic), or
        in ``read`` mode a max-reduction into one word (nbytes read, nothing left dirty)."""
        if self.mode == "read":
            torch.amax(self._buf, dim=0, out=self._sink)
        else:
            self._buf.add_(1)


def _l2_bytes(device: torch.device) -> int:
    if device.type != "cuda":
        return 0
    return int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0))
