"""Running Nsight Compute on the kprof target program, and reading ``.ncu-rep`` files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd

from kprof.core.errors import KprofError, UsageError
from kprof.ncu.locate import NcuBinary, find_ncu, override_problem
from kprof.ncu.parse import frame_from_report_records, read_ncu_csv
from kprof.ncu.report_module import find_report_module, report_records

PERMISSION_HINT = ("no permission to read GPU performance counters (ERR_NVGPUCTRPERM): run as root, or set the "
                   "nvidia module option NVreg_RestrictProfilingToAdminUsers=0")


def require_ncu() -> NcuBinary:
    if problem := override_problem():
        raise UsageError(problem)
    ncu = find_ncu()
    if ncu is None:
        raise KprofError("ncu (Nsight Compute) not found: install it, put it on PATH, or set KPROF_NCU=/path/to/ncu")
    return ncu


RANGE = "kprof"  # the NVTX range around the one profiled operation (kprof.commands.ncu_target)


def profile_command(ncu: str, metrics: list[str], export: Path, target_args: list[str]) -> list[str]:
    """The ncu invocation: kernel replay, caches flushed, clocks untouched, only the NVTX range."""
    return [
        ncu, "--target-processes", "all", "--replay-mode", "kernel", "--cache-control", "all",
        "--clock-control", "none", "--nvtx", "--nvtx-include", f"{RANGE}/", "--metrics", ",".join(metrics),
        "--export", str(export), "--force-overwrite",
        sys.executable, "-m", "kprof.commands.ncu_target", *target_args,
    ]


def csv_command(ncu: str, report: Path) -> list[str]:
    return [ncu, "--import", str(report), "--csv", "--page", "raw", "--print-units", "base"]


def _check(proc: subprocess.CompletedProcess, what: str) -> None:
    text = (proc.stdout or "") + (proc.stderr or "")
    if "ERR_NVGPUCTRPERM" in text:
        raise KprofError(PERMISSION_HINT)
    if proc.returncode != 0:
        errors = ([ln for ln in text.splitlines() if "==ERROR==" in ln or "Error" in ln]
                  or text.strip().splitlines()[-1:])
        raise KprofError(f"{what} failed (exit {proc.returncode}): {errors[-1][:300] if errors else 'no output'}; "
                         "run the target alone to see its error")


def capture(metrics: list[str], target_args: list[str], out_dir: Path, index: int,
            timeout_s: float = 900) -> tuple[Path, pd.DataFrame]:
    """One ncu capture: ``.ncu-rep`` and its raw CSV kept in ``out_dir``; returns the parsed frame."""
    ncu = require_ncu()
    out_dir.mkdir(parents=True, exist_ok=True)
    base = out_dir / f"capture{index}"
    proc = subprocess.run(profile_command(ncu.path, metrics, base, target_args), capture_output=True, text=True,
                          timeout=timeout_s)
    _check(proc, "ncu capture")
    report = base.with_suffix(".ncu-rep")
    return report, import_report(report, out_dir / f"capture{index}.csv")


def import_report(report: Path, csv_out: Path | None = None) -> pd.DataFrame:
    """A ``.ncu-rep`` through ncu's Python report interface, else ``ncu --import``.

    With ``csv_out`` the raw-page CSV is wanted as a file, so ``ncu --import`` is used directly.
    """
    if not report.exists():
        raise KprofError(f"{report} does not exist: check the path")
    module = find_report_module() if csv_out is None else None
    if module is not None:
        return frame_from_report_records(report_records(module, report), report)
    ncu = find_ncu()
    if ncu is None:
        raise KprofError(f"reading {report} needs Nsight Compute here: its Python report interface (ncu_report, in "
                         "ncu's extras/python or the ncu-report package) or the ncu binary; or export CSV where it "
                         "was captured (`ncu --import R --csv --page raw`)")
    proc = subprocess.run(csv_command(ncu.path, report), capture_output=True, text=True, timeout=600)
    _check(proc, f"ncu --import {report}")
    if csv_out is not None:
        csv_out.write_text(proc.stdout)
    return read_ncu_csv(report, text=proc.stdout)
