"""What tables, plots and exports show of a Result: one flat row per timed row, and the rates and
marginal costs derived from its records and summaries.

Values are numbers, text or ``None`` where there is none (no interval, no bytes, no valid round):
the CSV writes ``None`` as an empty cell, the DataFrame as NaN, JSON as null.
"""

from __future__ import annotations

import math

from kprof.results.schema import MethodRecord, Result

COLUMNS = (  # every row's keys, in order; the CSV's and the DataFrame's columns
    "workload", "tokens", "kind", "row", "mode", "device", "valid",
    "median_us", "ci_low_us", "ci_high_us", "round_min_us", "round_max_us",
    "speedup", "speedup_low", "speedup_high", "baseline",
    "noise_pct", "drift_first_ratio", "drift_pct_per_round", "drift_flagged", "bad_rounds", "bad_observations",
    "rel_error", "tolerance", "error_vs_dense", "error_vs_baseline", "faults",
    "marginal_us", "launches", "host_us", "bytes_per_call", "gb_per_s", "pct_copy_peak", "tflops", "pct_matmul_peak",
    "partial",
)


def record(result: Result, label: str) -> MethodRecord | None:
    """The method record of a timed row (None for a stage, which has none of its own)."""
    return next((m for m in result.methods if m.label == label), None)


def rows(result: Result) -> list[dict]:
    """One flat record per timed row, with the keys of :data:`COLUMNS`."""
    speed = {s.candidate: s for s in result.speedups}
    marginal = chain_marginals_us(result)
    points = result.workload.get("points", [result.workload])
    tokens = {w["name"]: (w.get("shape") or {}).get("n") for w in points}
    device = (result.environment.get("gpu") or {}).get("name", result.environment.get("execution"))
    out = []
    for label, s in result.summaries.items():
        sp = speed.get(label)
        iv = sp.interval if sp else None
        rec = record(result, label)
        v = rec.validation if rec else None
        workload = (rec.workload if rec else None) or result.workload.get("name")
        gbs, share = throughput(result, label)
        tflops, fshare = compute_rate(result, label)
        out.append({
            "workload": workload, "tokens": tokens.get(workload), "kind": result.kind, "row": label,
            "mode": result.mode, "device": device,
            "valid": (v.passed and not rec.faults) if rec else None,
            "median_us": _num(s.median_us.estimate, 3), "ci_low_us": _num(s.median_us.low, 3),
            "ci_high_us": _num(s.median_us.high, 3), "round_min_us": _num(s.round_median_min_us, 3),
            "round_max_us": _num(s.round_median_max_us, 3),
            "speedup": _num(iv.estimate if iv else None, 6), "speedup_low": _num(iv.low if iv else None, 6),
            "speedup_high": _num(iv.high if iv else None, 6), "baseline": sp.baseline if sp else None,
            "noise_pct": _num(100 * s.noise, 2), "drift_first_ratio": _num(s.drift.first_rounds_ratio, 4),
            "drift_pct_per_round": _num(s.drift.trend_pct_per_round, 3), "drift_flagged": s.drift.flagged,
            "bad_rounds": len(s.bad_rounds), "bad_observations": s.bad_observations,
            "rel_error": _sig(v.rel_error if v else None), "tolerance": _sig(v.tolerance if v else None),
            "error_vs_dense": _sig(v.error_vs_dense if v else None),
            "error_vs_baseline": _sig(v.error_vs_baseline if v else None),
            "faults": len(rec.faults) if rec else None,
            "marginal_us": _num(marginal.get(label), 3),
            "launches": (rec.catalog.launches_per_call or None) if rec else None,
            "host_us": _num(rec.host_us if rec else None, 3),
            "bytes_per_call": (rec.bytes_per_call or None) if rec else None,
            "gb_per_s": _sig(gbs), "pct_copy_peak": _num(100 * share if share else None, 1),
            "tflops": _sig(tflops), "pct_matmul_peak": _num(100 * fshare if fshare else None, 1),
            "partial": result.partial,  # why the run ended early (Ctrl-C); None for a complete run
        })
    return out


def throughput(result: Result, label: str) -> tuple[float | None, float | None]:
    """A row's GB/s (its bytes per call over its median) and that as a share of the measured copy
    peak; None where the bytes, the median or the peak are not known, and no share where some bytes
    come from host memory."""
    rec = record(result, label)
    median = result.summaries[label].median_us.estimate
    if rec is None or not rec.bytes_per_call or not _finite(median) or not median:
        return None, None
    gbs = rec.bytes_per_call / median / 1e3  # bytes per microsecond -> 1e9 bytes per second
    peak = result.environment.get("copy_peak_gbs")
    return gbs, gbs / peak if peak and not rec.bytes_from_host else None


def compute_rate(result: Result, label: str) -> tuple[float | None, float | None]:
    """A row's TFLOP/s (its FLOPs per call over its time) and that as a share of the measured matmul
    peak of the workload's dtype; None where either is not known."""
    rec = record(result, label)
    median = result.summaries[label].median_us.estimate
    if rec is None or not rec.flops_per_call or not _finite(median) or not median:
        return None, None
    tflops = rec.flops_per_call / median / 1e6
    dtype = (result.workload.get("shape") or {}).get("dtype") or result.workload.get("dtype")
    peak = (result.environment.get("matmul_peak_tflops") or {}).get(dtype)
    return tflops, tflops / peak if peak else None


def over_bad_limit(result: Result, limit: float) -> dict[str, float]:
    """Rows whose share of bad observations exceeds ``limit``."""
    return {label: s.bad_share for label, s in result.summaries.items() if s.bad_share > limit}


def chain_marginals_us(result: Result) -> dict[str, float]:
    """For a ``chain`` Result: each prefix's median minus the previous one's, i.e. the marginal cost
    of the launch that prefix adds (they add up to the whole chain); empty otherwise."""
    if result.kind != "chain":
        return {}
    out, previous = {}, 0.0
    for label, s in result.summaries.items():
        out[label] = s.median_us.estimate - previous
        previous = s.median_us.estimate
    return out


def format_us(x: float | None) -> str:
    """Microseconds as every table shows them: 2 decimals on the GPU scale, none above 1 ms (the
    interpreter's times), ``n/a`` where there is none."""
    if x is None or x != x:
        return "n/a"
    return f"{x:,.2f}" if x < 1000 else f"{x:,.0f}"


def _finite(x) -> bool:
    return x is not None and math.isfinite(x)


def _num(x, digits: int) -> float | None:
    """A number rounded for a cell; None where there is none (no interval, no valid round)."""
    return round(float(x), digits) if _finite(x) else None


def _sig(x) -> float | None:
    """An error or rate to 4 significant digits (round() would zero a 3e-9); None where there is none."""
    return float(f"{x:.4g}") if _finite(x) else None
