"""``kprof santa prepare`` as a use case: SANTA++ teams built (or loaded from their cache) and
K/V packed team-major, with the memory and time each took, outside of any timing."""

from __future__ import annotations

import time
from typing import Callable

from kprof.commands.preflight import as_usage, check_workloads

MIB = 2**20


def prepare_teams(workload: str, p: int = 16, r: int = 4, s: int = 124, parents: str = "kmeans", seed: int = 0,
                  device: str = "auto", rebuild: bool = False, status: Callable[[str], None] = lambda m: None) -> dict:
    """The preparation report: teams and budget per head, memory beyond K/V (MiB), seconds, cache."""
    from kprof.core.target import resolve_target
    from kprof.kernels.santa.cache import cache_path, load_or_build
    from kprof.kernels.santa.preparation import SantaSettings, pack
    from kprof.workloads import resolve_workload

    check_workloads([workload])
    with as_usage():
        settings = SantaSettings(p=p, r=r, s=s, parents=parents, seed=seed)
    target = resolve_target(device)
    w = resolve_workload(workload)
    digest = w.content_hash()
    if rebuild:
        cache_path(w, settings, digest).unlink(missing_ok=True)
    t0 = time.perf_counter()
    layout, outcome = load_or_build(w, settings, status, digest)
    layout_s = time.perf_counter() - t0
    arts = pack(w.k.to(target.device), w.v.to(target.device), layout)
    mem = arts.memory()
    teams = [int(m) for m in layout.num_teams]
    return {
        "workload": w.name, "shape": str(w.shape), "content_hash": digest, "settings": settings.__dict__,
        "cache_key": settings.cache_key,
        "teams_per_kv_head": teams, "k_per_query_head": [settings.budget(m) for m in teams],
        "mean_team_size": w.shape.n * len(teams) / sum(teams),
        "memory_mib": {k: v / MIB for k, v in mem.items() if k != "teams"},
        "seconds": {"teams": outcome.build_seconds, "layout_total": layout_s, "pack": arts.prep_seconds["pack"]},
        "cache": {"path": str(outcome.path), "status": outcome.status},
        "device": str(target.device),
    }
