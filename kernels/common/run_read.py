"""``RunRead``: a launch that reads many short, separate runs of one buffer once each: what a read
request costs, where the buffer is pinned host memory read over PCIe.

Fathom's fused scan reads host memory in runs of 256 bytes (one plane's words for a tile) and
64 bytes (the tile's scales for a channel); a GPU's reads of host memory leave as requests of at
most one 128-byte line. Whether a run costs its bytes or its requests decides which index layouts
could bring the scan nearer to one large copy, so the probe (``scripts/probe_host_requests.py``)
times runs of several sizes at one count. Run r starts ``r * stride`` words in; in each step every
program reads ``per_step`` runs, program p those numbered p, p + programs, ... from the step's
first, so the programs sweep the buffer in order as the scan's workers do, neighbouring runs go to
neighbouring programs (as two tiles' halves of one 128-byte scale line go to two workers), and the
sum of ``out`` is checkable: every run read once.
"""

from __future__ import annotations

import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def run_read(Src, Out, runs, stride, WORDS: tl.constexpr, PER_STEP: tl.constexpr):
    p = tl.program_id(0)
    programs = tl.num_programs(0)
    acc = tl.zeros([PER_STEP, WORDS], dtype=tl.int32)
    offs_w = tl.arange(0, WORDS)
    for s0 in range(0, runs, programs * PER_STEP):  # a step: every program's PER_STEP runs, in memory order
        r = s0 + tl.arange(0, PER_STEP) * programs + p  # neighbouring runs belong to neighbouring programs
        live = r < runs
        acc += tl.load(Src + r.to(tl.int64)[:, None] * stride + offs_w[None, :], mask=live[:, None], other=0)
    tl.store(Out + p, tl.sum(tl.sum(acc, axis=1), axis=0))


def _touched(runs: int, run_bytes: int, stride_bytes: int, size: int) -> int:
    """Distinct ``size``-byte blocks that runs of ``run_bytes``, ``stride_bytes`` apart, touch."""
    starts = np.arange(runs, dtype=np.int64) * stride_bytes
    first, last = starts // size, (starts + run_bytes - 1) // size
    span = int((last - first).max()) + 1  # the most blocks one run touches
    blocks = np.concatenate([first + k for k in range(span)])
    return int(np.unique(blocks[blocks <= np.tile(last, span)]).size)


class RunRead:
    """Reads ``runs`` runs of ``run_bytes`` (a power of two, at least 4) from the int32 buffer
    ``src``, ``stride_bytes`` apart, in ``programs`` programs of ``num_warps`` warps; ``out``
    lives on ``device`` (the GPU when ``src`` is pinned host memory). Keep ``src``'s values small
    (the programs sum them in int32)."""

    def __init__(self, src: torch.Tensor, runs: int, run_bytes: int, stride_bytes: int, programs: int,
                 per_step: int = 8, num_warps: int = 4, device: torch.device | str | None = None):
        if src.dtype != torch.int32 or src.dim() != 1:
            raise ValueError(f"src must be a flat int32 buffer, not {tuple(src.shape)} {src.dtype}")
        if run_bytes < 4 or run_bytes & (run_bytes - 1):
            raise ValueError(f"run_bytes={run_bytes}: use a power of two of at least 4 bytes (whole int32 words)")
        if stride_bytes % 4 or stride_bytes < run_bytes:
            raise ValueError(f"stride_bytes={stride_bytes}: use whole int32 words, at least run_bytes={run_bytes}")
        if per_step < 1 or per_step & (per_step - 1):
            raise ValueError(f"per_step={per_step}: use a power of two")
        self.words, self.stride = run_bytes // 4, stride_bytes // 4
        if runs < 1 or (runs - 1) * self.stride + self.words > src.numel():
            raise ValueError(f"{runs} runs of {run_bytes} bytes {stride_bytes} bytes apart need "
                             f"{((runs - 1) * self.stride + self.words) * 4} bytes; the buffer holds {src.numel() * 4}")
        self.src, self.runs, self.run_bytes = src, runs, run_bytes
        self.programs = max(1, min(programs, triton.cdiv(runs, per_step)))
        self.per_step, self.num_warps = per_step, num_warps
        self.out = torch.empty(self.programs, dtype=torch.int32, device=device or src.device)
        self.bytes = runs * run_bytes
        # the 128-byte lines and 32-byte sectors the runs touch, in a buffer that starts on a line
        self.lines, self.sectors = (_touched(runs, run_bytes, stride_bytes, size) for size in (128, 32))

    def run(self) -> torch.Tensor:
        run_read[(self.programs,)](self.src, self.out, self.runs, self.stride, WORDS=self.words,
                                   PER_STEP=self.per_step, num_warps=self.num_warps)
        return self.out

    def expected_sum(self) -> int:
        """What the programs' sums add to if every run was read once."""
        need = self.runs * self.stride
        flat = self.src[:need] if self.src.numel() >= need else torch.nn.functional.pad(
            self.src, (0, need - self.src.numel()))
        return int(flat.view(self.runs, self.stride)[:, : self.words].sum(dtype=torch.int64))
