"""``kprof env`` as a use case: this machine's fingerprint, the roofs tables report percent of,
and whether ncu can be used; optionally measuring the roofs first."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Callable

from kprof.core.atomic import writable_probe
from kprof.core.errors import UsageError
from kprof.core.paths import measured_dir
from kprof.measure.copy_peak import CopyPeak, load_peak
from kprof.measure.fingerprint import Environment, collect_environment
from kprof.measure.matmul_peak import load_matmul_peaks
from kprof.ncu.locate import find_ncu, override_problem


@dataclass
class EnvironmentReport:
    environment: Environment
    copy_peak: CopyPeak | None
    matmul_peak_tflops: dict[str, float]
    ncu_problem: str | None  # KPROF_NCU set to something that is not an ncu

    def to_dict(self) -> dict:
        return self.environment.to_dict() | {"copy_peak": asdict(self.copy_peak) if self.copy_peak else None,
                                             "matmul_peak_tflops": self.matmul_peak_tflops,
                                             "ncu_problem": self.ncu_problem}


def describe(with_ncu: bool = True, measure_peaks: bool = False,
             status: Callable[[str], None] = lambda s: None) -> EnvironmentReport:
    """The environment, with the copy and matmul peaks measured now (``measure_peaks``) or as last
    measured on this setup."""
    env = collect_environment()
    if with_ncu and (ncu := find_ncu()) is not None:
        env = replace(env, ncu_path=ncu.path, ncu_version=ncu.version)
    doc = env.to_dict()
    if measure_peaks:  # where the peaks will be kept, checked before the seconds of measuring
        if problem := writable_probe(folder := measured_dir()):
            raise UsageError(f"--measure-peak keeps the peaks in {folder}: {problem}: set $KPROF_HOME to a "
                             "writable folder")
        from kprof.core.target import resolve_target
        from kprof.measure.copy_peak import measure_peak
        from kprof.measure.matmul_peak import DTYPES, measure_matmul_peak

        device = resolve_target("auto").device
        status("measuring the copy peak...")
        peak = measure_peak(device, doc)
        for dtype in DTYPES[device.type]:
            status(f"measuring the {dtype} matmul peak...")
            measure_matmul_peak(device, doc, dtype)
    else:
        peak = load_peak(doc)
    return EnvironmentReport(env, peak, load_matmul_peaks(doc), override_problem())
