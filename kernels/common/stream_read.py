"""``StreamRead``: a launch that only reads two tensors once, the practical floor of a dense decode.

A decode call moves its K and V after an eviction kernel, so what it can reach at its size is a
fixed cost per call plus bytes over bandwidth; the 2 GiB copy-peak probe hides the fixed part.
Program p sums its contiguous range of both tensors (flat) into ``out[p]``, so the sum of ``out``
is checkable and every byte is read exactly once. ``empty`` launches the same grid and reads
nothing: the launch alone.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def stream_read(A, B, Out, total, chunk, BLOCK: tl.constexpr, EMPTY: tl.constexpr, EVICT: tl.constexpr = 0):
    p = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    if not EMPTY:
        lo = p.to(tl.int64) * chunk
        for start in range(0, chunk, BLOCK):
            offs = lo + start + tl.arange(0, BLOCK)
            live = offs < total
            a = tl.load(A + offs, mask=live, other=0.0, eviction_policy="evict_first" if EVICT else "")
            b = tl.load(B + offs, mask=live, other=0.0, eviction_policy="evict_first" if EVICT else "")
            acc += a.to(tl.float32) + b.to(tl.float32)
    tl.store(Out + p, tl.sum(acc, axis=0))


class StreamRead:
    """Reads the first ``fraction`` of ``a`` and ``b`` (same size) in ``programs`` programs of
    ``num_warps`` warps, ``block`` elements of each per step (``num_stages`` > 1 lets Triton
    pipeline the steps' loads). ``evict``: the loads are marked evict-first in L2."""

    def __init__(self, a: torch.Tensor, b: torch.Tensor, fraction: float = 1.0, programs: int = 528,
                 block: int = 4096, empty: bool = False, num_warps: int = 4, num_stages: int = 1,
                 evict: bool = False):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise ValueError(f"a {tuple(a.shape)} {a.dtype} and b {tuple(b.shape)} {b.dtype} differ")
        self.a, self.b = a.contiguous().reshape(-1), b.contiguous().reshape(-1)
        self.total = max(1, int(self.a.numel() * fraction))
        self.chunk = triton.cdiv(triton.cdiv(self.total, programs), block) * block
        self.programs = triton.cdiv(self.total, self.chunk)
        self.block, self.empty, self.num_warps, self.num_stages = block, empty, num_warps, num_stages
        self.evict = evict
        self.out = torch.empty(self.programs, dtype=torch.float32, device=a.device)
        self.bytes = 0 if empty else 2 * self.total * a.element_size()

    def run(self) -> torch.Tensor:
        stream_read[(self.programs,)](self.a, self.b, self.out, self.total, self.chunk, BLOCK=self.block,
                                      EMPTY=self.empty, EVICT=int(self.evict), num_warps=self.num_warps,
                                      num_stages=self.num_stages)
        return self.out

    def expected_sum(self) -> float:
        """What the programs' sums add to if every byte in range was read once (fp64)."""
        return float(self.a[: self.total].double().sum() + self.b[: self.total].double().sum())
