"""``attend_key_range``: one GQA group's online softmax over a contiguous range of keys.

The loop both dense decode kernels share. The G query heads of one KV head are held as one
[BLOCK_G, d] tile, so each K/V tile of ``BLOCK_N`` rows is loaded once for all G heads; the
result is the running max ``m``, mass ``l`` and weighted values ``acc`` of every head (base 2:
scores are pre-multiplied by log2(e)/sqrt(d)). ``EVEN`` drops the row masks when the range
holds whole tiles only. Tiles come by per-thread pointers or, with ``TMA``, by the Hopper
tensor-memory accelerator (one bulk copy per tile, no per-thread address arithmetic).

``BODY`` is for the loop probe (``scripts/probe_read_floor.py --loop``) only: 1 keeps the loads, their
shared-memory pipeline and the two dots but drops the online softmax, so the probe can tell what
the softmax adds to the loop. It does not compute attention. (A body without the dots would take
the loads off the pipeline: Triton stages only loads that feed a dot through shared memory.)
"""

from __future__ import annotations

import triton
import triton.language as tl

from kprof.kernels.common.matmul import dot


@triton.jit
def _online_step(q, k, v, m_i, l_i, acc, valid, qk_scale_log2, EVEN: tl.constexpr, DOT_PRECISION: tl.constexpr):
    """Fold one tile of keys ``k`` and values ``v`` into the running max, mass and values."""
    s = dot(q, tl.trans(k), DOT_PRECISION) * qk_scale_log2
    if not EVEN:
        s = tl.where(valid[None, :], s, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(s, axis=1))
    alpha = tl.exp2(m_i - m_new)
    p = tl.exp2(s - m_new[:, None])
    l_i = l_i * alpha + tl.sum(p, axis=1)
    acc = acc * alpha[:, None] + dot(p.to(v.dtype), v, DOT_PRECISION)
    return m_new, l_i, acc


@triton.jit
def _probe_step(q, k, v, acc, qk_scale_log2, DOT_PRECISION: tl.constexpr):
    """``BODY`` 1: the two dots of ``_online_step`` without its max, exponentials and rescaling."""
    s = dot(q, tl.trans(k), DOT_PRECISION) * qk_scale_log2
    return acc + dot(s.to(v.dtype), v, DOT_PRECISION)


@triton.jit
def _load_tile(k_base, v_base, offs_n, offs_d, valid, stride_kn, stride_vn, EVEN: tl.constexpr, EVICT: tl.constexpr):
    """K and V rows ``offs_n`` (rows not ``valid`` read as zeros unless ``EVEN``)."""
    if EVEN:
        k = tl.load(k_base + offs_n[:, None] * stride_kn + offs_d[None, :],
                    eviction_policy="evict_first" if EVICT else "")
        v = tl.load(v_base + offs_n[:, None] * stride_vn + offs_d[None, :],
                    eviction_policy="evict_first" if EVICT else "")
    else:
        k = tl.load(k_base + offs_n[:, None] * stride_kn + offs_d[None, :], mask=valid[:, None], other=0.0,
                    eviction_policy="evict_first" if EVICT else "")
        v = tl.load(v_base + offs_n[:, None] * stride_vn + offs_d[None, :], mask=valid[:, None], other=0.0,
                    eviction_policy="evict_first" if EVICT else "")
    return k, v


@triton.jit
def attend_key_range(
    q, k_base, v_base, start, end, stride_kn, stride_vn, qk_scale_log2,
    BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_D: tl.constexpr,
    EVEN: tl.constexpr, DOT_PRECISION: tl.constexpr, EVICT: tl.constexpr = 0, PREFETCH: tl.constexpr = 0,
    BODY: tl.constexpr = 0,
):
    """``EVICT``: K and V loads marked evict-first (an int: Triton 3.6 rejects a string constexpr
    defaulted in a nested call). ``PREFETCH``: the next tile's loads are
    issued into registers before this tile's arithmetic (plain loads, one tile in flight per
    program; for ``num_stages=1``, where Triton pipelines nothing). ``BODY``: 0 the decode, 1 the
    probe's (module docstring)."""
    tl.static_assert((BODY == 0) | (BODY == 1), "BODY is 0 (the decode) or 1 (the loop probe's dots alone)")
    offs_d = tl.arange(0, HEAD_D)
    m_i = tl.full([BLOCK_G], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_G], dtype=tl.float32)
    acc = tl.zeros([BLOCK_G, HEAD_D], dtype=tl.float32)
    if PREFETCH:
        offs_n = start + tl.arange(0, BLOCK_N)
        k, v = _load_tile(k_base, v_base, offs_n, offs_d, offs_n < end, stride_kn, stride_vn, False, EVICT)
        for n0 in range(start, end, BLOCK_N):
            valid = n0 + tl.arange(0, BLOCK_N) < end
            offs_next = n0 + BLOCK_N + tl.arange(0, BLOCK_N)
            k_next, v_next = _load_tile(k_base, v_base, offs_next, offs_d, offs_next < end, stride_kn, stride_vn,
                                        False, EVICT)
            if BODY == 0:
                m_i, l_i, acc = _online_step(q, k, v, m_i, l_i, acc, valid, qk_scale_log2, EVEN, DOT_PRECISION)
            else:
                acc = _probe_step(q, k, v, acc, qk_scale_log2, DOT_PRECISION)
            k, v = k_next, v_next
    else:
        for n0 in range(start, end, BLOCK_N):
            offs_n = n0 + tl.arange(0, BLOCK_N)
            valid = offs_n < end
            k, v = _load_tile(k_base, v_base, offs_n, offs_d, valid, stride_kn, stride_vn, EVEN, EVICT)
            if BODY == 0:
                m_i, l_i, acc = _online_step(q, k, v, m_i, l_i, acc, valid, qk_scale_log2, EVEN, DOT_PRECISION)
            else:  # masked rows load as zeros, so they add nothing to the probe's body
                acc = _probe_step(q, k, v, acc, qk_scale_log2, DOT_PRECISION)
    return m_i, l_i, acc


@triton.jit
def attend_key_range_tma(
    q, k_desc, v_desc, row0, start, end, qk_scale_log2,
    BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_D: tl.constexpr,
    EVEN: tl.constexpr, DOT_PRECISION: tl.constexpr,
):
    """The same loop with K/V tiles loaded through tensor descriptors over ``[Hkv*N, d]`` (rows of
    this KV head start at ``row0``). Rows past ``end`` belong to the next split or head, or lie
    outside the tensor (read as zeros); their scores are masked, so they weigh nothing."""
    m_i = tl.full([BLOCK_G], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_G], dtype=tl.float32)
    acc = tl.zeros([BLOCK_G, HEAD_D], dtype=tl.float32)
    for n0 in range(start, end, BLOCK_N):
        valid = n0 + tl.arange(0, BLOCK_N) < end
        k = k_desc.load([row0 + n0, 0])
        v = v_desc.load([row0 + n0, 0])
        m_i, l_i, acc = _online_step(q, k, v, m_i, l_i, acc, valid, qk_scale_log2, EVEN, DOT_PRECISION)
    return m_i, l_i, acc


@triton.jit
def group_partials(
    Q, K, V, M_ws, L_ws, Acc_ws, kvh, split, start, end, qk_scale_log2,
    stride_qh, stride_kh, stride_kn, stride_vh, stride_vn, stride_mh, stride_ah, stride_as,
    GROUP: tl.constexpr, BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_D: tl.constexpr,
    EVEN: tl.constexpr, DOT_PRECISION: tl.constexpr, TMA: tl.constexpr = False, N=0, EVICT: tl.constexpr = 0,
    PREFETCH: tl.constexpr = 0, BODY: tl.constexpr = 0,
):
    """One program's whole share: load KV head ``kvh``'s G queries, attend keys ``[start, end)``
    and store the partials of split ``split`` for each of the G heads (``EVICT``, ``PREFETCH`` and
    ``BODY``: as ``attend_key_range``; pointer loads only)."""
    offs_g = tl.arange(0, BLOCK_G)
    offs_d = tl.arange(0, HEAD_D)
    head_mask = offs_g < GROUP
    heads = kvh * GROUP + offs_g
    q = tl.load(Q + heads[:, None] * stride_qh + offs_d[None, :], mask=head_mask[:, None], other=0.0)
    if TMA:  # K and V are tensor descriptors over [Hkv*N, d]
        m_i, l_i, acc = attend_key_range_tma(q, K, V, kvh * N, start, end, qk_scale_log2,
                                             BLOCK_G, BLOCK_N, HEAD_D, EVEN, DOT_PRECISION)
    else:
        m_i, l_i, acc = attend_key_range(
            q, K + kvh.to(tl.int64) * stride_kh, V + kvh.to(tl.int64) * stride_vh, start, end, stride_kn, stride_vn,
            qk_scale_log2,
            BLOCK_G, BLOCK_N, HEAD_D, EVEN, DOT_PRECISION, EVICT, PREFETCH, BODY)
    tl.store(M_ws + heads * stride_mh + split, m_i, mask=head_mask)
    tl.store(L_ws + heads * stride_mh + split, l_i, mask=head_mask)
    tl.store(Acc_ws + heads[:, None] * stride_ah + split * stride_as + offs_d[None, :], acc,
             mask=head_mask[:, None])
