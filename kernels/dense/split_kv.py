"""Split-KV (flash-decoding) dense decode attention: two launches.

``partial``: grid (Hkv, splits). One program owns one KV head and one contiguous range of
keys and runs ``attend_key_range`` over it for the G query heads of that group, so each K/V
byte is read once for all G heads. ``combine``: grid (Hq,). Rescales the split
partials of one head to a common max and normalises.

Bytes: K and V once (2·Hkv·N·d·itemsize) plus fp32 partials (Hq·splits·(d+2)·4, written and
read once). The KV term is the floor at long context.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kprof.core.config_space import Constraint, LaunchConfig, LaunchSpace, Param
from kprof.kernels.common.bound_launch import bound_launch
from kprof.kernels.common.split_kv_combine import split_kv_combine
from kprof.kernels.dense.key_range import attend_key_range

_SMEM_BYTES = 227 * 1024  # H100/H200 per-block maximum; Triton reports OutOfResources beyond it


def tiles_fit_smem(cfg, shape) -> bool:
    itemsize = 4 if shape.dtype == "fp32" else 2
    return 2 * cfg["BLOCK_N"] * shape.d * itemsize * max(1, cfg["num_stages"]) <= _SMEM_BYTES


LAUNCH_SPACES = {
    "partial": LaunchSpace(
        launch="partial",
        params=(
            Param("BLOCK_N", (16, 32, 64, 128, 256), 64, "keys per tile"),
            Param("NUM_SPLITS", (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256), 64,
                  "upper bound on KV splits per head; each split is a multiple of BLOCK_N"),
            Param("num_warps", (1, 2, 4, 8), 4),
            Param("num_stages", (1, 2, 3, 4), 3),
        ),
        constraints=(
            Constraint("K and V tiles of all pipeline stages must fit in 227 KiB of shared memory", tiles_fit_smem),
        ),
    ),
    "combine": LaunchSpace(
        launch="combine",
        params=(Param("num_warps", (1, 2, 4, 8), 2),),
    ),
}


@triton.jit
def _split_kv_partial(
    Q, K, V, M_out, L_out, Acc_out,
    N, split_len, qk_scale_log2,
    stride_qh, stride_kh, stride_kn, stride_vh, stride_vn,
    stride_mh, stride_ah, stride_as,
    GROUP: tl.constexpr, BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_D: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
):
    kvh = tl.program_id(0)
    split = tl.program_id(1)
    offs_g = tl.arange(0, BLOCK_G)
    offs_d = tl.arange(0, HEAD_D)
    head_mask = offs_g < GROUP
    heads = kvh * GROUP + offs_g
    q = tl.load(Q + heads[:, None] * stride_qh + offs_d[None, :], mask=head_mask[:, None], other=0.0)

    start = split * split_len
    end = tl.minimum(start + split_len, N)
    m_i, l_i, acc = attend_key_range(
        q, K + kvh * stride_kh, V + kvh * stride_vh, start, end, stride_kn, stride_vn, qk_scale_log2,
        BLOCK_G, BLOCK_N, HEAD_D, False, DOT_PRECISION)

    tl.store(M_out + heads * stride_mh + split, m_i, mask=head_mask)
    tl.store(L_out + heads * stride_mh + split, l_i, mask=head_mask)
    acc_ptrs = Acc_out + heads[:, None] * stride_ah + split * stride_as + offs_d[None, :]
    tl.store(acc_ptrs, acc, mask=head_mask[:, None])


class SplitKVDecode:
    """Owns the workspace and launch geometry of one split-KV decode; launches allocate nothing."""

    def __init__(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, config: dict[str, LaunchConfig]):
        hq, d = q.shape
        hkv, n, _ = k.shape
        if d & (d - 1) or d < 16:
            raise ValueError(f"head dim {d} unsupported: triton-dense needs a power of two >= 16")
        self.q, self.k, self.v = q.contiguous(), k.contiguous(), v.contiguous()
        self.group = hq // hkv
        self.n, self.d, self.hkv = n, d, hkv
        self.partial_cfg = dict(config["partial"])
        self.combine_cfg = dict(config["combine"])
        block_n = self.partial_cfg["BLOCK_N"]
        blocks = triton.cdiv(n, block_n)
        blocks_per_split = triton.cdiv(blocks, min(self.partial_cfg["NUM_SPLITS"], blocks))
        self.split_len = blocks_per_split * block_n
        self.num_splits = triton.cdiv(n, self.split_len)
        dev = q.device
        self.m = torch.empty(hq, self.num_splits, device=dev, dtype=torch.float32)
        self.l = torch.empty_like(self.m)
        self.acc = torch.empty(hq, self.num_splits, d, device=dev, dtype=torch.float32)
        self.out = torch.empty(hq, d, device=dev, dtype=q.dtype)
        self.qk_scale_log2 = (1.0 / d**0.5) * 1.4426950408889634
        self.block_g = max(16, triton.next_power_of_2(self.group))
        self.precision = "ieee" if q.dtype == torch.float32 else "tf32"
        cfg = self.partial_cfg
        self.launch_partial = bound_launch(
            _split_kv_partial, (self.hkv, self.num_splits),
            self.q, self.k, self.v, self.m, self.l, self.acc,
            self.n, self.split_len, self.qk_scale_log2,
            self.q.stride(0), self.k.stride(0), self.k.stride(1), self.v.stride(0), self.v.stride(1),
            self.m.stride(0), self.acc.stride(0), self.acc.stride(1),
            GROUP=self.group, BLOCK_G=self.block_g, BLOCK_N=cfg["BLOCK_N"], HEAD_D=self.d,
            DOT_PRECISION=self.precision,
            num_warps=cfg["num_warps"], num_stages=cfg["num_stages"],
        )
        self.launch_combine = bound_launch(
            split_kv_combine, (self.q.shape[0],),
            self.m, self.l, self.acc, self.out,
            self.num_splits,
            self.m.stride(0), self.acc.stride(0), self.acc.stride(1), self.out.stride(0),
            BLOCK_S=max(2, triton.next_power_of_2(self.num_splits)), HEAD_D=self.d,
            num_warps=self.combine_cfg["num_warps"],
        )

    def run(self) -> torch.Tensor:
        self.launch_partial()
        self.launch_combine()
        return self.out
