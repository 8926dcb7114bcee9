"""How peaked a workload's attention is: what a sparse method can hope to exploit."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from kprof.workloads.workload import Workload


@dataclass(frozen=True)
class HeadProfile:
    head: int
    top1pct_mass: float
    top512_mass: float
    sink_mass: float
    effective_keys: float  # exp(entropy) of the attention distribution


@dataclass(frozen=True)
class AttentionProfile:
    """Per-head attention concentration of one workload, computed exactly in fp64."""

    heads: tuple[HeadProfile, ...]
    n: int

    def mean(self, field: str) -> float:
        return sum(getattr(h, field) for h in self.heads) / len(self.heads)

    def min(self, field: str) -> float:
        return min(getattr(h, field) for h in self.heads)

    def max(self, field: str) -> float:
        return max(getattr(h, field) for h in self.heads)


def attention_probabilities(workload: Workload, head: int) -> torch.Tensor:
    """Exact softmax(q·k/√d) over all N keys for query head ``head``, fp64 on the CPU."""
    group = workload.shape.group
    q = workload.q[head].to("cpu", torch.float64)
    k = workload.k[head // group].to("cpu", torch.float64)
    logits = k @ q / math.sqrt(q.shape[0])
    return torch.softmax(logits, dim=0)


def attention_profile(workload: Workload, sinks: int = 4) -> AttentionProfile:
    n = workload.shape.n
    top1 = max(1, n // 100)
    top512 = min(512, n)
    heads = []
    for h in range(workload.shape.hq):
        p = attention_probabilities(workload, h)
        sorted_p = torch.sort(p, descending=True).values
        entropy = -(p * torch.log(p.clamp_min(1e-300))).sum().item()
        heads.append(
            HeadProfile(
                head=h,
                top1pct_mass=sorted_p[:top1].sum().item(),
                top512_mass=sorted_p[:top512].sum().item(),
                sink_mass=p[: min(sinks, n)].sum().item(),
                effective_keys=math.exp(entropy),
            )
        )
    return AttentionProfile(heads=tuple(heads), n=n)
