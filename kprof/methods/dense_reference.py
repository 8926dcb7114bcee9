"""Independent fp64 references on the CPU."""

from __future__ import annotations

import math

import torch

from kprof.workloads.workload import Workload


def dense_attention_fp64(workload: Workload) -> torch.Tensor:
    """softmax(q·kᵀ/√d)·v for every query head against its KV head, in fp64 on the CPU: ``[Hq, d]``.

    One KV head at a time, so a 1M-token cache needs two heads' worth of fp64 (2 GB), not all of them."""
    q = workload.q.detach().to("cpu", torch.float64)
    hq, d = q.shape
    hkv = workload.k.shape[0]
    qg = q.view(hkv, hq // hkv, d)
    out = torch.empty(hkv, hq // hkv, d, dtype=torch.float64)
    for h in range(hkv):
        k = workload.k[h].detach().to("cpu", torch.float64)
        v = workload.v[h].detach().to("cpu", torch.float64)
        out[h] = torch.softmax(qg[h] @ k.T / math.sqrt(d), dim=-1) @ v
    return out.reshape(hq, d)
