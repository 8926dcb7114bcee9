"""One-launch split-KV dense decode: the combine runs in the last programs of each KV head.

Grid (Hkv, splits). Each program runs ``attend_key_range`` over its share of the keys (splits
differ by at most one tile) and writes its fp32 partials; it then counts itself done on its KV
head's counter. The last G programs to count themselves done each wait for the rest, then combine one
head of the group (the last one resets the counters, so the next call or graph replay starts
from zero). That saves the second launch of the two-launch form and the gap before it, and
spreads the combine over G SMs instead of one. Under the interpreter, which runs programs one
after another, the last program combines every head.

``PROGRAMS_PER_SM`` sets the grid from the device instead of a fixed split count, so one config
fills any GPU once; the Triton interpreter has no SMs and counts as ``INTERPRETER_SMS``.

Bytes: K and V once (2·Hkv·N·d·itemsize), q and the output, and the fp32 partials
(Hq·splits·(d+2)·4, written once and read once from L2).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kprof.core.config_space import Constraint, LaunchConfig, LaunchSpace, Param
from kprof.kernels import INTERPRETED
from kprof.kernels.common.bound_launch import bound_launch
from kprof.kernels.common.split_kv_combine import combine_head
from kprof.kernels.dense.key_range import attend_key_range
from kprof.kernels.dense.split_kv import tiles_fit_smem

INTERPRETER_SMS = 4

LAUNCH_SPACES = {
    "decode": LaunchSpace(
        launch="decode",
        params=(
            Param("BLOCK_N", (16, 32, 64, 128, 256), 64, "keys per tile"),
            Param("PROGRAMS_PER_SM", (1, 2, 3, 4, 6, 8), 2,
                  "programs per SM over the whole grid; splits per KV head = ceil(SMs x this / Hkv)"),
            Param("num_warps", (1, 2, 4, 8), 4),
            Param("num_stages", (1, 2, 3, 4, 5), 3),
        ),
        constraints=(
            Constraint("K and V tiles of all pipeline stages must fit in 227 KiB of shared memory", tiles_fit_smem),
        ),
    ),
}


@triton.jit
def _dense_decode(
    Q, K, V, M_ws, L_ws, Acc_ws, Count, Out,
    N, n_blocks, num_splits, qk_scale_log2,
    stride_qh, stride_kh, stride_kn, stride_vh, stride_vn,
    stride_mh, stride_ah, stride_as, stride_oh, stride_cnt,
    GROUP: tl.constexpr, BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_D: tl.constexpr,
    BLOCK_S: tl.constexpr, EVEN: tl.constexpr, PARALLEL_COMBINE: tl.constexpr, DOT_PRECISION: tl.constexpr,
):
    kvh = tl.program_id(0)
    split = tl.program_id(1)
    offs_g = tl.arange(0, BLOCK_G)
    offs_d = tl.arange(0, HEAD_D)
    head_mask = offs_g < GROUP
    heads = kvh * GROUP + offs_g
    q = tl.load(Q + heads[:, None] * stride_qh + offs_d[None, :], mask=head_mask[:, None], other=0.0)

    start = (split * n_blocks // num_splits) * BLOCK_N
    end = tl.minimum(((split + 1) * n_blocks // num_splits) * BLOCK_N, N)
    m_i, l_i, acc = attend_key_range(
        q, K + kvh * stride_kh, V + kvh * stride_vh, start, end, stride_kn, stride_vn, qk_scale_log2,
        BLOCK_G, BLOCK_N, HEAD_D, EVEN, DOT_PRECISION)

    tl.store(M_ws + heads * stride_mh + split, m_i, mask=head_mask)
    tl.store(L_ws + heads * stride_mh + split, l_i, mask=head_mask)
    tl.store(Acc_ws + heads[:, None] * stride_ah + split * stride_as + offs_d[None, :], acc,
             mask=head_mask[:, None])
    # Every thread's partials are stored before one thread's gpu-scope release on the counter.
    tl.debug_barrier()
    done = tl.atomic_add(Count + kvh, 1, sem="acq_rel", scope="gpu")
    if PARALLEL_COMBINE:
        # The last GROUP programs to finish each combine one head of the group, once every
        # program of the KV head has counted itself done; the last combiner resets both counters.
        j = num_splits - 1 - done
        if j < GROUP:
            seen = tl.atomic_add(Count + kvh, 0, sem="acquire", scope="gpu")
            while seen < num_splits:
                seen = tl.atomic_add(Count + kvh, 0, sem="acquire", scope="gpu")
            combine_head(M_ws, L_ws, Acc_ws, Out, kvh * GROUP + j, num_splits,
                         stride_mh, stride_ah, stride_as, stride_oh, BLOCK_S, HEAD_D)
            tl.debug_barrier()
            if tl.atomic_add(Count + stride_cnt + kvh, 1, sem="acq_rel", scope="gpu") == GROUP - 1:
                tl.store(Count + kvh, 0)
                tl.store(Count + stride_cnt + kvh, 0)
    else:
        if done == num_splits - 1:
            for g in range(GROUP):
                combine_head(M_ws, L_ws, Acc_ws, Out, kvh * GROUP + g, num_splits,
                             stride_mh, stride_ah, stride_as, stride_oh, BLOCK_S, HEAD_D)
            tl.store(Count + kvh, 0)


def sm_count(device: torch.device) -> int:
    if device.type != "cuda":
        return INTERPRETER_SMS
    return torch.cuda.get_device_properties(device).multi_processor_count


class OneLaunchDecode:
    """Owns the workspace, counters and grid of one one-launch decode; a launch allocates nothing."""

    def __init__(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, config: dict[str, LaunchConfig]):
        hq, d = q.shape
        hkv, n, _ = k.shape
        if d & (d - 1) or d < 16:
            raise ValueError(f"head dim {d} unsupported: triton-decode needs a power of two >= 16")
        self.q, self.k, self.v = q.contiguous(), k.contiguous(), v.contiguous()
        self.cfg = dict(config["decode"])
        self.group, self.n, self.d, self.hkv = hq // hkv, n, d, hkv
        block_n = self.cfg["BLOCK_N"]
        self.n_blocks = triton.cdiv(n, block_n)
        wanted = triton.cdiv(sm_count(q.device) * self.cfg["PROGRAMS_PER_SM"], hkv)
        self.num_splits = max(1, min(wanted, self.n_blocks))
        dev = q.device
        self.m = torch.empty(hq, self.num_splits, device=dev, dtype=torch.float32)
        self.l = torch.empty_like(self.m)
        self.acc = torch.empty(hq, self.num_splits, d, device=dev, dtype=torch.float32)
        self.count = torch.zeros(2, hkv, device=dev, dtype=torch.int32)  # programs done, heads combined
        self.out = torch.empty(hq, d, device=dev, dtype=q.dtype)
        self.qk_scale_log2 = (1.0 / d**0.5) * 1.4426950408889634
        self.block_g = max(16, triton.next_power_of_2(self.group))
        self.precision = "ieee" if q.dtype == torch.float32 else "tf32"
        # Waiting combiners hold at most Hq program slots; fewer than one per SM leaves room for
        # the programs they wait on. The interpreter runs programs one by one, so the last combines all.
        self.parallel_combine = (not INTERPRETED and self.num_splits >= self.group
                                 and hq < sm_count(q.device))

        cfg = self.cfg
        self._launch = bound_launch(
            _dense_decode, (self.hkv, self.num_splits),
            self.q, self.k, self.v, self.m, self.l, self.acc, self.count, self.out,
            self.n, self.n_blocks, self.num_splits, self.qk_scale_log2,
            self.q.stride(0), self.k.stride(0), self.k.stride(1), self.v.stride(0), self.v.stride(1),
            self.m.stride(0), self.acc.stride(0), self.acc.stride(1), self.out.stride(0), self.count.stride(0),
            GROUP=self.group, BLOCK_G=self.block_g, BLOCK_N=cfg["BLOCK_N"], HEAD_D=self.d,
            BLOCK_S=max(2, triton.next_power_of_2(self.num_splits)), EVEN=self.n % cfg["BLOCK_N"] == 0,
            PARALLEL_COMBINE=self.parallel_combine,
            DOT_PRECISION=self.precision, num_warps=cfg["num_warps"], num_stages=cfg["num_stages"],
        )

    def run(self) -> torch.Tensor:
        self._launch()
        return self.out
