"""Large host temporaries from a steady heap, so CPU timings do not depend on malloc's history.

glibc serves a block above its mmap threshold with fresh pages, each first touch a page fault and
a zero fill, and raises that threshold as such blocks are freed. A CPU call that allocates
megabytes (SDPA math expands K and V for grouped queries: 15 MB a call at ``cpu-smoke``) then
times 2 ms in one process and 8 ms in the next, depending on what ran before it. Fixing the mmap
threshold at glibc's largest (which also stops its adjustment) and keeping freed memory on the
heap serves such blocks from reused pages in every process: the times repeat from run to run.
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 32 << 20  # glibc's largest on 64-bit: blocks above it are still mapped afresh
TRIM_THRESHOLD = 1 << 30  # free memory at the heap's top is kept up to this, not returned


def steady_heap() -> bool:
    """Apply both thresholds to this process's malloc (glibc only; True when applied)."""
    name = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(name).mallopt if name else None
    except (OSError, AttributeError):
        mallopt = None
    if mallopt is None:
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    mapped = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    trimmed = mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    return bool(mapped) and bool(trimmed)
