"""One-launch split-KV dense decode: the combine runs in the last programs of each KV head.

Grid (Hkv, splits). Each program runs ``attend_key_range`` over its share of the keys (splits
differ by at most one tile) and writes its fp32 partials; it then counts itself done on its KV
head's counter. The last G programs to count themselves done each wait for the rest, then combine one
head of the group (the last one resets the counters, so the next call or graph replay starts
from zero). That saves the second launch of the two-launch form and the gap before it, and
spreads the combine over G SMs instead of one. Under the interpreter, which runs programs one
after another, the last program combines every head.

``PROGRAMS_PER_SM`` sets the grid from the device instead of a fixed split count, so one config
fills any GPU once; the Triton interpreter has no SMs and counts as ``grid_sync.INTERPRETER_SMS``.

Bytes: K and V once (2·Hkv·N·d·itemsize), q and the output, and the fp32 partials
(Hq·splits·(d+2)·4, written once and read once from L2).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from kprof.core.config_space import Constraint, LaunchConfig, LaunchSpace, Param
from kprof.core.errors import ConfigError
from kprof.kernels.common.bound_launch import bound_launch
from kprof.kernels.common.grid_sync import MAX_POLLS, sm_count, wait_at_least, wait_faults, waiters_fit
from kprof.kernels.common.split_kv_combine import combine_head
from kprof.kernels.dense.key_range import group_partials
from kprof.kernels.dense.operands import DenseOperands
from kprof.kernels.dense.split_kv import tiles_fit_smem

LAUNCH_SPACES = {
    "decode": LaunchSpace(
        launch="decode",
        params=(
            Param("BLOCK_N", (16, 32, 64, 128, 256), 64, "keys per tile"),
            Param("PROGRAMS_PER_SM", (1, 2, 3, 4, 6, 8), 2,
                  "programs per SM over the whole grid; splits per KV head = ceil(SMs x this / Hkv)"),
            Param("num_warps", (1, 2, 4, 8), 4),
            Param("num_stages", (1, 2, 3, 4, 5), 3),
            Param("TMA", (0, 1), 0, "1: K/V tiles by tensor-memory-accelerator descriptors (sm_90+); 0: pointers"),
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
    TMA: tl.constexpr, MAX_POLLS: tl.constexpr, COMBINE_CHUNK: tl.constexpr = 32,
):
    kvh = tl.program_id(0)
    split = tl.program_id(1)
    first = (split.to(tl.int64) * n_blocks // num_splits).to(tl.int32) * BLOCK_N
    last = ((split + 1).to(tl.int64) * n_blocks // num_splits).to(tl.int32) * BLOCK_N
    group_partials(Q, K, V, M_ws, L_ws, Acc_ws, kvh, split, first, tl.minimum(last, N), qk_scale_log2,
                   stride_qh, stride_kh, stride_kn, stride_vh, stride_vn, stride_mh, stride_ah, stride_as,
                   GROUP, BLOCK_G, BLOCK_N, HEAD_D, EVEN, DOT_PRECISION, TMA, N)
    # Every thread's partials are stored before one thread's gpu-scope release on the counter.
    tl.debug_barrier()
    done = tl.atomic_add(Count + kvh, 1, sem="acq_rel", scope="gpu")
    tl.debug_barrier()
    if PARALLEL_COMBINE:
        # The last GROUP programs to finish each combine one head of the group, once every
        # program of the KV head has counted itself done; the last combiner resets the counters.
        j = num_splits - 1 - done
        if (j >= 0) & (j < GROUP):
            # gives up (a fault) only if another kernel holds the SMs the rest would need
            wait_at_least(Count + kvh, num_splits, Count + 2 * stride_cnt + kvh, MAX_POLLS)
            combine_head(M_ws, L_ws, Acc_ws, Out, kvh * GROUP + j, num_splits,
                         stride_mh, stride_ah, stride_as, stride_oh, BLOCK_S, HEAD_D, COMBINE_CHUNK)
            tl.debug_barrier()
            if tl.atomic_add(Count + stride_cnt + kvh, 1, sem="acq_rel", scope="gpu") == GROUP - 1:
                tl.store(Count + kvh, 0)
                tl.store(Count + stride_cnt + kvh, 0)
    else:
        if done == num_splits - 1:
            for g in range(GROUP):
                combine_head(M_ws, L_ws, Acc_ws, Out, kvh * GROUP + g, num_splits,
                             stride_mh, stride_ah, stride_as, stride_oh, BLOCK_S, HEAD_D, COMBINE_CHUNK)
            tl.store(Count + kvh, 0)


LAUNCH_KERNELS = {"decode": (_dense_decode,)}


class OneLaunchDecode:
    """Owns the workspace, counters and grid of one one-launch decode; a launch allocates nothing."""

    def __init__(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, config: dict[str, LaunchConfig]):
        o = DenseOperands.of(q, k, v, "triton-decode")
        cfg = dict(config["decode"])
        n_blocks = triton.cdiv(o.n, cfg["BLOCK_N"])
        wanted = triton.cdiv(sm_count(q.device) * cfg["PROGRAMS_PER_SM"], o.hkv)
        self.num_splits = max(1, min(wanted, n_blocks))
        m, mass, acc = o.partials(self.num_splits)
        # per KV head: programs done, heads combined, combiner waits that gave up
        self.count = torch.zeros(3, o.hkv, device=q.device, dtype=torch.int32)
        self.m, self.mass, self.acc = m, mass, acc  # kept so that tests can poison them
        self.out = torch.empty(o.hq, o.d, device=q.device, dtype=q.dtype)
        # Waiting combiners hold at most Hq program slots; fewer than one per SM leaves room for
        # the programs they wait on. The interpreter runs programs one by one, so the last combines all.
        parallel_combine = self.num_splits >= o.group and waiters_fit(o.hq, q.device)
        k_arg, v_arg = o.k, o.v
        if cfg["TMA"]:
            if q.device.type == "cuda" and torch.cuda.get_device_capability(q.device)[0] < 9:
                raise ConfigError("decode.TMA=1 needs the tensor-memory accelerator of sm_90 or newer: use TMA=0")
            k_arg, v_arg = (TensorDescriptor.from_tensor(t.view(o.hkv * o.n, o.d), [cfg["BLOCK_N"], o.d])
                            for t in (o.k, o.v))
        self._launch = bound_launch(
            _dense_decode, (o.hkv, self.num_splits),
            o.q, k_arg, v_arg, m, mass, acc, self.count, self.out,
            o.n, n_blocks, self.num_splits, o.qk_scale_log2,
            o.q.stride(0), o.k.stride(0), o.k.stride(1), o.v.stride(0), o.v.stride(1),
            m.stride(0), acc.stride(0), acc.stride(1), self.out.stride(0), self.count.stride(0),
            GROUP=o.group, BLOCK_G=o.block_g, BLOCK_N=cfg["BLOCK_N"], HEAD_D=o.d,
            BLOCK_S=max(2, triton.next_power_of_2(self.num_splits)), EVEN=o.n % cfg["BLOCK_N"] == 0,
            PARALLEL_COMBINE=parallel_combine,
            DOT_PRECISION=o.precision, TMA=bool(cfg["TMA"]), MAX_POLLS=MAX_POLLS,
            num_warps=cfg["num_warps"], num_stages=cfg["num_stages"],
        )

    def run(self) -> torch.Tensor:
        self._launch()
        return self.out

    def faults(self) -> list[str]:
        """Combiner waits that gave up so far, one line (a host sync: not timed)."""
        return wait_faults(int(self.count[2].sum()), "combining program(s)")
