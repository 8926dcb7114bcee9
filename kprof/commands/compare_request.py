"""``kprof compare`` as typed: everything it names checked before anything loads, then one
workload's paired run (:mod:`kprof.commands.compare`) or a sweep over several
(:mod:`kprof.commands.sweep`), one Result either way."""

from __future__ import annotations

from dataclasses import dataclass, field

from kprof.commands import preflight
from kprof.commands.compare import check_same_copies, run_compare, timed_baseline
from kprof.commands.report import check_destination, save_run
from kprof.commands.session import MeasurementSession
from kprof.commands.sweep import run_sweep, with_variants
from kprof.core.device_pinning import parse_devices
from kprof.core.errors import InvalidOutput, UsageError
from kprof.core.target import cuda_device_count, resolve_target
from kprof.measure.harness import Progress
from kprof.results.schema import Result

GPU_DEFAULT_CANDIDATES = ("santa", "triton-dense")
CPU_DEFAULT_CANDIDATES = ("triton-dense",)  # santa's sorts are slow in the Triton interpreter


@dataclass
class CompareRequest:
    """A checked ``kprof compare``: what to time, where, and under which protocol overrides."""

    device: str
    workloads: list[str | None]
    baseline: str
    candidates: list[str]
    overrides: dict
    config_mode: str = "auto"
    keep_invalid: bool = False
    devices: tuple[str, ...] = field(default_factory=tuple)  # several workloads at once on these GPUs
    out: str | None = None  # where a sweep stopped by a failed validation keeps what it timed
    force: bool = False


def compare_request(methods: list[str], baseline: str, vary: list[str], workloads: list[str], device: str,
                    overrides: dict, config_mode: str = "auto", keep_invalid: bool = False, devices: str | None = None,
                    out: str | None = None, force: bool = False) -> CompareRequest:
    """Every spec, option, workload, protocol number and output path checked (UsageError, exit 2)."""
    check_destination(out, force)
    gpu = resolve_target(device).is_gpu
    defaults = GPU_DEFAULT_CANDIDATES if gpu else CPU_DEFAULT_CANDIDATES
    with preflight.as_usage():
        candidates = with_variants(list(methods) or ([] if vary else list(defaults)), list(vary))
    preflight.check_methods([baseline, *candidates])
    with preflight.as_usage():
        check_same_copies([timed_baseline(baseline, gpu), *candidates])
    preflight.check_config(config_mode, [baseline, *candidates])
    preflight.check_workloads(workloads)
    preflight.check_protocol(gpu, overrides, len(candidates) + 1)
    spread = ()
    if devices is not None:
        if len(workloads) < 2:
            raise UsageError(f"--devices {devices}: it spreads several --workload runs over devices, and this run "
                             "has one workload: drop --devices or add workloads")
        spread = tuple(parse_devices(devices, cuda_device_count() if gpu else 0))
    return CompareRequest(device, list(workloads) or [None], baseline, candidates, overrides, config_mode,
                          keep_invalid, spread, out, force)


def run_request(req: CompareRequest, progress: Progress | None = None) -> Result:
    """One Result: one workload's paired run, or a sweep over several workloads."""
    def open_session(workload: str | None) -> MeasurementSession:
        return MeasurementSession.open(req.device, workload, req.overrides, progress.status if progress else
                                       (lambda s: None), req.config_mode, req.keep_invalid)

    if len(req.workloads) == 1:
        return run_compare(open_session(req.workloads[0]), req.baseline, req.candidates, progress)
    try:
        return run_sweep(open_session, req.workloads, req.baseline, req.candidates, progress, devices=req.devices,
                         session_args={"device": req.device, "overrides": req.overrides,
                                       "config_mode": req.config_mode, "keep_invalid": req.keep_invalid})
    except InvalidOutput as exc:
        if exc.kept is None:
            raise
        path = save_run(exc.kept, req.out, req.force)
        raise InvalidOutput(f"{exc}; the workloads timed before it are kept in {path}, marked partial",
                            kept=exc.kept) from None
