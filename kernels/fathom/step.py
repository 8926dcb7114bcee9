"""FathomDecode: one layer's sparse decode step over a bit-plane index.

plan -> gather (index planes, host or HBM; fused into the scan by default) -> scan -> top-k per
query head (first 4 and last 32 tokens always kept) -> union of winners per KV head -> fetch of
the distinct winner K/V rows (host or HBM) -> exact attention of each head over its own winners
(tile partials, then a merge). All buffers are allocated here; ``run()`` launches only: Triton
kernels (plus, for the torch top-k variants, a few torch ops that run on the device without host
synchronisation).
"""

from __future__ import annotations

import functools
import math
import weakref
from dataclasses import dataclass, field
from typing import Callable, ClassVar

import torch
import triton
import triton.language as tl

from kprof.core.config_space import Constraint, LaunchSpace, Param
from kprof.core.host_memory import pinned_like
from kprof.kernels.common.bound_launch import bound_launch
from kprof.kernels.common.split_kv_combine import bound_combine, split_kv_combine
from kprof.kernels.fathom.scan import CHUNK, ChannelPolicy, FathomScan, HeadRange, split_heads
from kprof.kernels.fathom.scan import LAUNCH_KERNELS as SCAN_KERNELS
from kprof.kernels.fathom.scan import LAUNCH_SPACES as SCAN_SPACES
from kprof.kernels.fathom.selection import fathom_topk, fathom_union
from kprof.kernels.fathom.store import FathomStore
from kprof.kernels.fathom.triton_kernels import fathom_attend, fathom_fetch_rows

SINK_TOKENS = 4
RECENT_TOKENS = 32
GATHER_MODES = ("copy", "fused")
WAIT_POLLS = 10_000_000  # a pipelined top-k's reads of the scan's count before it gives up (seconds)
MAX_TRITON_TOPK_ROW = 65536  # chunk maxima or candidate tokens one Triton top-k program holds (2M tokens)
LAUNCH_SPACES = dict(SCAN_SPACES) | {
    # PRUNE 2 (default): one Triton program per head picks the k chunks (32 tokens) with the best
    # chunk maxima, then the exact top-k among their k * 32 tokens (proof in selection.fathom_topk);
    # 1: the same pruning as torch launches (two radix top-ks, four gathers); 0: one torch.topk
    # over each whole row; both are slower than the one Triton launch
    "topk": LaunchSpace("topk", (Param("PRUNE", (0, 1, 2), 2, "2: chunk-pruned top-k in one Triton launch; "
                                       "1: the same pruning as torch launches; 0: one torch.topk over each row"),
                                 Param("num_warps", (4, 8, 16), 16, "warps of the Triton top-k (PRUNE 2)"),
                                 Param("RADIX_BITS", (0, 2, 4, 8), 0, "threshold search of the Triton top-k: "
                                       "0 bisection (32 counting steps), else radix select with digits this wide"),
                                 Param("SEARCH", (0, 1), 1, "bisection range: 0 the whole int32 range; 1 bracketed "
                                       "by bounds from the data, stopping when a count is exactly k"),
                                 Param("UNION", (0, 1), 1, "1: the last top-k program of each KV head builds its "
                                       "union (no union launch; PRUNE 2 only); 0: the union launches on its own")),
                        (Constraint("topk.RADIX_BITS > 0 needs topk.SEARCH=0 (SEARCH 1 brackets the bisection)",
                                    lambda c, s: c["SEARCH"] == 0 or c["RADIX_BITS"] == 0),)),
    # 16 warps: with fewer, each thread holds more of the G x k merge and runs out of registers
    "union": LaunchSpace("union", (Param("num_warps", (8, 16), 16),
                                   Param("GATHER", (0, 1), 0, "where the union's binary searches read the G winner "
                                         "lists: 0 from L2, 1 from one register copy of them (tl.gather); wherever "
                                         "the union is built, in the top-k launch (topk.UNION=1) or its own")),
                         (Constraint("union.GATHER=1 needs tl.gather (Triton 3.2+)",
                                     lambda c, s: not c["GATHER"] or hasattr(tl, "gather")),)),
    # 64 rows x 8 warps: the fastest fetch of interleaved K|V rows at the 1M-token workload
    "fetch": LaunchSpace("fetch", (Param("ROWS", (8, 16, 32, 64, 128), 64, "winner rows per program"),
                                   Param("num_warps", (1, 2, 4, 8, 16), 8),
                                   Param("PAIRED", (0, 1), 1, "1: a row's K and V (adjacent) as one 2d-wide load "
                                                              "and store; 0: two d-wide ones"))),
    # one program per tile of a head's winners, then a merge launch: every tile's loads are in
    # flight at once instead of one program per head walking its tiles in turn
    "attend": LaunchSpace("attend", (Param("BLOCK_R", (16, 32, 64, 128), 32, "winner rows per program"),
                                     Param("num_warps", (1, 2, 4, 8), 4))),
}

# topk.PRUNE 0 and 1 are torch launches: only PRUNE 2 compiles a kernel (which also builds the
# union with topk.UNION=1); attend is the tile partials, then the split-KV merge
LAUNCH_KERNELS = dict(SCAN_KERNELS) | {"topk": (fathom_topk,), "union": (fathom_union,), "fetch": (fathom_fetch_rows,),
                                       "attend": (fathom_attend, split_kv_combine)}


@dataclass(frozen=True)
class FathomResidency:
    """The bit-plane index and the K/V rows where a decode step reads them (host or HBM).

    Building it quantises the whole cache and pins gigabytes at 1M tokens, so callers that
    prepare many decode steps over one cache (the tuner: one per candidate) build it once.
    """

    store: FathomStore
    k_rows: torch.Tensor  # [Hkv, n, d] views of one [Hkv, n, 2, d] buffer: row stride 2d
    v_rows: torch.Tensor
    # what it was built from: weak references to k and v and their version counters
    source: tuple = field(default=(), compare=False, repr=False)
    # registry of live residencies by (id(k), id(v), device, index, rows, basis, pages); an entry
    # lives as long as a decode step holds its residency
    _shared: ClassVar[weakref.WeakValueDictionary] = weakref.WeakValueDictionary()

    @classmethod
    def shared(cls, k: torch.Tensor, v: torch.Tensor, device: torch.device, index: str = "host",
               rows: str = "host", basis: str = "raw", pages: str = "default") -> "FathomResidency":
        """The residency of this cache and placement, built on first use: every method prepared on
        one workload (Fathom and its baselines in one comparison) reads the same index and rows,
        as layers of one model would, instead of each pinning its own gigabytes. Reused only for
        the very tensors it was built from, unmodified (an id can be reused after a free)."""
        device = torch.device(device)
        if device.type == "cuda" and device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        if index == "hbm" and rows == "hbm":
            pages = "default"  # nothing is pinned: every pages value is the same residency
        key = (id(k), id(v), str(device), index, rows, basis, pages)
        hit = cls._shared.get(key)
        if hit is None or not hit.built_from(k, v):
            hit = cls.build(k, v, device, index, rows, basis, pages)
            cls._shared[key] = hit
        return hit

    def built_from(self, k: torch.Tensor, v: torch.Tensor) -> bool:
        if not self.source:
            return False
        k_ref, v_ref, k_version, v_version = self.source
        return k_ref() is k and v_ref() is v and k._version == k_version and v._version == v_version

    @classmethod
    def build(cls, k: torch.Tensor, v: torch.Tensor, device: torch.device, index: str = "host", rows: str = "host",
              basis: str = "raw", pages: str = "default") -> "FathomResidency":
        """``pages``: how host-resident parts are pinned (``kprof.core.host_memory.PAGE_KINDS``)."""
        if index not in ("host", "hbm") or rows not in ("host", "hbm"):
            raise ValueError("index and rows must be 'host' or 'hbm'")
        store = FathomStore.build(k.to(device), basis=basis)
        store = store.pinned(pages) if index == "host" and device.type == "cuda" else store
        # each token's K and V row side by side ([Hkv, n, 2, d]): a winner's fetch touches one
        # 512-byte run of host memory (one page) instead of two rows gigabytes apart
        kv = torch.stack([k.detach(), v.detach()], dim=2)
        kv = pinned_like(kv, pages) if rows == "host" else kv.to(device).contiguous()
        return cls(store, kv[:, :, 0], kv[:, :, 1], (weakref.ref(k), weakref.ref(v), k._version, v._version))


class FathomDecode:
    def __init__(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, policy: ChannelPolicy, k_top: int,
                 config: dict, device: torch.device, index: str = "host", rows: str = "host", basis: str = "raw",
                 residency: FathomResidency | None = None, gather: str = "fused", pages: str = "default",
                 pieces: int | tuple[int, ...] = 1):
        """``gather``: 'copy' stages the active planes in HBM with the gather launch, then scans them;
        'fused' scans them where the index lives (one launch reads the same bytes once).
        ``pieces``: KV-head ranges the step is pipelined over (see :meth:`run`): a count of even
        ranges, or their sizes (``split_heads``)."""
        if gather not in GATHER_MODES:
            raise ValueError(f"gather must be one of {', '.join(GATHER_MODES)}, not {gather!r}")
        hq, d = q.shape
        hkv, n, _ = k.shape
        self.hq, self.hkv, self.n, self.d, self.group = hq, hkv, n, d, hq // hkv
        self.k_top = min(k_top, n)
        if self.k_top < min(n, SINK_TOKENS + RECENT_TOKENS):
            raise ValueError(f"k={k_top} cannot hold the {SINK_TOKENS} sink and {RECENT_TOKENS} recent tokens")
        residency = residency or FathomResidency.build(k, v, device, index, rows, basis, pages)
        self.residency = residency  # held: the shared registry keeps it only while a step uses it
        self.store, self.k_rows, self.v_rows = residency.store, residency.k_rows, residency.v_rows
        self.q = q.to(device).contiguous()
        self.cfg = config
        n_chunks = triton.cdiv(n, CHUNK)
        prune = config["topk"]["PRUNE"]
        fits = self.k_top <= n_chunks and self.k_top * CHUNK < n  # k chunks exist and prune something
        if prune == 2 and fits and max(n_chunks, self.k_top * CHUNK) > MAX_TRITON_TOPK_ROW:
            prune = 1  # the Triton top-k keeps a row in registers; longer rows take the torch launches
        self.prune = prune if fits else 0
        # the torch top-k variants launch over all heads at once: they run unpipelined
        self.pieces = split_heads(hkv, self.group, pieces)  # checks the sizes whatever the top-k
        if self.prune != 2:
            self.pieces = split_heads(hkv, self.group, 1)
        pipelined = len(self.pieces) > 1 and torch.device(device).type == "cuda"
        self.scan = FathomScan(self.q, self.store, policy, config, device, fused=gather == "fused", reserve=pipelined)
        e = self.group * self.k_top
        self.entries = e
        i64 = torch.int64
        self.top_idx = torch.empty(hq, self.k_top, dtype=i64, device=device)
        self.forced = torch.cat([torch.arange(min(SINK_TOKENS, n)),
                                 torch.arange(max(0, n - RECENT_TOKENS), n)]).to(device)
        self.chunk_idx = torch.empty(hq, self.k_top, dtype=i64 if self.prune == 1 else torch.int32, device=device)
        if self.prune == 1:
            self.forced_chunks = torch.unique(self.forced // CHUNK)
            self.chunk_vals = torch.empty(hq, self.k_top, dtype=torch.float32, device=device)
            self.lanes = torch.arange(CHUNK, device=device).view(1, 1, CHUNK)
            self.cand_tok = torch.empty(hq, self.k_top, CHUNK, dtype=i64, device=device)
            self.cand_scores = torch.empty(hq, self.k_top * CHUNK, dtype=torch.float32, device=device)
            self.pick = torch.empty(hq, self.k_top, dtype=i64, device=device)
        if self.prune < 2:  # the torch launches: values, then ids sorted ascending for the union
            self.top_vals = torch.empty(hq, self.k_top, dtype=torch.float32, device=device)
            self.unsorted_idx = torch.empty(hq, self.k_top, dtype=i64, device=device)
            self.sort_perm = torch.empty(hq, self.k_top, dtype=i64, device=device)
        self.arrived = torch.zeros(hkv, dtype=torch.int32, device=device)  # top-k programs done per KV head
        self.union_in_topk = self.prune == 2 and bool(config["topk"]["UNION"])
        self.sorted_rows = torch.empty(hkv, e, dtype=i64, device=device)
        self.first = torch.ones(hkv, e, dtype=torch.bool, device=device)
        self.slot = torch.empty(hkv, e, dtype=i64, device=device)
        self.head_slots = torch.empty(hq, self.k_top, dtype=i64, device=device)
        # K and V of a union row side by side, as in the residency: the fetch copies one 2d run
        union = torch.empty(hkv, e, 2, d, dtype=k.dtype, device=device)
        self.union_k, self.union_v = union[:, :, 0], union[:, :, 1]
        if self.v_rows.data_ptr() != self.k_rows.data_ptr() + d * self.k_rows.element_size() \
                or self.v_rows.stride() != self.k_rows.stride():
            raise ValueError("the residency must keep each row's V right after its K (FathomResidency.build does)")
        self.out = torch.empty(hq, d, dtype=q.dtype, device=device)
        self.splits = triton.cdiv(self.k_top, config["attend"]["BLOCK_R"])  # attend's tile partials per head
        self.part_m = torch.empty(hq, self.splits, dtype=torch.float32, device=device)
        self.part_l = torch.empty_like(self.part_m)
        self.part_acc = torch.empty(hq, self.splits, d, dtype=torch.float32, device=device)
        self.all_heads = self.scan.all_heads
        self.side = torch.cuda.Stream(device, priority=-1) if pipelined else None
        self.planned = torch.cuda.Event() if pipelined else None
        self.selected = torch.cuda.Event() if pipelined else None
        self.bind()

    def bound_topk(self, heads: HeadRange, wait: bool = False) -> Callable[[], None]:
        """Each head's top-k token ids, ascending (the union merges sorted lists). Only the Triton
        top-k (PRUNE 2) takes a head range: the torch variants run over all heads, unpipelined.
        ``wait``: each program first waits for the scan to finish its KV head (a pipelined step
        launches it beside the scan)."""
        if self.prune < 2:  # through a proxy: a bound method kept in self would make a reference cycle
            return functools.partial(FathomDecode._torch_topk, weakref.proxy(self))
        c = self.cfg["topk"]
        q, kv = heads.q, heads.kv
        block_t = triton.next_power_of_2(self.k_top * CHUNK)
        block_c = triton.next_power_of_2(self.scan.n_chunks)
        return bound_launch(
            fathom_topk, (heads.n_q,),
            self.scan.scores_padded[q], self.scan.chunk_max[q], self.chunk_idx[q], self.top_idx[q],
            self.scan.scanned[kv], self.scan.wait_expiries, self.sorted_rows[kv], self.first[kv], self.slot[kv],
            self.head_slots[q], self.arrived[kv], self.n, self.scan.n_chunks, self.k_top,
            self.scan.scores_padded.stride(0), self.scan.chunk_max.stride(0), self.top_idx.stride(0),
            self.scan.tiles_per_head, WAIT_POLLS, self.entries, self.head_slots.stride(0),
            CHUNK=CHUNK, SINK=SINK_TOKENS, RECENT=RECENT_TOKENS, BLOCK_C=block_c, BLOCK_T=block_t,
            TILE=min(4096, block_c, block_t), RADIX_BITS=c["RADIX_BITS"], SEARCH=c["SEARCH"], WAIT=wait,
            GROUP=self.group, UNION=self.union_in_topk, BLOCK_E=triton.next_power_of_2(self.entries),
            SEARCH_STEPS=self.k_top.bit_length(), GATHER=self.cfg["union"]["GATHER"], num_warps=c["num_warps"])

    def _torch_topk(self) -> None:
        """The torch top-k launches (PRUNE 0: one torch.topk per row; 1: chunk-pruned), all heads."""
        scores = self.scan.scores
        scores.index_fill_(1, self.forced, float("inf"))
        if self.prune == 0:
            torch.topk(scores, self.k_top, dim=1, out=(self.top_vals, self.unsorted_idx))
        else:
            self.scan.chunk_max.index_fill_(1, self.forced_chunks, float("inf"))
            torch.topk(self.scan.chunk_max, self.k_top, dim=1, out=(self.chunk_vals, self.chunk_idx))
            torch.add(self.lanes, self.chunk_idx.unsqueeze(2), alpha=CHUNK, out=self.cand_tok)
            candidates = self.cand_tok.view(self.hq, -1)
            torch.gather(self.scan.scores_padded, 1, candidates, out=self.cand_scores)
            torch.topk(self.cand_scores, self.k_top, dim=1, out=(self.top_vals, self.pick))
            torch.gather(candidates, 1, self.pick, out=self.unsorted_idx)
        torch.sort(self.unsorted_idx, dim=1, out=(self.top_idx, self.sort_perm))

    def bound_union(self, heads: HeadRange) -> Callable[[], None]:
        return bound_launch(
            fathom_union, (heads.n_kv,),
            self.top_idx[heads.q], self.sorted_rows[heads.kv], self.first[heads.kv], self.slot[heads.kv],
            self.head_slots[heads.q], self.k_top, self.entries, self.top_idx.stride(0), self.head_slots.stride(0),
            GROUP=self.group, BLOCK_E=triton.next_power_of_2(self.entries), SEARCH_STEPS=self.k_top.bit_length(),
            GATHER=self.cfg["union"]["GATHER"], num_warps=self.cfg["union"]["num_warps"])

    def bound_fetch(self, heads: HeadRange) -> Callable[[], None]:
        c = self.cfg["fetch"]
        kv = heads.kv
        return bound_launch(
            fathom_fetch_rows, (heads.n_kv, triton.cdiv(self.entries, c["ROWS"])),
            self.k_rows[kv], self.v_rows[kv], self.sorted_rows[kv], self.first[kv], self.slot[kv], self.union_k[kv],
            self.union_v[kv], self.entries, self.k_rows.stride(0), self.k_rows.stride(1), self.union_k.stride(0),
            self.union_k.stride(1), D=self.d, ROWS=c["ROWS"], PAIRED=bool(c["PAIRED"]), num_warps=c["num_warps"])

    def bound_attend(self, heads: HeadRange) -> Callable[[], None]:
        """Tile partials of each head's softmax, then one merge per head (two launches)."""
        c = self.cfg["attend"]
        q, kv = heads.q, heads.kv
        tiles = bound_launch(
            fathom_attend, (heads.n_q, self.splits),
            self.q[q], self.union_k[kv], self.union_v[kv], self.head_slots[q], self.part_m[q], self.part_l[q],
            self.part_acc[q], self.k_top, 1.4426950408889634 / math.sqrt(self.d),
            self.q.stride(0), self.union_k.stride(0), self.union_k.stride(1), self.head_slots.stride(0),
            self.part_m.stride(0), GROUP=self.group, D=self.d, BLOCK_R=c["BLOCK_R"], num_warps=c["num_warps"])
        merge = bound_combine(self.part_m[q], self.part_l[q], self.part_acc[q], self.out[q], self.splits,
                              block_d=self.d, num_warps=4)

        def attend() -> None:
            tiles()
            merge()

        return attend

    def selection_launches(self, heads: HeadRange, wait: bool = False) -> tuple:
        """The bound launches after the scan for ``heads``: top-k, union (unless the top-k builds
        it: ``topk.UNION``), fetch, attend."""
        union = () if self.union_in_topk else (("union", self.bound_union(heads)),)
        return (("topk", self.bound_topk(heads, wait)), *union, ("fetch", self.bound_fetch(heads)),
                ("attend", self.bound_attend(heads)))

    def bind(self) -> None:
        """Fix every launch's arguments and per-head views to the current buffers, once: a run
        then costs the host only Triton's dispatch (again after replacing a buffer)."""
        self.scan.bind()
        self._stages = (*self.scan.stages(), *self.selection_launches(self.all_heads))
        # per piece, its selection, whose top-k waits for the scan (one piece runs self._stages)
        self._piece_launches = [self.selection_launches(p, wait=True)
                                for p in self.pieces] if len(self.pieces) > 1 else []

    def stages(self):
        """Every launch over all heads, in order (what ``kprof stages`` times one by one)."""
        return self._stages

    def run(self) -> torch.Tensor:
        """One step. With several pieces, the scan runs as one launch over every head while each
        piece's selection (top-k to attend) runs on a second, higher-priority stream: its top-k
        waits inside the kernel until the scan has finished the piece's KV heads (the scan
        counts tiles per head), so there is no launch boundary in the scan and each piece's
        selection starts as soon as its heads are scanned, on SMs the scan leaves free. The
        selections' latency-bound launches and the fetch hide under the rest of the scan's PCIe
        stream; only the last piece's selection is exposed. The waits need the scan to run beside
        (or before) the top-ks: eagerly it is enqueued first and holds all but the reserved SMs;
        CUDA does not promise it for graph replays or under kernel-serialising tools. A wait that
        gives up is counted (``faults``). On the CPU the pieces run one after another. Runs must
        come from one stream (the next run's plan waits for this run's selections there)."""
        if len(self.pieces) == 1:
            for _, launch in self._stages:
                launch()
            return self.out
        self.scan.launch_plan()
        if self.side is None:
            for _, launch in (*self.scan.reads, *(x for sel in self._piece_launches for x in sel)):
                launch()
            return self.out
        self.planned.record()
        for _, launch in self.scan.reads:
            launch()
        self.side.wait_event(self.planned)  # the plan zeroes the counts the top-ks wait on
        with torch.cuda.stream(self.side):
            for selection in self._piece_launches:
                for _, launch in selection:
                    launch()
        self.selected.record(self.side)
        torch.cuda.current_stream(self.side.device).wait_event(self.selected)
        return self.out

    def wait_expiries(self) -> int:
        """Top-k waits on the scan that gave up since the step was built (0 in a correct run)."""
        return int(self.scan.wait_expiries.item())

    def faults(self) -> list[str]:
        """What went wrong in this step's runs so far, one line each (a host sync: not timed)."""
        n = self.wait_expiries() if len(self._piece_launches) else 0
        if not n:
            return []
        return [f"{n} pipelined top-k wait(s) gave up after {WAIT_POLLS:,} polls of the scan's tile count: "
                "those steps' winners are invalid and their times include the wait; run with pieces=1 and "
                "report the GPU, driver and launch config"]

    def winners(self) -> torch.Tensor:
        """Selected token indices per query head ``[Hq, k]`` of the last run (host copy)."""
        return self.top_idx.cpu()
