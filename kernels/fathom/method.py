"""``fathom`` and its channel-scan baselines (``scan32``, ``sparq16``, ``scan-full``).

All four share the 4-bit bit-plane index, the gather, the scan, the top-k, the union and the
exact attention; they differ only in how the plan picks channel depths. Options:
``fathom:budget=48,k=512,index=host,rows=host,basis=raw,gather=fused,pages=default,pieces=4``
(baselines take all but ``budget``). ``pages=huge`` / ``pages=wc`` pin the host-resident index and rows
on transparent huge pages / write-combined memory (``kprof.core.host_memory``) instead of
cudaHostAlloc's. ``gather=fused`` (default): the scan reads the active planes where the index
lives, so its loads are the gather (same bytes, one pass); ``gather=copy``: the gather launch
stages them in HBM and the scan reads the copy. ``pieces=4`` (default with the index in host
memory, at most one per KV head): the step is pipelined over ranges of KV heads; one scan
launch goes through the heads in order and counts the tiles it has done per head, and each
range's top-k (which also builds the range's union), fetch and attention run on a second
stream, the top-k waiting in the kernel for its heads' counts (``FathomDecode.run``). More
ranges hide more of the scan, but every launch they add costs device time even when the host
enqueues ahead. ``pieces=3+3+1+1`` gives the ranges' sizes (adding up to the KV heads): only
the last range's selection is exposed after the scan, so a small last range shortens that tail.
``pieces=1`` (default with ``index=hbm``, whose short step the launches' host time would bound)
runs the launches one after another. ``pages`` defaults to cudaHostAlloc's
memory; the other kinds are there to compare against it.
"""

from __future__ import annotations

import math
from typing import ClassVar

import torch

from kprof.core.config_space import MethodConfig
from kprof.core.errors import ConfigError
from kprof.kernels.fathom.reference import scan_bits
from kprof.kernels.fathom.scan import ALL_CHANNELS, top_q, water
from kprof.kernels.fathom.step import LAUNCH_KERNELS, LAUNCH_SPACES, FathomDecode, FathomResidency
from kprof.methods.base import Method, Prepared, Stage
from kprof.methods.registry import register
from kprof.workloads.workload import Workload

_CHOICES = {  # the values each choice option takes, its default first, and what it sets
    "index": (("host", "hbm"), "where the bit-plane index lives (host: pinned memory, read over PCIe)"),
    "rows": (("host", "hbm"), "where the K/V rows the fetch reads live"),
    "basis": (("raw", "klt"), "channels as stored, or rotated to the keys' eigenbasis"),
    "gather": (("fused", "copy"), "the scan reads the planes where they live, or from an HBM copy staged first"),
    "pages": (("default", "huge", "wc"), "the pinned memory's kind (cudaHostAlloc, huge pages, write-combined)"),
}
_OPTIONS = {
    "k": "int (512): tokens the exact top-k selects per query head",
    **{key: f"{'|'.join(values)}: {meaning}" for key, (values, meaning) in _CHOICES.items()},
    "pieces": "int or sizes like 3+3+1+1 (4 with the host index): KV-head ranges the step is pipelined over",
}


class _FathomFamily(Method):
    selection_dependent = True
    pow2_head_dim = True
    options = _OPTIONS
    dtypes = (torch.float16, torch.bfloat16, torch.float32)
    takes_budget: ClassVar[bool] = False

    def __init__(self, budget: float = 48.0, k: int = 512, index: str = "host", rows: str = "host", basis: str = "raw",
                 gather: str = "fused", pages: str = "default", pieces: int | tuple[int, ...] | None = None):
        self.budget, self.k, self.index, self.rows, self.basis = float(budget), int(k), index, rows, basis
        self.gather, self.pages = gather, pages
        # the HBM-index step is shorter than the host time of a pipelined step's launches, so it
        # runs unpipelined unless asked
        self.pieces = pieces if pieces is not None else (4 if index == "host" else 1)

    @classmethod
    def from_options(cls, options: dict[str, str]) -> "Method":
        kw: dict = {}
        for key, value in options.items():
            if key in _CHOICES:
                values = _CHOICES[key][0]
                if value not in values:
                    raise ConfigError(f"{cls.name} option {key}={value!r}: choose {' or '.join(values)}")
                kw[key] = value
            elif key == "pieces" and "+" in value:
                try:
                    kw[key] = tuple(int(x) for x in value.split("+"))
                except ValueError:
                    raise ConfigError(f"{cls.name} option pieces={value!r}: give a count (4) or range sizes "
                                      "adding up to the KV heads (3+3+1+1)") from None
                if min(kw[key]) < 1:
                    raise ConfigError(f"{cls.name} option pieces={value}: every range needs at least one KV head")
            elif key in ("k", "pieces") or (key == "budget" and cls.takes_budget):
                try:
                    kw[key] = float(value) if key == "budget" else int(value)
                except ValueError:
                    raise ConfigError(f"{cls.name} option {key}={value!r} must be a number") from None
                if key == "pieces" and kw[key] < 1:
                    raise ConfigError(f"{cls.name} option pieces={value}: use 1 (no pipelining) or more")
            else:
                raise ConfigError(f"unknown {cls.name} option {key!r}: use {', '.join(cls.options)}")
        return cls(**kw)

    fixed_channels: ClassVar[int | None] = None  # baselines: channels read at 4 bits (None: all)

    def policy(self):
        """Water-filling for Fathom; the fixed-channel rule of the baselines otherwise."""

        if self.takes_budget:
            return water(self.budget)
        return top_q(self.fixed_channels) if self.fixed_channels else ALL_CHANNELS

    def config_space(self):

        return LAUNCH_SPACES

    def launch_kernels(self):
        return LAUNCH_KERNELS

    def _prepare(self, workload: Workload, config: MethodConfig) -> Prepared:

        if isinstance(self.pieces, tuple) and sum(self.pieces) != workload.shape.hkv:
            raise ConfigError(f"{self.name} option pieces={'+'.join(map(str, self.pieces))}: the range sizes "
                              f"must add up to the workload's {workload.shape.hkv} KV heads")
        residency = FathomResidency.shared(workload.k, workload.v, workload.q.device, self.index, self.rows, self.basis,
                                           self.pages)
        op = FathomDecode(workload.q, workload.k, workload.v, self.policy(), self.k, config, workload.q.device,
                          residency=residency, gather=self.gather, pieces=self.pieces)
        op.scan.launch_plan()  # one plan outside timing, only to report the bytes this query reads
        bits = [scan_bits(op.scan.depth[h].cpu()) for h in range(op.hkv)]
        return Prepared(
            method=self.name, config=config, run=op.run,
            stages=tuple(Stage(name, fn) for name, fn in op.stages()),
            expected_kernels=(), output=op.out, handle=op, faults=op.faults,
            details={"k": op.k_top, "index": self.index, "rows": self.rows, "basis": self.basis, "gather": self.gather,
                     "pages": self.pages,
                     "pieces": [p.n_kv for p in op.pieces] if op.side is not None else [op.hkv],
                     "scan_bits_per_token": bits, "index_bytes": op.store.nbytes(),
                     "scan_bytes_per_step": sum(b * workload.shape.n / 8 for b in bits)},
        )

    def bytes_per_call(self, workload: Workload, prepared: Prepared) -> int:
        """The bit planes the scan reads at this query's depths, the distinct winning K and V rows
        of each KV head's query heads (fetched from wherever the rows live: over PCIe when they are
        in host memory), the query and the output."""
        s, item = workload.shape, workload.dtype.itemsize
        winners = prepared.handle.winners()
        rows = sum(len(torch.unique(torch.cat([winners[h].cpu() for h in range(g * s.group, (g + 1) * s.group)])))
                   for g in range(s.hkv))
        scan = int(prepared.details["scan_bytes_per_step"])
        return scan + 2 * rows * s.d * item + 2 * s.hq * s.d * item

    def bytes_from_host(self, prepared: Prepared) -> bool:
        """The index or the rows pinned in host memory: their bytes cross PCIe."""
        return "host" in (self.index, self.rows)

    def reference_for(self, workload: Workload, prepared: Prepared) -> torch.Tensor:
        """fp64 exact attention of each head over its own selected tokens (the kernel's winners)."""
        winners = prepared.handle.winners()
        q = workload.q.detach().cpu().double()
        group = q.shape[0] // workload.k.shape[0]
        out = torch.empty_like(q)
        for h in range(q.shape[0]):
            # only the winner rows leave the device: the whole cache in fp64 is 16 GB at 1M tokens
            rows = winners[h].to(workload.k.device)
            k = workload.k[h // group].index_select(0, rows).cpu().double()
            v = workload.v[h // group].index_select(0, rows).cpu().double()
            p = torch.softmax(k @ q[h] / math.sqrt(q.shape[1]), dim=0)
            out[h] = p @ v
        return out


@register
class Fathom(_FathomFamily):
    name = "fathom"
    summary = "Fathom: per-query water-filled read depth over 4-bit bit planes (budget = code bits/token)"
    takes_budget = True
    options = {"budget": "bits (48): code bits per token the water-filling spends", **_OPTIONS}


@register
class Scan32(_FathomFamily):
    name = "scan32"
    summary = "32 channels by group |q| at 4 bits (SparQ r=32 / Double Sparsity / Loki byte count, 136 bits)"
    fixed_channels = 32


@register
class Sparq16(_FathomFamily):
    name = "sparq16"
    summary = "SparQ r=16: 16 channels by group |q| at 4 bits (68 bits)"
    fixed_channels = 16


@register
class ScanFull(_FathomFamily):
    name = "scan-full"
    summary = "every channel at 4 bits (544 bits)"
