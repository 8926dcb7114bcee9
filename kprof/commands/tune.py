"""``kprof tune`` as a use case: a request sized for this machine, then each launch in turn."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from kprof.commands import preflight
from kprof.commands.session import CPU_DEFAULT_WORKLOAD, GPU_DEFAULT_WORKLOAD
from kprof.core.device_pinning import parse_devices
from kprof.core.errors import UsageError
from kprof.core.paths import tuned_dir
from kprof.core.target import cuda_device_count, resolve_target
from kprof.methods import get_method
from kprof.tuning.request import LaunchOutcome, TuneRequest
from kprof.tuning.search import tune_launch
from kprof.workloads.resolve import resolve_shape


def tune_request(method: str, workload: str | None, device: str, launches: Sequence[str], strategy: str,
                 max_configs: int | None, budget_s: float | None, rounds: int | None, observations: int | None,
                 finalists: int, timeout_s: float, out_dir: Path | None, replace_stale: bool,
                 eviction: str = "read-write", *, retry_failed: bool = False, devices: str | None = None,
                 backend: str = "local", address: str | None = None, export_path: str | None = None) -> TuneRequest:
    """The request: every tunable launch unless named; screening and paired protocols that fit
    the device (a GPU, or the interpreter's small numbers on the CPU). Everything it names is
    checked first (UsageError, exit 2): Ray and Optuna when asked for, the ``--export`` file."""
    gpu = resolve_target(device).is_gpu
    out_dir = out_dir or tuned_dir()
    if address and backend != "ray":
        raise UsageError("--address is for --backend ray")
    if backend == "ray":
        from kprof.tuning.ray_pool import import_ray

        import_ray()  # a missing Ray is one line now, not after the first launch's setup
    if strategy == "optuna":
        from kprof.tuning.strategies.optuna import check_available

        check_available()
    if export_path:  # an unwritable place or a foreign file fails now, not after the tune
        from kprof.commands.report import check_destination
        from kprof.tuning.export import check_export

        check_destination(export_path, force=True, option="--export")
        check_export(export_path)
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
        out_dir=out_dir, replace_stale=replace_stale, retry_failed=retry_failed,
        devices=(parse_devices(devices, cuda_device_count() if backend == "local" and gpu else 0)
                 if devices is not None else ()),
        backend=backend, ray_address=address,
    )


def cpu_note(req: TuneRequest) -> str | None:
    """Said before a tune on the CPU: its numbers are the interpreter's."""
    return None if resolve_target(req.device).is_gpu else "CPU interpreter: tuning numbers are not GPU numbers"


def export(outcomes: list[LaunchOutcome], path: str) -> Path:
    """The chosen configs of a tune, as the ``--config FILE`` compare and stages read."""
    from kprof.tuning.export import export_configs

    return export_configs([o.file for o in outcomes], path)


def run_tune(req: TuneRequest, progress: Callable[..., None]) -> list[LaunchOutcome]:
    """Tune each launch of the request; ``progress(launch, done, total, message="")``."""
    return [tune_launch(req, launch, progress) for launch in req.launches]
