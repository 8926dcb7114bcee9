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

Everything is drawn from numpy's PCG64 generators, one stream per (head, chunk), and computed in
float64 on the CPU before one cast to the spec's dtype: no torch random numbers and no device
arithmetic, so the same spec gives the same bytes (and content hash) under any torch version, on
any machine. The hashes are listed in the README and asserted by the tests.
"""

from __future__ import annotations

import hashlib
import math
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass

import numpy as np
import torch

from kprof.workloads.rope import rope_numpy
from kprof.workloads.specs import WorkloadSpec, get_spec
from kprof.workloads.workload import Workload, dtype_from_name

_CHUNK = 65536
GENERATOR = "numpy-pcg64-float64/1"  # recorded in the metadata: which generator made the bytes


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


# A spec's layout picks the recipe: "clustered" keys as real caches have them (every named spec),
# or "uniform": i.i.d. keys without clusters, dominant channels or sinks, where sparse methods
# find no structure to exploit.
LAYOUTS = {
    "clustered": SyntheticRecipe(),
    "uniform": SyntheticRecipe(clusters_per_1k_tokens=0.0, cluster_noise=1.0, dominant_channel_pairs=0, sinks=0),
}


def _gen(seed: int, *stream: int) -> np.random.Generator:
    """A PCG64 generator for one named stream; stable across processes, versions and machines."""
    digest = hashlib.sha256(repr((seed,) + stream).encode()).digest()
    return np.random.Generator(np.random.PCG64(int.from_bytes(digest[:16], "little")))


def _unit(x: np.ndarray) -> np.ndarray:
    norm = np.sqrt((x * x).sum(axis=-1, keepdims=True))
    return x / np.maximum(norm, 1e-12)


def _kv_head(spec: WorkloadSpec, recipe: SyntheticRecipe, h: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Post-RoPE keys and values ``[N, d]`` of KV head ``h`` (float64), plus its channel scales."""
    n, d, seed = spec.n, spec.d, spec.seed
    g = _gen(seed, 1, h)
    half = d // 2
    scale = np.exp(0.35 * g.standard_normal(d))
    # dominant channels: low-frequency RoPE pairs (last quarter of each half), both members scaled
    low_freq = np.arange(half - max(1, half // 4), half)
    pick = low_freq[g.permutation(low_freq.size)[: recipe.dominant_channel_pairs]]
    scale[pick] *= recipe.dominant_scale
    scale[pick + half] *= recipe.dominant_scale
    bias = 0.5 * g.standard_normal(d)
    clusters = int(min(recipe.max_clusters, max(4, round(n / 1000 * recipe.clusters_per_1k_tokens))))
    centroids = g.standard_normal((clusters, d)) * (recipe.clusters_per_1k_tokens > 0)  # none: i.i.d. keys
    v_scale = np.exp(0.25 * g.standard_normal(d))
    v_centroids = 0.5 * g.standard_normal((clusters, d))

    keys = np.empty((n, d))
    values = np.empty((n, d))
    for c, start in enumerate(range(0, n, _CHUNK)):
        stop = min(n, start + _CHUNK)
        gc = _gen(seed, 2, h, c)
        assign = gc.integers(clusters, size=stop - start)
        raw = centroids[assign] + recipe.cluster_noise * gc.standard_normal((stop - start, d))
        pre = (raw + bias) * scale
        keys[start:stop] = rope_numpy(pre, np.arange(start, stop), spec.rope_theta)
        values[start:stop] = (v_centroids[assign] + gc.standard_normal((stop - start, d))) * v_scale
    sinks = min(recipe.sinks, n)
    if sinks:
        sink_dir = _unit(g.standard_normal(d) * scale)
        norms = np.sqrt((keys * keys).sum(axis=-1))
        typical = norms[sinks:].mean() if n > sinks else norms.mean()
        sink_pre = np.broadcast_to(sink_dir * typical * recipe.sink_norm_factor, (sinks, d))
        keys[:sinks] = rope_numpy(sink_pre, np.arange(sinks), spec.rope_theta)
    return keys, values, scale


def _queries(spec: WorkloadSpec, recipe: SyntheticRecipe, h: int, keys: np.ndarray) -> np.ndarray:
    """Post-RoPE queries ``[G, d]`` of the G query heads that share KV head ``h``."""
    n, d = keys.shape
    group = spec.hq // spec.hkv
    g = _gen(spec.seed, 3, h)
    sinks = min(recipe.sinks, n)
    pool_size = min(recipe.needles_per_kv_head, max(1, n - sinks))
    pool = sinks + g.permutation(max(1, n - sinks))[:pool_size]
    sink_dir = _unit(keys[:sinks].mean(0)) if sinks else np.zeros(d)
    out = np.empty((group, d))
    for j in range(group):
        pick = pool[g.permutation(pool.size)[: recipe.needles_per_query_head]]
        direction = _unit(_unit(keys[pick]).sum(0))
        direction = direction + recipe.sink_weight * sink_dir + recipe.query_noise * _unit(g.standard_normal(d))
        direction = _unit(direction)
        lo, hi = recipe.top1pct_mass_range
        target = lo + (hi - lo) * g.random()
        logits = (keys * direction).sum(axis=1) / math.sqrt(d)  # no BLAS: the same sums on every machine
        out[j] = direction * _norm_for_top1pct_mass(logits, target)
    return out


def _top1pct_mass(logits: np.ndarray) -> float:
    z = logits - logits.max()
    p = np.exp(z)
    p /= p.sum()
    top = max(1, p.size // 100)
    return float(np.partition(p, p.size - top)[p.size - top:].sum())


def _norm_for_top1pct_mass(unit_logits: np.ndarray, target: float) -> float:
    """Query norm at which the top 1% of keys hold ``target`` of the attention mass (bisection)."""
    lo, hi = math.log(1e-3), math.log(1e4)
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if _top1pct_mass(unit_logits * math.exp(mid)) < target:
            lo = mid
        else:
            hi = mid
    return math.exp(0.5 * (lo + hi))


def synthesis_workers(spec: WorkloadSpec) -> int:
    """Processes for the KV heads: one per head, up to the cores and to what free memory holds (a
    head takes about 3 x its float64 keys and values), once the workload has millions of tokens
    (a 1M-token head takes ~20 s); a daemon process (a tuning worker) may not start processes."""
    if spec.n * spec.hkv < 1 << 22 or spec.hkv < 2 or multiprocessing.current_process().daemon:
        return 1
    try:
        free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # not Linux: no figure, no pool
        return 1
    per_head = 3 * 2 * spec.n * spec.d * 8
    return max(1, min(spec.hkv, os.cpu_count() or 1, free // per_head))


def _head_in_worker(spec: WorkloadSpec, recipe: SyntheticRecipe, h: int) -> tuple[np.ndarray, ...]:
    """KV head ``h``'s queries, keys and values in the spec's dtype, as raw numpy words (a worker's
    result crosses the pipe as plain bytes, not torch storage)."""
    q, k, v = _head(spec, recipe, h)
    return tuple(t.view(torch.int16 if t.element_size() == 2 else torch.int32).numpy() for t in (q, k, v))


def _head(spec: WorkloadSpec, recipe: SyntheticRecipe, h: int) -> tuple[torch.Tensor, ...]:
    dtype = dtype_from_name(spec.dtype)
    keys, values, _ = _kv_head(spec, recipe, h)
    q = torch.from_numpy(_queries(spec, recipe, h, keys)).to(dtype)
    return q, torch.from_numpy(keys).to(dtype), torch.from_numpy(values).to(dtype)


def synthesize(spec: WorkloadSpec | str, recipe: SyntheticRecipe | None = None, workers: int | None = None) -> Workload:
    """Materialise a named spec as a deterministic synthetic :class:`Workload` (CPU tensors); the KV
    heads are drawn in ``workers`` processes (default :func:`synthesis_workers`), the same bytes
    either way: each head has its own generator streams."""
    spec = get_spec(spec) if isinstance(spec, str) else spec
    recipe = recipe or LAYOUTS[spec.layout]
    dtype = dtype_from_name(spec.dtype)
    k = torch.empty(spec.hkv, spec.n, spec.d, dtype=dtype)
    v = torch.empty_like(k)
    q = torch.empty(spec.hq, spec.d, dtype=dtype)
    group = spec.hq // spec.hkv
    workers = workers or synthesis_workers(spec)
    pool = None
    try:
        if workers <= 1:
            heads = (_head(spec, recipe, h) for h in range(spec.hkv))
        else:
            context = multiprocessing.get_context("spawn")  # the caller may hold a CUDA context: never fork it
            pool = ProcessPoolExecutor(workers, mp_context=context)
            raw = pool.map(_head_in_worker, [spec] * spec.hkv, [recipe] * spec.hkv, range(spec.hkv))
            heads = (tuple(torch.from_numpy(a).view(dtype) for a in arrays) for arrays in raw)
        for h, (qh, kh, vh) in enumerate(heads):  # in head order (map keeps it)
            q[h * group : (h + 1) * group] = qh
            k[h] = kh
            v[h] = vh
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    metadata = {
        "name": spec.name,
        "source": "synthetic",
        "model": spec.model,
        "layer": spec.layer,
        "context": spec.n,
        "rope_theta": spec.rope_theta,
        "seed": spec.seed,
        "recipe": asdict(recipe),
        "generator": GENERATOR,
    }
    return Workload(q=q, k=k, v=v, positions=torch.arange(spec.n), query_position=spec.n - 1, metadata=metadata)
