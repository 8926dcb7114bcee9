"""Fathom reference (CPU): 4-bit bit-plane key store, prefix dequantisation, water-filling plan.

Stable API (tests and users rely on these names): ``quantize``, ``pack_planes``,
``dequantize_prefix``, ``importance``, ``water_fill``, ``scan_bits`` (Fathom §3.2-3.3, §4).

Layout conventions (shared with the Triton kernels):

* codes ``[n, d]`` uint8 in 0..15, ``c = clip(floor(k / (a/8)), -8, 7) + 8`` with ``a`` the
  fp16 block absmax of the channel (code 8 is zero, the MSB is the sign);
* scales ``[d, n_blocks]`` fp16, channel-major;
* planes ``[d, 4, n_blocks]`` holding uint64 bit patterns in int64: plane p (0 = MSB) of block
  b of channel j has bit i set when bit (3 - p) of the code of token ``64 b + i`` is set. The
  first t planes of channel j over the whole sequence, ``planes[j, :t]``, are one contiguous
  run of ``t * n_blocks * 8 = t n / 8`` bytes (padded to whole blocks).
"""

from __future__ import annotations

import math

import numpy as np
import torch

BLOCK = 64
PLANES = 4
SCALE_BITS = 16


def quantize(k: torch.Tensor, block: int = BLOCK) -> tuple[torch.Tensor, torch.Tensor]:
    """4-bit codes ``[n, d]`` (uint8) and fp16 block scales ``[d, n_blocks]`` of keys ``k [n, d]``.

    The scale is rounded to fp16 first and the codes are computed from the rounded scale, so the
    stored (code, scale) pair dequantises exactly as the kernels will see it.
    """
    n, d = k.shape
    nb = math.ceil(n / block)
    x = torch.zeros(nb * block, d, dtype=torch.float64)
    x[:n] = k.detach().to("cpu", torch.float64)
    xb = x.view(nb, block, d)
    a = xb.abs().amax(dim=1).to(torch.float16).to(torch.float64)  # [nb, d]
    s = (a / 8).clamp_min(1e-30)
    codes = torch.floor(xb / s[:, None, :]).clamp(-8, 7) + 8
    codes = torch.where(a[:, None, :] == 0, torch.full_like(codes, 8), codes)
    return codes.reshape(nb * block, d)[:n].to(torch.uint8), a.to(torch.float16).T.contiguous()


def pack_planes(codes: torch.Tensor, block: int = BLOCK) -> torch.Tensor:
    """Channel-major bit planes ``[d, 4, n_blocks]`` (uint64 patterns in int64) of ``codes [n, d]``."""
    if block != 64:
        raise ValueError("planes are 64-bit words: block must be 64")
    n, d = codes.shape
    nb = math.ceil(n / block)
    c = np.full((nb * block, d), 8, dtype=np.uint64)  # padding tokens carry code 8 (zero)
    c[:n] = codes.numpy().astype(np.uint64)
    c = c.reshape(nb, block, d)
    weights = np.left_shift(np.uint64(1), np.arange(block, dtype=np.uint64))  # bit i <- token i
    planes = np.empty((d, PLANES, nb), dtype=np.uint64)
    for p in range(PLANES):
        bits = (c >> np.uint64(PLANES - 1 - p)) & np.uint64(1)  # [nb, block, d]
        planes[:, p, :] = (bits * weights[None, :, None]).sum(axis=1, dtype=np.uint64).T
    return torch.from_numpy(planes.view(np.int64))


def unpack_planes(planes: torch.Tensor, n: int, depths: torch.Tensor | None = None) -> torch.Tensor:
    """Prefix codes ``c >> (4 - t_j)`` ``[n, d]`` read from the first ``t_j`` planes of each channel."""
    d, _, nb = planes.shape
    depths = torch.full((d,), PLANES, dtype=torch.int64) if depths is None else depths.to(torch.int64)
    p = planes.numpy().view(np.uint64)
    bit = np.arange(BLOCK, dtype=np.uint64)
    out = np.zeros((nb * BLOCK, d), dtype=np.int64)
    for j in range(d):
        t = int(depths[j])
        acc = np.zeros((nb, BLOCK), dtype=np.int64)
        for q in range(t):  # only the first t planes are read
            acc = (acc << 1) | ((p[j, q][:, None] >> bit[None, :]) & np.uint64(1)).astype(np.int64)
        out[:, j] = acc.reshape(-1)
    return torch.from_numpy(out[:n])


def dequantize_prefix(codes_or_planes: torch.Tensor, scales: torch.Tensor, depths: torch.Tensor,
                      n: int | None = None) -> torch.Tensor:
    """Values ``[n, d]`` (fp64) of the t_j-plane prefix of every channel: the t-bit mid-rise quantiser.

    ``(c >> (4 - t) + 1/2 - 2^(t-1)) * a / 2^(t-1)`` for t >= 1, and 0 for channels with t = 0.
    Accepts 4-bit codes ``[n, d]`` or planes ``[d, 4, n_blocks]`` (then ``n`` is required).
    """
    depths = depths.to(torch.int64).cpu()
    if codes_or_planes.dim() == 3:
        if n is None:
            raise ValueError("n (tokens) is required when dequantising from planes")
        prefix = unpack_planes(codes_or_planes, n, depths).to(torch.float64)
    else:
        n = codes_or_planes.shape[0]
        prefix = (codes_or_planes.to(torch.int64) >> (PLANES - depths.clamp(min=1))[None, :]).to(torch.float64)
    a = scales.to(torch.float64).T.repeat_interleave(BLOCK, dim=0)[:n]  # [n, d]
    half = torch.pow(2.0, (depths - 1).clamp(min=0).to(torch.float64))  # 2^(t-1)
    values = (prefix + 0.5 - half[None, :]) * a / half[None, :]
    return torch.where(depths[None, :] > 0, values, torch.zeros_like(values))


def importance(q_group: torch.Tensor, var: torch.Tensor) -> torch.Tensor:
    """Equation 3: ``g_j = sum_h (q_j^(h))^2 Var(k_j)`` over the G query heads of a group."""
    q = q_group.to(torch.float64)
    return (q * q).sum(dim=0) * var.to(torch.float64)


def depths_at(g: torch.Tensor, theta: float) -> torch.Tensor:
    """Equation 4's depths at water line ``theta``: clip(round(log4(g/theta)), 0, 4), half rounding up."""
    x = torch.log(g.to(torch.float64) / theta) / math.log(4.0)  # g = 0 gives -inf: depth 0
    return torch.floor(x + 0.5).clamp(0, PLANES).nan_to_num(0).to(torch.int64)


def water_fill(g: torch.Tensor, budget_bits: float, steps: int = 30, lo: float | None = None,
               hi: float | None = None) -> tuple[torch.Tensor, float]:
    """Smallest water line theta whose depths fit ``sum t_j <= budget_bits``: bisection on log theta.

    The bracket defaults to ``[min(g>0) 4^-5, max(g) 4]``, where the depths are all 4 and all 0.
    Returns the depths at the final upper end (which always fits) and that theta.
    """
    g = g.to(torch.float64)
    pos = g[g > 0]
    if pos.numel() == 0:
        return torch.zeros_like(g, dtype=torch.int64), float("inf")
    lo = float(pos.min()) * 4.0**-5 if lo is None else lo
    hi = float(pos.max()) * 4.0 if hi is None else hi
    for _ in range(steps):
        mid = math.sqrt(lo * hi)
        if int(depths_at(g, mid).sum()) > budget_bits:
            lo = mid
        else:
            hi = mid
    return depths_at(g, hi), hi


def scan_bits(depths: torch.Tensor, block: int = BLOCK) -> float:
    """Bits per token: code bits read plus 16 bits per ``block`` tokens for each active channel's scale."""
    t = depths.to(torch.int64)
    return float(t.sum()) + SCALE_BITS / block * int((t > 0).sum())


def approximate_scores(q: torch.Tensor, planes: torch.Tensor, scales: torch.Tensor, depths: torch.Tensor,
                       n: int) -> torch.Tensor:
    """Scores ``[H, n]`` of query heads ``q [H, d]`` against the depth-t prefix of every key."""
    return q.to(torch.float64) @ dequantize_prefix(planes, scales, depths, n).T
