"""Split-KV (flash-decoding) dense decode attention: two launches.

``partial``: grid (Hkv, splits). One program owns one KV head and one contiguous range of
keys and runs ``attend_key_range`` over it for the G query heads of that group, so each K/V
byte is read once for all G heads. ``combine``: grid (Hq, d / BLOCK_D). Rescales the split
partials of one head to a common max and normalises ``BLOCK_D`` of its columns: with one program
per head, Hq programs leave most SMs idle while each reads every split's partials in turn.

Bytes: K and V once (2·Hkv·N·d·itemsize) plus fp32 partials (Hq·splits·(d+2)·4, written and
read once). The KV term is the floor at long context.

With programmatic dependent launch (sm_90+, ``pdl``) the combine is launched as a dependent of
the partial, which lets it be scheduled at once: its programs take SM slots the partial's grid
leaves free and wait there for the partials, so the launch and ramp of the second kernel overlap
the first instead of following it.
"""

from __future__ import annotations

import dataclasses

import torch
import triton
import triton.language as tl

from kprof.core.config_space import Constraint, LaunchConfig, LaunchSpace, Param
from kprof.kernels.common.bound_launch import bound_launch
from kprof.kernels.common.dependent_launch import release_dependents, resolve_pdl
from kprof.kernels.common.grid_sync import sm_count
from kprof.kernels.common.l2_window import StreamingWindow, check_fits
from kprof.kernels.common.split_kv_combine import bound_combine, split_kv_combine
from kprof.kernels.dense.key_range import group_partials
from kprof.kernels.dense.operands import DenseOperands

_SMEM_BYTES = 227 * 1024  # H100/H200 per-block maximum; Triton reports OutOfResources beyond it


MAX_SPLITS = 256  # a combine program holds [splits, BLOCK_D] fp32 partials in registers at once


def tiles_fit_smem(cfg, shape) -> bool:
    itemsize = 4 if shape.dtype == "fp32" else 2
    return 2 * cfg["BLOCK_N"] * shape.d * itemsize * max(1, cfg["num_stages"]) <= _SMEM_BYTES


LAUNCH_SPACES = {
    "partial": LaunchSpace(
        launch="partial",
        params=(
            Param("BLOCK_N", (16, 32, 64, 128, 256), 64, "keys per tile"),
            Param("PROGRAMS_PER_SM", (0, 1, 2, 3, 4), 2,
                  "programs per SM over the whole grid: splits per KV head = ceil(SMs x this / Hkv), at most 256, "
                  "so one config fills any GPU and any head count once; 0: NUM_SPLITS instead"),
            Param("NUM_SPLITS", (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256), 64,
                  "with PROGRAMS_PER_SM=0: upper bound on KV splits per head; each split is a multiple of BLOCK_N"),
            Param("num_warps", (1, 2, 4, 8), 4),
            Param("num_stages", (1, 2, 3, 4), 3),
            Param("EVICT", (0, 1), 0,
                  "1: K and V loads marked evict-first (L1 and L2), so the stream replaces its own L2 lines "
                  "rather than what the caller left there (dirty lines then stay, unwritten); only plain "
                  "loads carry it: use num_stages=1 (cp.async ignores it)"),
            Param("PREFETCH", (0, 1), 0,
                  "1: each tile's K and V are loaded into registers while the tile before is reduced, "
                  "instead of Triton's shared-memory pipeline (needs num_stages=1)"),
        ),
        constraints=(
            Constraint("K and V tiles of all pipeline stages must fit in 227 KiB of shared memory", tiles_fit_smem),
            Constraint("partial.PREFETCH=1 replaces the shared-memory pipeline: it needs partial.num_stages=1",
                       lambda c, s: not c["PREFETCH"] or c["num_stages"] == 1),
            Constraint("partial.NUM_SPLITS applies only with partial.PROGRAMS_PER_SM=0 (else the grid comes from "
                       "the SM count): set both, or leave NUM_SPLITS at 64",
                       lambda c, s: c["PROGRAMS_PER_SM"] == 0 or c["NUM_SPLITS"] == 64),
        ),
    ),
    "combine": LaunchSpace(
        launch="combine",
        params=(
            Param("BLOCK_D", (16, 32, 64, 128), 32,
                  "head-dim columns per program: grid (Hq, d / BLOCK_D); above d it is d"),
            Param("num_warps", (1, 2, 4, 8), 2),
        ),
    ),
}


@triton.jit
def _split_kv_partial(
    Q, K, V, M_out, L_out, Acc_out,
    N, split_len, qk_scale_log2,
    stride_qh, stride_kh, stride_kn, stride_vh, stride_vn,
    stride_mh, stride_ah, stride_as,
    GROUP: tl.constexpr, BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_D: tl.constexpr,
    DOT_PRECISION: tl.constexpr, PDL: tl.constexpr = False, EVICT: tl.constexpr = 0, PREFETCH: tl.constexpr = 0,
    BODY: tl.constexpr = 0,
):
    # The first launch of the pair (launched plainly, after everything before it in the stream):
    # the combine may be scheduled now; it waits for this whole grid before it reads a partial.
    release_dependents(PDL)
    split = tl.program_id(1)
    start = split * split_len
    group_partials(Q, K, V, M_out, L_out, Acc_out, tl.program_id(0), split, start,
                   tl.minimum(start + split_len, N), qk_scale_log2,
                   stride_qh, stride_kh, stride_kn, stride_vh, stride_vn, stride_mh, stride_ah, stride_as,
                   GROUP, BLOCK_G, BLOCK_N, HEAD_D, False, DOT_PRECISION, EVICT=EVICT, PREFETCH=PREFETCH, BODY=BODY)


LAUNCH_KERNELS = {"partial": (_split_kv_partial,), "combine": (split_kv_combine,)}


class SplitKVDecode:
    """Owns the workspace and launch geometry of one split-KV decode; launches allocate nothing.
    ``pdl``: None where supported (:func:`resolve_pdl`), else as given. ``window``: the partial runs
    under an L2 window that marks K and V streaming (:mod:`kprof.kernels.common.l2_window`); it reads
    a copy of K and V made here, so K and V written in place afterwards are not seen. ``body``: the
    partial's loop body, for the loop probe only (``attend_key_range``'s ``BODY``; attention only
    at 0)."""

    def __init__(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, config: dict[str, LaunchConfig],
                 pdl: bool | None = None, window: bool = False, body: int = 0):
        o = DenseOperands.of(q, k, v, "triton-dense")
        if window:  # K and V side by side in one buffer, so that one window covers both
            check_fits(2 * o.k.numel() * o.k.element_size(), q.device, "triton-dense:window=1")
            kv = torch.stack((o.k, o.v))
            o = dataclasses.replace(o, k=kv[0], v=kv[1])
        self.pdl = resolve_pdl(pdl, q.device)
        cfg, combine_cfg = dict(config["partial"]), dict(config["combine"])
        blocks = triton.cdiv(o.n, cfg["BLOCK_N"])
        wanted = (min(triton.cdiv(sm_count(q.device) * cfg["PROGRAMS_PER_SM"], o.hkv), MAX_SPLITS)
                  if cfg["PROGRAMS_PER_SM"] else cfg["NUM_SPLITS"])
        blocks_per_split = triton.cdiv(blocks, min(wanted, blocks))
        self.split_len = blocks_per_split * cfg["BLOCK_N"]
        self.num_splits = triton.cdiv(o.n, self.split_len)
        m, mass, acc = o.partials(self.num_splits)
        self.workspace = (m, mass, acc)  # kept so that tests can poison them
        self.out = torch.empty(o.hq, o.d, device=q.device, dtype=q.dtype)
        self.launch_partial = bound_launch(
            _split_kv_partial, (o.hkv, self.num_splits),
            o.q, o.k, o.v, m, mass, acc,
            o.n, self.split_len, o.qk_scale_log2,
            o.q.stride(0), o.k.stride(0), o.k.stride(1), o.v.stride(0), o.v.stride(1),
            m.stride(0), acc.stride(0), acc.stride(1),
            GROUP=o.group, BLOCK_G=o.block_g, BLOCK_N=cfg["BLOCK_N"], HEAD_D=o.d,
            DOT_PRECISION=o.precision, PDL=self.pdl, EVICT=cfg["EVICT"], PREFETCH=cfg["PREFETCH"], BODY=body,
            num_warps=cfg["num_warps"], num_stages=cfg["num_stages"],
        )
        if window:
            self.launch_partial = StreamingWindow.over(kv, "triton-dense:window=1").wrap(self.launch_partial)
        self.launch_combine = bound_combine(m, mass, acc, self.out, self.num_splits, combine_cfg["BLOCK_D"],
                                            combine_cfg["num_warps"], pdl=self.pdl)

    def run(self) -> torch.Tensor:
        self.launch_partial()
        self.launch_combine()
        return self.out
