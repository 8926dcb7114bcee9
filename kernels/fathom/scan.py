"""FathomScan: plan, gather and scan for one decode step over a FathomStore (three launches).

Buffers are allocated up front; ``run()`` launches only. The store may live in pinned host
memory (the regime Fathom is built for: the gather kernel reads it over PCIe directly) or in HBM.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import triton

from kprof.core.config_space import Constraint, LaunchSpace, Param
from kprof.kernels.common.bound_launch import bound_launch
from kprof.kernels.fathom.store import FathomStore
from kprof.kernels.fathom.triton_kernels import (
    POLICY_ALL,
    POLICY_TOP_Q,
    POLICY_WATER,
    fathom_gather,
    fathom_plan,
    fathom_scan,
)

CHUNK = 32  # tokens per scan chunk: one int32 half of a plane word; the scan writes each chunk's max

LAUNCH_SPACES = {
    "plan": LaunchSpace("plan", (Param("num_warps", (1, 2, 4, 8), 4),)),
    "gather": LaunchSpace("gather", (
        Param("CHUNK", (256, 512, 1024, 2048, 4096), 1024, "words copied per program"),
        # 8 warps: enough loads in flight to come close to cudaMemcpyAsync from pinned host memory
        Param("num_warps", (1, 2, 4, 8, 16), 8),
    )),
    "scan": LaunchSpace("scan", (
        # The default is 32 x 4 because it must fit every group size up to 8 (the tuner
        # picks the larger tile where G allows it)
        Param("BLOCKS", (4, 8, 16, 32, 64), 32, "64-token blocks per program"),
        Param("num_warps", (1, 2, 4, 8), 4),
        # 2: the next channel's loads are in flight during this one's arithmetic, at no register cost
        Param("AHEAD", (1, 2), 2, "channels whose plane loads are in flight ahead of the arithmetic"),
        Param("WORKERS", (2, 3, 4, 8), 4, "persistent scan programs launched per SM (GPU); at the default "
              "tile 3 fit, so 4 keeps every SM full"),
        Param("RESERVE", (0, 4, 8, 16), 8, "SMs a pipelined step's scan leaves to the selection launches "
              "beside it (GPU)"),
        # the cap keeps one more scan program per SM at G = 4 and the default tile, without spills
        Param("MAXNREG", (-1, 0, 160, 168, 192), -1, "register cap per thread: -1 = 160 where each thread "
              "holds at most 64 accumulators (G <= 4 at the default tile), else none; 0 = none"),
    ), (Constraint("each thread's G x tokens fp32 accumulators must fit in registers: "
                   "pow2(G) * BLOCKS * 64 / (32 * num_warps) <= 128",
                   lambda c, s: (max(2, triton.next_power_of_2(s.hq // s.hkv)) * c["BLOCKS"] * 2
                                 // c["num_warps"] <= 128)),)),
}
LAUNCH_KERNELS = {"plan": (fathom_plan,), "gather": (fathom_gather,), "scan": (fathom_scan,)}


@dataclass(frozen=True)
class HeadRange:
    """KV heads ``[kv0, kv1)`` and their query heads: one piece of a step. A launch over a range
    gets views of its per-head buffers starting at the range, so kernels index heads from 0."""

    kv0: int
    kv1: int
    group: int

    @property
    def kv(self) -> slice:
        return slice(self.kv0, self.kv1)

    @property
    def q(self) -> slice:
        return slice(self.kv0 * self.group, self.kv1 * self.group)

    @property
    def n_kv(self) -> int:
        return self.kv1 - self.kv0

    @property
    def n_q(self) -> int:
        return self.n_kv * self.group


def split_heads(hkv: int, group: int, pieces: int | tuple[int, ...]) -> tuple[HeadRange, ...]:
    """Contiguous ranges of KV heads: ``pieces`` of them with sizes differing by at most one (no
    empty range), or, given a tuple, ranges of exactly those sizes in order (they must add up to
    ``hkv``): a pipelined step exposes only its last range's selection, so a small last range
    shortens that tail."""
    if isinstance(pieces, tuple):
        if sum(pieces) != hkv or min(pieces) < 1:
            sizes = "+".join(map(str, pieces))
            raise ValueError(f"pieces={sizes} must be positive sizes adding up to the {hkv} KV heads")
        bounds = [sum(pieces[:i]) for i in range(len(pieces) + 1)]
    else:
        pieces = max(1, min(pieces, hkv))
        bounds = [hkv * i // pieces for i in range(pieces + 1)]
    return tuple(HeadRange(a, b, group) for a, b in zip(bounds, bounds[1:]))


@dataclass(frozen=True)
class ChannelPolicy:
    """How a scan picks channel depths: Fathom's water-filling, or fixed channels at 4 bits."""

    kind: int  # POLICY_WATER | POLICY_TOP_Q | POLICY_ALL
    budget: float = 0.0  # water-filling budget in planes (code bits per token)
    channels: int = 0  # channels read at depth 4 for POLICY_TOP_Q

    def max_planes(self, d: int) -> int:
        if self.kind == POLICY_WATER:
            return min(4 * d, int(self.budget))
        return 4 * (self.channels if self.kind == POLICY_TOP_Q else d)


def water(budget: float) -> ChannelPolicy:
    return ChannelPolicy(POLICY_WATER, budget=budget)


def top_q(channels: int) -> ChannelPolicy:
    return ChannelPolicy(POLICY_TOP_Q, channels=channels)


ALL_CHANNELS = ChannelPolicy(POLICY_ALL)


class FathomScan:
    def __init__(self, q: torch.Tensor, store: FathomStore, policy: ChannelPolicy | float, config: dict,
                 device: torch.device, fused: bool = False, reserve: bool = False):
        """``fused``: the scan reads the active channels' planes where the store keeps them (its
        loads are the gather: the same bytes, no staging copy and no second pass over them).
        ``reserve``: leave ``scan.RESERVE`` SMs to launches running beside the scan (GPU only)."""
        policy = water(policy) if isinstance(policy, (int, float)) else policy
        self.fused = fused
        self.q = store.query(q).contiguous().to(device)
        self.store = store
        self.hq, self.d = q.shape
        self.hkv = store.planes.shape[0]
        self.group = self.hq // self.hkv
        self.nb = store.n_blocks
        self.policy = policy
        self.cfg = config
        self.staged_words = max(1, policy.max_planes(self.d)) * self.nb
        i32 = torch.int32
        self.depth = torch.empty(self.hkv, self.d, dtype=i32, device=device)
        self.dst = torch.empty(self.hkv, self.d, dtype=i32, device=device)
        self.active = torch.empty(self.hkv, self.d, dtype=i32, device=device)
        self.active_depth = torch.empty(self.hkv, self.d, dtype=i32, device=device)
        self.active_dst = torch.empty(self.hkv, self.d, dtype=i32, device=device)
        self.n_active = torch.empty(self.hkv, dtype=i32, device=device)
        self.theta = torch.empty(self.hkv, dtype=torch.float32, device=device)
        self.var = store.var.to(device).contiguous()
        if fused and store.planes.stride()[2:] != (self.nb, 1):
            raise ValueError("the fused scan needs the store's planes contiguous per channel ([Hkv, d, 4, nb])")
        staged_shape = (0, 0) if fused else (self.hkv, self.staged_words)  # the fused scan stages nothing
        self.staged = torch.empty(staged_shape, dtype=torch.int64, device=device)
        self.staged_scales = torch.empty(self.hkv, self.d, 0 if fused else self.nb, dtype=torch.float16, device=device)
        # rows padded to whole chunks with -inf (the scan writes only the first n), so that a
        # chunk's 32 scores can be gathered without a bounds check; and each chunk's best score
        self.n_chunks = triton.cdiv(store.n, CHUNK)
        self.scores_padded = torch.full((self.hq, self.n_chunks * CHUNK), float("-inf"), dtype=torch.float32,
                                        device=device)
        self.scores = self.scores_padded[:, : store.n]
        self.chunk_max = torch.empty(self.hq, self.n_chunks, dtype=torch.float32, device=device)
        self.block_g = max(2, triton.next_power_of_2(self.group))
        self.all_heads = HeadRange(0, self.hkv, self.group)
        # the scan's work queue: [0] next tile, [1] workers gone, [2 + h] tiles of KV head h
        # scanned (zeroed by the plan), [2 + Hkv] top-k waits that gave up
        self.work = torch.zeros(3 + self.hkv, dtype=i32, device=device)
        self.tiles_per_head = triton.cdiv(self.nb, config["scan"]["BLOCKS"])
        n_tiles = self.hkv * self.tiles_per_head
        on_gpu = torch.device(device).type == "cuda"
        sms = torch.cuda.get_device_properties(device).multi_processor_count if on_gpu else 0
        # the interpreter runs programs one after another: one worker takes every tile
        self.workers = min(n_tiles, sms * config["scan"]["WORKERS"]) if on_gpu else 2
        self.reserve = min(config["scan"]["RESERVE"], sms // 2) if (reserve and on_gpu) else 0
        self.bind()

    def bind(self) -> None:
        """Fix every launch's arguments to the current buffers (again, after replacing one)."""
        self._plan = bound_launch(
            fathom_plan, (self.hkv,),
            self.q, self.var, self.depth, self.dst, self.active, self.active_depth, self.active_dst, self.n_active,
            self.theta, self.work, float(self.policy.budget), self.q.stride(0), self.var.stride(0), self.nb,
            GROUP=self.group, BLOCK_G=self.block_g, D=self.d, STEPS=30, POLICY=self.policy.kind,
            CHANNELS=max(1, self.policy.channels), num_warps=self.cfg["plan"]["num_warps"])
        self.reads = self.read_launches()
        self._stages = (("plan", self._plan), *self.reads)

    def launch_plan(self) -> None:
        self._plan()

    def bound_gather(self) -> Callable[[], None]:
        """The gather over all heads (``gather=copy``: the scan then reads the staged planes)."""
        if self.fused:
            raise RuntimeError("a fused scan reads the store itself: there is no gather to launch")
        c = self.cfg["gather"]
        s = self.store
        chunks = triton.cdiv(4 * self.nb, c["CHUNK"])
        return bound_launch(
            fathom_gather, (chunks, self.d, self.hkv),
            s.planes, s.scales, self.depth, self.dst, self.staged, self.staged_scales, self.nb, self.staged_words,
            s.planes.stride(0), s.planes.stride(1), s.scales.stride(0), s.scales.stride(1),
            D=self.d, CHUNK=c["CHUNK"], num_warps=c["num_warps"])

    def bound_scan(self) -> Callable[[], None]:
        """The scan over all heads: persistent workers taking tiles head by head (``fathom_scan``)."""
        c = self.cfg["scan"]
        if self.fused:
            planes, scales = self.store.planes, self.store.scales
            stride_wh, stride_wd = planes.stride(0), planes.stride(1)
        else:
            planes, scales = self.staged, self.staged_scales
            stride_wh, stride_wd = self.staged_words, 0
        return bound_launch(
            fathom_scan, (self.workers,),
            self.q, planes.view(torch.int32), scales, self.active, self.active_depth, self.active_dst, self.n_active,
            self.scores, self.chunk_max, self.work, self.store.n, self.nb, stride_wh, stride_wd, self.q.stride(0),
            scales.stride(0), scales.stride(1), self.scores.stride(0), self.chunk_max.stride(0),
            self.hkv * self.tiles_per_head, self.tiles_per_head, GROUP=self.group, BLOCK_G=self.block_g, D=self.d,
            BLOCKS=c["BLOCKS"], FUSED=self.fused, AHEAD=c["AHEAD"], RESERVE=self.reserve, num_warps=c["num_warps"],
            maxnreg=self.register_cap())

    def register_cap(self) -> int | None:
        """The scan's ``maxnreg`` (``scan.MAXNREG``; None: no cap)."""
        c = self.cfg["scan"]
        if c["MAXNREG"] >= 0:
            return c["MAXNREG"] or None
        accumulators = self.block_g * c["BLOCKS"] * 64 // (32 * c["num_warps"])
        return 160 if accumulators <= 64 else None

    @property
    def scanned(self) -> torch.Tensor:
        """Tiles scanned per KV head since the last plan (``tiles_per_head`` each when done)."""
        return self.work[2: 2 + self.hkv]

    @property
    def wait_expiries(self) -> torch.Tensor:
        """Top-k waits on this scan that gave up (one int32; stays 0 in a correct run)."""
        return self.work[2 + self.hkv:]

    def launch_gather(self) -> None:
        """The gather alone (for benchmarks and tests; steps use the bound launches)."""
        self.bound_gather()()

    def read_launches(self) -> tuple:
        """The bound launches that read the index (gather and scan, or the fused scan)."""
        gather = () if self.fused else (("gather", self.bound_gather()),)
        return (*gather, ("scan", self.bound_scan()))

    def stages(self):
        """(name, launch) in order, over all heads; the fused scan has no separate gather."""
        return self._stages

    def run(self) -> torch.Tensor:
        for _, launch in self.stages():
            launch()
        return self.scores
