"""Exact top-k *sets* by radix select: a few masked counts per row instead of a bitonic sort.

A bitonic sort of C keys costs log2(C)(log2(C)+1)/2 exchange stages, each a shuffle or a shared-
memory round trip. Selecting the k-th largest value digit by digit costs 32/DIGIT passes, each
one reduction of a [C, 2^DIGIT] comparison: at C = 1024 and DIGIT = 2 that is 16 reductions
against 55 exchange stages. The set comes out unordered; callers that need an order sort the k
survivors only.
"""

from __future__ import annotations

import triton
import triton.language as tl

_SIGN = tl.constexpr(-2147483648)  # int32 with only the sign bit: xor maps unsigned order to signed order


@triton.jit
def kth_largest(v, k, valid, DIGIT: tl.constexpr):
    """Per row of ``v`` [R, C] (int32, signed order): the k-th largest value among ``valid``.

    ``k`` [R] must not exceed each row's count of valid entries. The answer is built in the
    unsigned image (v xor sign bit), DIGIT bits per pass from the top: a candidate digit b is kept
    while at least k valid values are >= the prefix extended by b.
    """
    digits = tl.arange(0, 1 << DIGIT)
    prefix = k * 0  # unsigned image of the answer, bits decided so far
    for i in tl.static_range(32 // DIGIT):
        cand = (prefix[:, None] | (digits[None, :] << (32 - DIGIT * (i + 1)))) ^ _SIGN  # [R, B], signed
        hit = valid[:, :, None] & (v[:, :, None] >= cand[:, None, :])
        count = tl.sum(hit.to(tl.int32), axis=1)  # [R, B], non-increasing in b
        best = tl.sum((count >= k[:, None]).to(tl.int32), axis=1) - 1
        prefix = prefix | (best << (32 - DIGIT * (i + 1)))
    return prefix ^ _SIGN


@triton.jit
def select_top(keys, k, row_ok, DIGIT: tl.constexpr):
    """Mask of the k largest int64 sort keys in each row of ``keys`` [R, C] (keys unique per row).

    The high word (the score image) is selected first; only a row with ties on it at the k-th
    place (rare: Gumbel-perturbed scores) pays a second select on the low word (the team index),
    so the set equals "sort descending, keep k" exactly. Rows where ``row_ok`` is false are
    padding: their result is unspecified and they never trigger the second pass.
    """
    hi = (keys >> 32).to(tl.int32)
    lo = ((keys & 0xFFFFFFFF) - 2147483648).to(tl.int32)  # the unsigned low word, in signed order
    k = (row_ok.to(tl.int32) * 0) + k
    kth = kth_largest(hi, k, hi == hi, DIGIT)
    above = hi > kth[:, None]
    tie = hi == kth[:, None]
    need = k - tl.sum(above.to(tl.int32), axis=1)
    excess = tl.where(row_ok, tl.sum(tie.to(tl.int32), axis=1) - need, 0)
    lo_min = k * 0 + _SIGN  # no second pass: every tied key is kept
    if tl.max(excess, axis=0) > 0:
        lo_min = kth_largest(lo, tl.maximum(need, 1), tie, DIGIT)
    return above | (tie & (lo >= lo_min[:, None]))
