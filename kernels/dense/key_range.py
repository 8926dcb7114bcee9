"""``attend_key_range``: one GQA group's online softmax over a contiguous range of keys.

The loop both dense decode kernels share. The G query heads of one KV head are held as one
[BLOCK_G, d] tile, so each K/V tile of ``BLOCK_N`` rows is loaded once for all G heads; the
result is the running max ``m``, mass ``l`` and weighted values ``acc`` of every head (base 2:
scores are pre-multiplied by log2(e)/sqrt(d)). ``EVEN`` drops the row masks when the range
holds whole tiles only.
"""

from __future__ import annotations

import triton
import triton.language as tl

from kprof.kernels.common.matmul import dot


@triton.jit
def attend_key_range(
    q, k_base, v_base, start, end, stride_kn, stride_vn, qk_scale_log2,
    BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_D: tl.constexpr,
    EVEN: tl.constexpr, DOT_PRECISION: tl.constexpr,
):
    offs_d = tl.arange(0, HEAD_D)
    m_i = tl.full([BLOCK_G], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_G], dtype=tl.float32)
    acc = tl.zeros([BLOCK_G, HEAD_D], dtype=tl.float32)
    for n0 in range(start, end, BLOCK_N):
        offs_n = n0 + tl.arange(0, BLOCK_N)
        if EVEN:
            k = tl.load(k_base + offs_n[:, None] * stride_kn + offs_d[None, :])
        else:
            k = tl.load(k_base + offs_n[:, None] * stride_kn + offs_d[None, :],
                        mask=(offs_n < end)[:, None], other=0.0)
        s = dot(q, tl.trans(k), DOT_PRECISION) * qk_scale_log2
        if not EVEN:
            s = tl.where((offs_n < end)[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        if EVEN:
            v = tl.load(v_base + offs_n[:, None] * stride_vn + offs_d[None, :])
        else:
            v = tl.load(v_base + offs_n[:, None] * stride_vn + offs_d[None, :],
                        mask=(offs_n < end)[:, None], other=0.0)
        acc = acc * alpha[:, None] + dot(p.to(v.dtype), v, DOT_PRECISION)
        m_i = m_new
    return m_i, l_i, acc
