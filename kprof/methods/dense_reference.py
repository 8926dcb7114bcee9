"""Independent fp64 references on the CPU."""

from __future__ import annotations

import math

import torch

from kprof.workloads.workload import Workload


def dense_attention_fp64(workload: Workload) -> torch.Tensor:
    """softmax(q·kᵀ/√d)·v for every query head against its KV head, in fp64 on the CPU: ``[Hq, d]``."""
    q = workload.q.detach().to("cpu", torch.float64)
    k = workload.k.detach().to("cpu", torch.float64)
    v = workload.v.detach().to("cpu", torch.float64)
    hq, d = q.shape
    group = hq // k.shape[0]
    qg = q.view(k.shape[0], group, d)
    logits = torch.einsum("hgd,hnd->hgn", qg, k) / math.sqrt(d)
    probs = torch.softmax(logits, dim=-1)
    return torch.einsum("hgn,hnd->hgd", probs, v).reshape(hq, d)
