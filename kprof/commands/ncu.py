"""``kprof ncu`` as use cases: profile a method's own launches over several ncu captures (the
medians per metric), or read ncu output made elsewhere. The DRAM bytes measured are kept, so
that ``kprof compare`` reports GB/s from them on this setup."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from kprof.commands import preflight
from kprof.core.errors import KprofError
from kprof.ncu.measured_bytes import READ, WRITE, record_bytes
from kprof.ncu.metrics import METRIC_SETS, TABLE14, resolve_metrics

__all__ = ["METRIC_SETS", "TABLE14", "NcuProfile", "event_latency_line", "import_file", "profile",
           "record_table_bytes"]


@dataclass
class NcuProfile:
    table: object  # pandas DataFrame: one row per launch, medians over captures
    metrics: list[str]
    bytes_per_call: int | None  # DRAM read + write of one call, recorded for compare's GB/s


def profile(method: str, workload: str, captures: int, metric_sets: list[str], config_mode: str, out_dir: str,
            status: Callable[[str], None] = lambda s: None) -> NcuProfile:
    """``captures`` ncu runs of ``method`` on ``workload`` (its NVTX range only), checked first."""
    from kprof.ncu.parse import medians_over_captures
    from kprof.ncu.run import capture, require_ncu

    preflight.check_methods([method])
    preflight.check_config(config_mode, [method])
    preflight.check_workloads([workload])
    preflight.check_out_dir(out_dir, "--out")
    require_ncu()
    metrics = resolve_metrics([*metric_sets, READ, WRITE])  # the bytes are kept for compare's GB/s
    describe = Path(out_dir) / "target.json"
    target = ["--method", method, "--workload", workload, "--config", config_mode, "--describe", str(describe)]
    frames = []
    for i in range(captures):
        status(f"ncu capture {i + 1}/{captures} of {method}")
        frames.append(capture(metrics, target, Path(out_dir), i)[1])
    if len({len(f) for f in frames}) != 1:
        raise KprofError("captures profiled different numbers of launches: "
                         "the method is not deterministic in its launches")
    table = medians_over_captures(frames)
    return NcuProfile(table, metrics, record_table_bytes(table, describe))


def record_table_bytes(table, describe: Path) -> int | None:
    """Keep the DRAM bytes one call moved (read + write over its launches) under the setup key
    the profiled target wrote to ``describe``; None where the table lacks them."""
    if READ not in table or WRITE not in table or not describe.is_file():
        return None
    nbytes = int(table[READ].sum() + table[WRITE].sum())
    record_bytes(json.loads(describe.read_text())["key"], nbytes)
    return nbytes


def import_file(path: str):
    """ncu output made elsewhere: CSV (--page raw or details) or .ncu-rep (needs ncu here)."""
    from kprof.ncu.parse import read_ncu_csv
    from kprof.ncu.run import import_report

    return import_report(Path(path)) if path.endswith(".ncu-rep") else read_ncu_csv(path)


def event_latency_line(method: str, ncu_sum_us: float, result_path: str) -> str:
    """The NCU duration sum beside the same method's event-timed median from a compare Result."""
    from kprof.results.store import load_result

    if not Path(result_path).exists():
        return (f"no compare Result at {result_path}: run `kprof compare --method {method}` for the event-timed "
                "latency to set beside the NCU sum")
    res = load_result(result_path)
    if method not in res.summaries:
        return f"{result_path} has no '{method}' run; pass --latency-from RESULT"
    event_us = res.summaries[method].median_us.estimate
    return (f"{method}: sum of NCU durations {ncu_sum_us:.2f} us vs event-timed median {event_us:.2f} us "
            f"({res.workload.get('name')}, {result_path}); ratio {ncu_sum_us / event_us:.2f}")
