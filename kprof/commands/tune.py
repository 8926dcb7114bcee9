"""``kprof tune`` as a use case: a request sized for this machine, then each launch in turn."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from kprof.commands import preflight
from kprof.commands.session import CPU_DEFAULT_WORKLOAD, GPU_DEFAULT_WORKLOAD
from kprof.core.errors import UsageError
from kprof.core.target import resolve_target
from kprof.methods import get_method
from kprof.tuning.search import LaunchOutcome, TuneRequest, tune_launch
from kprof.workloads.resolve import resolve_shape


def tune_request(method: str, workload: str | None, device: str, launches: Sequence[str], strategy: str,
                 max_configs: int | None, budget_s: float | None, rounds: int | None, observations: int | None,
                 finalists: int, timeout_s: float, out_dir: Path, replace_stale: bool,
                 eviction: str = "read-write") -> TuneRequest:
    """The request: every tunable launch unless named; screening and paired protocols that fit
    the device (a GPU, or the interpreter's small numbers on the CPU)."""
    gpu = resolve_target(device).is_gpu
    name = workload or (GPU_DEFAULT_WORKLOAD if gpu else CPU_DEFAULT_WORKLOAD)
    preflight.check_methods([method])
    preflight.check_workloads([name])
    preflight.check_out_dir(out_dir)
    spaces = get_method(method).config_space()
    if unknown := [launch for launch in launches if launch not in spaces]:
        raise UsageError(f"{method} has no launch {unknown[0]!r}: choose from {', '.join(spaces) or 'none'}")
    launches = list(launches) or list(spaces)
    if not launches:
        raise UsageError(f"{method} has no tunable launches: it is a library call or takes no launch parameters")
    return TuneRequest(
        method=method, workload=name, shape=resolve_shape(name), device=device, launches=launches,
        strategy=strategy, max_configs=max_configs, budget_s=budget_s, rounds=rounds or (3 if gpu else 2),
        observations=observations or (100 if gpu else 2), warmup=10 if gpu else 1, evict_mib=512 if gpu else 8,
        eviction=eviction,
        timeout_s=timeout_s, finalists=finalists,
        # finalists against the default: until the speedup is within +-0.5%, 30 s at most each
        paired={"warmup_pairs": 20, "initial_warmup_pairs": 300, "observations": 100, "precision": 0.005,
                "max_time_s": 30.0} if gpu else
               {"min_rounds": 16, "min_pair_cycles": 8, "warmup_pairs": 0, "observations": 2, "evict_mib": 8},
        out_dir=out_dir, replace_stale=replace_stale,
    )


def run_tune(req: TuneRequest, progress: Callable[..., None]) -> list[LaunchOutcome]:
    """Tune each launch of the request; ``progress(launch, done, total, message="")``."""
    return [tune_launch(req, launch, progress) for launch in req.launches]
