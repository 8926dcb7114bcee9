"""L2 prefetch from inside a kernel, for tables a later dependent load will want.

In a chain of short launches each dependent global load is a round trip on the critical path, and
after an eviction the first touch of a table is a DRAM miss. A kernel that knows which table its
post-wait code will read (but not which entries) can pull the whole table into L2 during its
PDL prologue, while the previous launch still runs: ``prefetch.global.L2`` per cache line, no
registers held, no result to wait for.

The interpreter has no inline PTX, so :func:`prefetch_l2` compiles to nothing unless the ``ON``
constexpr is set; a prefetch never changes a result, only where the data sits.
"""

from __future__ import annotations

import triton
import triton.language as tl

LINE_BYTES = 128  # what one prefetch brings in: an L2 cache line


def lines_for(n: int, elem_bytes: int) -> int:
    """The LINES constexpr that covers a table of ``n`` elements (a power of two for tl.arange)."""
    return triton.next_power_of_2(max(1, triton.cdiv(n * elem_bytes, LINE_BYTES)))


@triton.jit
def prefetch_l2(ptrs, mask, ON: tl.constexpr):
    """Prefetch the lines at ``ptrs`` (masked off where ``mask`` is false) into L2."""
    if ON:
        tl.inline_asm_elementwise(
            "{ .reg .pred p; setp.ne.b32 p, $2, 0; @p prefetch.global.L2 [$1]; mov.u32 $0, 0; }",
            "=r,l,r", [ptrs, mask.to(tl.int32)], dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def prefetch_table_l2(Table, n, LINES: tl.constexpr, ON: tl.constexpr):
    """Prefetch the ``n`` elements from ``Table`` into L2, one line per program thread."""
    if ON:
        step: tl.constexpr = 8 * 128 // Table.dtype.element_ty.primitive_bitwidth  # elements per line
        offs = tl.arange(0, LINES) * step
        prefetch_l2(Table + offs, offs < n, ON)
