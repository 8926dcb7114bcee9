"""Deterministic synthetic decode workloads with the structure of real post-RoPE caches.

White noise would flatter or punish sparse methods arbitrarily, so the generator builds in the
features sparse decode attention relies on and is sensitive to:

* clustered keys (a per-head codebook plus noise), so k-means parents have structure;
* heterogeneous per-channel scales with a few dominant low-frequency channels and a per-channel
  mean offset, as seen in real K caches;
* RoPE applied at every position with the model's base;
* a few attention-sink tokens at the start with large keys;
* per-head queries aligned with a handful of "needle" keys and the sinks, with a norm chosen so
  the top 1% of keys hold 45-85% of the attention mass: peaked, but not one-hot.

Everything is drawn on the CPU from seeded generators per (head, chunk), so the same spec gives
the same bytes (and content hash) on every machine, with memory bounded by the chunk size.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import asdict, dataclass

import torch

from kprof.workloads.rope import apply_rope
from kprof.workloads.specs import WorkloadSpec, get_spec
from kprof.workloads.workload import Workload, dtype_from_name

_CHUNK = 65536


@dataclass(frozen=True)
class SyntheticRecipe:
    """Knobs of the generator. The norm of each query head is set so its top-1% keys hold a
    mass drawn from ``top1pct_mass_range``: peaked like real decode attention, not one-hot."""

    clusters_per_1k_tokens: float = 2.0
    max_clusters: int = 512
    cluster_noise: float = 0.6
    dominant_channel_pairs: int = 3
    dominant_scale: float = 4.0
    sinks: int = 4
    sink_norm_factor: float = 2.0
    needles_per_kv_head: int = 16
    needles_per_query_head: int = 6
    top1pct_mass_range: tuple[float, float] = (0.45, 0.85)
    sink_weight: float = 0.35
    query_noise: float = 0.5


def _gen(seed: int, *stream: int) -> torch.Generator:
    """A CPU generator for one named stream; stable across processes and Python versions."""
    digest = hashlib.sha256(repr((seed,) + stream).encode()).digest()
    g = torch.Generator(device="cpu")
    g.manual_seed(int.from_bytes(digest[:8], "little") & 0x7FFF_FFFF_FFFF_FFFF)
    return g


def _unit(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12)


def _kv_head(spec: WorkloadSpec, recipe: SyntheticRecipe, h: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Post-RoPE keys and values ``[N, d]`` of KV head ``h`` (fp32), plus its channel scales."""
    n, d, seed = spec.n, spec.d, spec.seed
    g = _gen(seed, 1, h)
    half = d // 2
    scale = torch.exp(0.35 * torch.randn(d, generator=g))
    # dominant channels: low-frequency RoPE pairs (last quarter of each half), both members scaled
    low_freq = torch.arange(half - max(1, half // 4), half)
    pick = low_freq[torch.randperm(low_freq.numel(), generator=g)[: recipe.dominant_channel_pairs]]
    scale[pick] *= recipe.dominant_scale
    scale[pick + half] *= recipe.dominant_scale
    bias = 0.5 * torch.randn(d, generator=g)
    clusters = int(min(recipe.max_clusters, max(4, round(n / 1000 * recipe.clusters_per_1k_tokens))))
    centroids = torch.randn(clusters, d, generator=g)
    v_scale = torch.exp(0.25 * torch.randn(d, generator=g))
    v_centroids = 0.5 * torch.randn(clusters, d, generator=g)

    keys = torch.empty(n, d)
    values = torch.empty(n, d)
    for c, start in enumerate(range(0, n, _CHUNK)):
        stop = min(n, start + _CHUNK)
        gc = _gen(seed, 2, h, c)
        assign = torch.randint(clusters, (stop - start,), generator=gc)
        raw = centroids[assign] + recipe.cluster_noise * torch.randn(stop - start, d, generator=gc)
        pre = (raw + bias) * scale
        keys[start:stop] = apply_rope(pre, torch.arange(start, stop), spec.rope_theta)
        values[start:stop] = (v_centroids[assign] + torch.randn(stop - start, d, generator=gc)) * v_scale
    sinks = min(recipe.sinks, n)
    if sinks:
        sink_dir = _unit(torch.randn(d, generator=g) * scale)
        typical = keys[sinks:].norm(dim=-1).mean() if n > sinks else keys.norm(dim=-1).mean()
        sink_pre = sink_dir * typical * recipe.sink_norm_factor
        keys[:sinks] = apply_rope(sink_pre.expand(sinks, d), torch.arange(sinks), spec.rope_theta)
    return keys, values, scale


def _queries(
    spec: WorkloadSpec, recipe: SyntheticRecipe, h: int, keys: torch.Tensor
) -> torch.Tensor:
    """Post-RoPE queries ``[G, d]`` of the G query heads that share KV head ``h``."""
    n, d = keys.shape
    group = spec.hq // spec.hkv
    g = _gen(spec.seed, 3, h)
    sinks = min(recipe.sinks, n)
    pool_size = min(recipe.needles_per_kv_head, max(1, n - sinks))
    pool = sinks + torch.randperm(max(1, n - sinks), generator=g)[:pool_size]
    sink_dir = _unit(keys[:sinks].mean(0)) if sinks else torch.zeros(d)
    out = torch.empty(group, d)
    for j in range(group):
        pick = pool[torch.randperm(pool.numel(), generator=g)[: recipe.needles_per_query_head]]
        direction = _unit(_unit(keys[pick]).sum(0))
        direction = direction + recipe.sink_weight * sink_dir + recipe.query_noise * _unit(torch.randn(d, generator=g))
        direction = _unit(direction)
        lo, hi = recipe.top1pct_mass_range
        target = lo + (hi - lo) * torch.rand((), generator=g).item()
        out[j] = direction * _norm_for_top1pct_mass(keys @ direction / math.sqrt(d), target)
    return out


def _top1pct_mass(logits: torch.Tensor) -> float:
    p = torch.softmax(logits.double(), dim=0)
    return torch.topk(p, max(1, p.numel() // 100)).values.sum().item()


def _norm_for_top1pct_mass(unit_logits: torch.Tensor, target: float) -> float:
    """Query norm at which the top 1% of keys hold ``target`` of the attention mass (bisection)."""
    lo, hi = math.log(1e-3), math.log(1e4)
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if _top1pct_mass(unit_logits * math.exp(mid)) < target:
            lo = mid
        else:
            hi = mid
    return math.exp(0.5 * (lo + hi))


def synthesize(spec: WorkloadSpec | str, recipe: SyntheticRecipe | None = None) -> Workload:
    """Materialise a named spec as a deterministic synthetic :class:`Workload` (CPU tensors)."""
    spec = get_spec(spec) if isinstance(spec, str) else spec
    recipe = recipe or SyntheticRecipe()
    dtype = dtype_from_name(spec.dtype)
    k = torch.empty(spec.hkv, spec.n, spec.d, dtype=dtype)
    v = torch.empty_like(k)
    q = torch.empty(spec.hq, spec.d, dtype=dtype)
    group = spec.hq // spec.hkv
    for h in range(spec.hkv):
        keys, values, _ = _kv_head(spec, recipe, h)
        q[h * group : (h + 1) * group] = _queries(spec, recipe, h, keys).to(dtype)
        k[h] = keys.to(dtype)
        v[h] = values.to(dtype)
    metadata = {
        "name": spec.name,
        "source": "synthetic",
        "model": spec.model,
        "layer": spec.layer,
        "context": spec.n,
        "rope_theta": spec.rope_theta,
        "seed": spec.seed,
        "recipe": asdict(recipe),
    }
    return Workload(q=q, k=k, v=v, positions=torch.arange(spec.n), query_position=spec.n - 1, metadata=metadata)
