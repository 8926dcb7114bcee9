"""A kernel that prefetches a table into L2, then sums it (for tests/kernels/test_prefetch.py)."""

import triton
import triton.language as tl

from kprof.kernels.prefetch import prefetch_table_l2


@triton.jit
def probe(T, n, Out, ON: tl.constexpr):
    prefetch_table_l2(T, n, 256, ON)
    acc = tl.zeros([1024], dtype=tl.int32)
    for i in range(0, n, 1024):
        offs = i + tl.arange(0, 1024)
        acc += tl.load(T + offs, mask=offs < n, other=0)
    tl.store(Out, tl.sum(acc, axis=0))
