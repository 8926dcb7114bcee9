"""What a tune is asked to do (:class:`TuneRequest`) and what one launch's tune gave
(:class:`LaunchOutcome`): the data every strategy and the commands share."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from kprof.core.paths import tuned_dir
from kprof.tuning.cache import TuneFile
from kprof.workloads.shape import WorkloadShape


@dataclass
class TuneRequest:
    method: str
    workload: str
    shape: WorkloadShape
    device: str
    launches: Sequence[str] = ()
    strategy: str = "halving"
    max_configs: int | None = None
    budget_s: float | None = None
    rounds: int = 3
    observations: int = 100
    warmup: int = 10
    evict_mib: int = 512
    eviction: str = "read-write"  # kprof.measure.protocol.EVICTION_MODES: screening and finalists alike
    timeout_s: float = 120.0
    finalists: int = 3
    paired: dict = field(default_factory=lambda: {"rounds": 10, "warmup_pairs": 50, "observations": 200})
    seed: int = 0
    out_dir: Path = field(default_factory=tuned_dir)
    replace_stale: bool = False  # move a cache measured under another key aside and tune afresh
    retry_failed: bool = False  # measure again the candidates cached as failed (crash, timeout, error)
    devices: tuple[str, ...] = ()  # screen on these GPUs of the host, one worker each (kprof.tuning.pool)
    backend: str = "local"  # "ray": one actor per GPU of a Ray cluster (kprof.tuning.ray_pool)
    ray_address: str | None = None  # None: a local Ray instance


@dataclass
class LaunchOutcome:
    launch: str
    path: Path
    file: TuneFile
    measured_now: int
    seconds: float
    left: int = 0  # candidates of the space not measured because the budget ran out (a rerun resumes them)
