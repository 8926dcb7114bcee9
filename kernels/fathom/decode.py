"""FathomDecode: one layer's sparse decode step over a bit-plane index.

plan -> gather (index planes, host or HBM) -> scan -> top-k per query head (first 4 and last 32
tokens always kept) -> union of winners per KV head -> fetch of the distinct winner K/V rows
(host or HBM) -> exact attention of each head over its own winners. All buffers are allocated
here; ``run()`` launches only (Triton kernels plus a few torch ops that run on the device
without host synchronisation: topk, sort, cumsum, scatter).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import triton

from kprof.config_space import LaunchSpace, Param
from kprof.kernels.fathom.operator import LAUNCH_SPACES as SCAN_SPACES
from kprof.kernels.fathom.operator import ChannelPolicy, FathomScan
from kprof.kernels.fathom.store import FathomStore
from kprof.kernels.fathom.triton_kernels import fathom_attend, fathom_fetch_rows

SINK_TOKENS = 4
RECENT_TOKENS = 32
LAUNCH_SPACES = dict(SCAN_SPACES) | {
    # top-k over long rows in two passes: the best k of each segment, then the best k of those.
    # One torch.topk over a 1M-token row makes several radix passes over all of it; many short
    # rows take the per-row path. Exact: every global winner is among its own segment's best k.
    # Used when the row holds at least 4 segments and k fits in one.
    "topk": LaunchSpace("topk", (Param("SEGMENT", (0, 4096, 8192, 16384, 32768, 65536), 16384,
                                       "tokens per first-pass segment (0: one pass over each row)"),)),
    "fetch": LaunchSpace("fetch", (Param("ROWS", (8, 16, 32, 64), 16, "winner rows per program"),
                                   Param("num_warps", (1, 2, 4, 8), 4))),
    "attend": LaunchSpace("attend", (Param("BLOCK_R", (16, 32, 64, 128), 64, "winner rows per tile"),
                                     Param("num_warps", (1, 2, 4, 8), 4))),
}


def _host_copy(t: torch.Tensor) -> torch.Tensor:
    """Pinned host copy when CUDA exists (so kernels can read it over PCIe), plain CPU otherwise."""
    out = t.detach().cpu().contiguous()
    return out.pin_memory() if torch.cuda.is_available() else out


@dataclass(frozen=True)
class FathomResidency:
    """The bit-plane index and the K/V rows where a decode step reads them (host or HBM).

    Building it quantises the whole cache and pins gigabytes at 1M tokens, so callers that
    prepare many decode steps over one cache (the tuner: one per candidate) build it once.
    """

    store: FathomStore
    k_rows: torch.Tensor
    v_rows: torch.Tensor

    @classmethod
    def build(cls, k: torch.Tensor, v: torch.Tensor, device: torch.device, index: str = "host", rows: str = "host",
              basis: str = "raw") -> "FathomResidency":
        if index not in ("host", "hbm") or rows not in ("host", "hbm"):
            raise ValueError("index and rows must be 'host' or 'hbm'")
        store = FathomStore.build(k.to(device), basis=basis)
        store = store.pinned() if index == "host" and device.type == "cuda" else store
        if rows == "host":
            return cls(store, _host_copy(k), _host_copy(v))
        return cls(store, k.to(device).contiguous(), v.to(device).contiguous())


class FathomDecode:
    def __init__(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, policy: ChannelPolicy, k_top: int,
                 config: dict, device: torch.device, index: str = "host", rows: str = "host", basis: str = "raw",
                 residency: FathomResidency | None = None):
        hq, d = q.shape
        hkv, n, _ = k.shape
        self.hq, self.hkv, self.n, self.d, self.group = hq, hkv, n, d, hq // hkv
        self.k_top = min(k_top, n)
        if self.k_top < min(n, SINK_TOKENS + RECENT_TOKENS):
            raise ValueError(f"k={k_top} cannot hold the {SINK_TOKENS} sink and {RECENT_TOKENS} recent tokens")
        residency = residency or FathomResidency.build(k, v, device, index, rows, basis)
        self.store, self.k_rows, self.v_rows = residency.store, residency.k_rows, residency.v_rows
        self.q = q.to(device).contiguous()
        self.cfg = config
        seg = config["topk"]["SEGMENT"]
        segmented = seg > 0 and n >= 4 * seg and self.k_top <= seg
        self.scan = FathomScan(self.q, self.store, policy, config, device, pad_to=seg if segmented else 1)
        self.segment = seg
        self.n_seg = self.scan.scores_padded.shape[1] // seg if segmented else 0
        e = self.group * self.k_top
        self.entries = e
        i64 = torch.int64
        self.top_vals = torch.empty(hq, self.k_top, dtype=torch.float32, device=device)
        self.top_idx = torch.empty(hq, self.k_top, dtype=i64, device=device)
        if self.n_seg:
            self.seg_vals = torch.empty(hq, self.n_seg, self.k_top, dtype=torch.float32, device=device)
            self.seg_idx = torch.empty(hq, self.n_seg, self.k_top, dtype=i64, device=device)
            self.seg_base = (torch.arange(self.n_seg, device=device) * seg).view(1, -1, 1)
            self.pick = torch.empty(hq, self.k_top, dtype=i64, device=device)
        self.sorted_rows = torch.empty(hkv, e, dtype=i64, device=device)
        self.perm = torch.empty(hkv, e, dtype=i64, device=device)
        self.first = torch.ones(hkv, e, dtype=torch.bool, device=device)
        self.slot = torch.empty(hkv, e, dtype=i64, device=device)
        self.head_slots = torch.empty(hq, self.k_top, dtype=i64, device=device)
        self.union_k = torch.empty(hkv, e, d, dtype=k.dtype, device=device)
        self.union_v = torch.empty_like(self.union_k)
        self.out = torch.empty(hq, d, dtype=q.dtype, device=device)
        self.forced = torch.cat([torch.arange(min(SINK_TOKENS, n)), torch.arange(max(0, n - RECENT_TOKENS), n)]).to(device)

    def launch_topk(self) -> None:
        scores = self.scan.scores
        scores.index_fill_(1, self.forced, float("inf"))
        if not self.n_seg:
            torch.topk(scores, self.k_top, dim=1, out=(self.top_vals, self.top_idx))
            return
        segments = self.scan.scores_padded.view(self.hq, self.n_seg, self.segment)
        torch.topk(segments, self.k_top, dim=2, out=(self.seg_vals, self.seg_idx))
        self.seg_idx.add_(self.seg_base)
        torch.topk(self.seg_vals.view(self.hq, -1), self.k_top, dim=1, out=(self.top_vals, self.pick))
        torch.gather(self.seg_idx.view(self.hq, -1), 1, self.pick, out=self.top_idx)

    def launch_union(self) -> None:
        torch.sort(self.top_idx.view(self.hkv, self.entries), dim=1, out=(self.sorted_rows, self.perm))
        torch.ne(self.sorted_rows[:, 1:], self.sorted_rows[:, :-1], out=self.first[:, 1:])
        torch.cumsum(self.first, dim=1, out=self.slot)
        self.slot.sub_(1)
        self.head_slots.view(self.hkv, self.entries).scatter_(1, self.perm, self.slot)

    def launch_fetch(self) -> None:
        c = self.cfg["fetch"]
        fathom_fetch_rows[(self.hkv, triton.cdiv(self.entries, c["ROWS"]))](
            self.k_rows, self.v_rows, self.sorted_rows, self.first, self.slot, self.union_k, self.union_v,
            self.entries, self.k_rows.stride(0), self.k_rows.stride(1), self.union_k.stride(0), self.union_k.stride(1),
            D=self.d, ROWS=c["ROWS"], num_warps=c["num_warps"])

    def launch_attend(self) -> None:
        c = self.cfg["attend"]
        fathom_attend[(self.hq,)](
            self.q, self.union_k, self.union_v, self.head_slots, self.out,
            self.k_top, 1.4426950408889634 / math.sqrt(self.d),
            self.q.stride(0), self.union_k.stride(0), self.union_k.stride(1), self.head_slots.stride(0),
            self.out.stride(0), GROUP=self.group, D=self.d, BLOCK_R=c["BLOCK_R"], num_warps=c["num_warps"])

    def stages(self):
        return (("plan", self.scan.launch_plan), ("gather", self.scan.launch_gather), ("scan", self.scan.launch_scan),
                ("topk", self.launch_topk), ("union", self.launch_union), ("fetch", self.launch_fetch),
                ("attend", self.launch_attend))

    def run(self) -> torch.Tensor:
        for _, launch in self.stages():
            launch()
        return self.out

    def winners(self) -> torch.Tensor:
        """Selected token indices per query head ``[Hq, k]`` of the last run (host copy)."""
        return self.top_idx.cpu()
