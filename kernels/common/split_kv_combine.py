"""The split-softmax combine: partials of several key ranges (running max ``m``, mass ``l``,
weighted values ``acc`` per split) rescaled to a common max and normalised. ``combine_head`` does
one query head; the ``split_kv_combine`` launch runs it over column blocks of every head (the dense
split-KV decode, SANTA++'s reducer and Fathom's attention), and the one-launch dense decode calls it
from the last program of each KV head."""

from __future__ import annotations

from typing import Callable

import torch
import triton
import triton.language as tl

from kprof.kernels.common.bound_launch import bound_launch
from kprof.kernels.common.dependent_launch import release_dependents, wait_for_predecessor


@triton.jit
def combine_head(
    M_in, L_in, Acc_in, Out, h, num_splits,
    stride_mh, stride_ah, stride_as, stride_oh,
    BLOCK_S: tl.constexpr, HEAD_D: tl.constexpr, CHUNK_S: tl.constexpr = 0, SKIP_EMPTY: tl.constexpr = 0,
):
    """``HEAD_D`` columns from ``Acc_in`` / ``Out`` on. ``CHUNK_S``: read the [splits, d] values
    that many splits at a time (0: all at once), so a caller that inlines this into a larger kernel
    keeps its register count bounded. ``SKIP_EMPTY``: values are read only from splits whose max is
    finite (a split that saw no row adds nothing): fewer bytes where many splits are empty, but the
    value loads then wait for the max loads."""
    # .cg (L2 only): partials are read once, and in the one-launch decode they were written by
    # other programs of the same launch (its acquire on the counter orders the reads).
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, HEAD_D)
    s_mask = offs_s < num_splits
    m = tl.load(M_in + h * stride_mh + offs_s, mask=s_mask, other=float("-inf"), cache_modifier=".cg")
    mass = tl.load(L_in + h * stride_mh + offs_s, mask=s_mask, other=0.0, cache_modifier=".cg")
    m_max = tl.max(m, axis=0)
    w = tl.where(s_mask, tl.exp2(m - m_max), 0.0)
    denom = tl.sum(mass * w, axis=0)
    if CHUNK_S == 0:
        read = s_mask
        if SKIP_EMPTY:
            read = read & (m > float("-inf"))
        acc = tl.load(Acc_in + h * stride_ah + offs_s[:, None] * stride_as + offs_d[None, :],
                      mask=read[:, None], other=0.0, cache_modifier=".cg")
        out = tl.sum(acc * w[:, None], axis=0)
    else:
        out = tl.zeros([HEAD_D], dtype=tl.float32)
        for s0 in range(0, num_splits, CHUNK_S):
            offs_c = s0 + tl.arange(0, CHUNK_S)
            c_mask = offs_c < num_splits
            m_c = tl.load(M_in + h * stride_mh + offs_c, mask=c_mask, other=0.0, cache_modifier=".cg")
            w_c = tl.where(c_mask, tl.exp2(m_c - m_max), 0.0)
            read = c_mask
            if SKIP_EMPTY:
                read = read & (m_c > float("-inf"))
            acc = tl.load(Acc_in + h * stride_ah + offs_c[:, None] * stride_as + offs_d[None, :],
                          mask=read[:, None], other=0.0, cache_modifier=".cg")
            out += tl.sum(acc * w_c[:, None], axis=0)
    tl.store(Out + h * stride_oh + offs_d, (out / denom).to(Out.dtype.element_ty))


@triton.jit
def split_kv_combine(
    M_in, L_in, Acc_in, Out,
    num_splits,
    stride_mh, stride_ah, stride_as, stride_oh,
    BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr, PDL: tl.constexpr = False, SKIP_EMPTY: tl.constexpr = 0,
):
    """Grid (heads, d / BLOCK_D): program (h, c) combines columns [c·BLOCK_D, (c+1)·BLOCK_D) of
    head h. One program per head (BLOCK_D = d) leaves most SMs idle while each reads every split's
    partials in turn; column blocks spread that over more programs."""
    wait_for_predecessor(PDL)  # the partials come from the launch before
    release_dependents(PDL)
    d0 = tl.program_id(1) * BLOCK_D
    combine_head(M_in, L_in, Acc_in + d0, Out + d0, tl.program_id(0), num_splits,
                 stride_mh, stride_ah, stride_as, stride_oh, BLOCK_S, BLOCK_D, SKIP_EMPTY=SKIP_EMPTY)


def bound_combine(m: torch.Tensor, mass: torch.Tensor, acc: torch.Tensor, out: torch.Tensor, num_splits: int,
                  block_d: int, num_warps: int, pdl: bool = False, skip_empty: int = 0) -> Callable[[], None]:
    """``split_kv_combine`` bound over partials ``m``, ``mass`` [heads, splits] and ``acc`` [heads,
    splits, d] into ``out`` [heads, d]; a ``block_d`` above d is d. ``pdl``: launched as a
    programmatic dependent of the launch before."""
    heads, d = out.shape
    block_d = min(block_d, d)
    if d % block_d:
        raise ValueError(f"a combine by column blocks of {block_d} would leave columns of d = {d} unwritten")
    return bound_launch(
        split_kv_combine, (heads, d // block_d),
        m, mass, acc, out, num_splits,
        m.stride(0), acc.stride(0), acc.stride(1), out.stride(0),
        BLOCK_S=max(2, triton.next_power_of_2(num_splits)), BLOCK_D=block_d, PDL=pdl, SKIP_EMPTY=skip_empty,
        num_warps=num_warps, **({"launch_pdl": True} if pdl else {}),
    )
