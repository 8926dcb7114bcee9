"""Results as flat rows: markdown tables and CSV for papers, PRs and spreadsheets."""

from __future__ import annotations

import csv
import io

from kprof.results.result import Result


def _round(x, digits: int):
    """A number for a table cell; empty where there is none (no interval, no valid round)."""
    return "" if x is None or x != x else round(x, digits)


def _significant(x: float | None) -> float | str:
    """An error to 4 significant digits (round() would zero a 3e-9); empty where there is none."""
    return "" if x is None or x != x else float(f"{x:.4g}")


def result_rows(res: Result) -> list[dict]:
    """One flat record per timed row of a Result (what markdown and CSV show)."""
    speed = {s.candidate: s.interval for s in res.speedups}
    marginal = res.chain_marginals_us()
    tokens = {w["name"]: (w.get("shape") or {}).get("n") for w in res.workload.get("points", [res.workload])}
    rows = []
    for label, s in res.summaries.items():
        iv = speed.get(label)
        rec = next((m for m in res.methods if m.label == label), None)
        workload = (rec.workload if rec else None) or res.workload.get("name")
        gbs, share = res.throughput(label)
        rows.append({
            "workload": workload, "tokens": tokens.get(workload) or "", "kind": res.kind, "row": label,
            "mode": res.mode,
            "median_us": _round(s.median_us.estimate, 3), "ci_low_us": _round(s.median_us.low, 3),
            "ci_high_us": _round(s.median_us.high, 3), "round_min_us": _round(s.round_median_min_us, 3),
            "round_max_us": _round(s.round_median_max_us, 3),
            "speedup": _round(iv.estimate, 4) if iv else "", "speedup_low": _round(iv.low, 4) if iv else "",
            "speedup_high": _round(iv.high, 4) if iv else "",
            "marginal_us": round(marginal[label], 3) if label in marginal else "",
            "launches": rec.catalog.launches_per_call if rec and rec.catalog.launches_per_call else "",
            "bytes_per_call": (rec.bytes_per_call if rec else None) or "", "gb_per_s": _round(gbs, 1) if gbs else "",
            "pct_copy_peak": _round(100 * share, 1) if share else "",
            "error_vs_dense": _significant(rec.validation.error_vs_dense if rec else None),
            "valid": (rec.validation.passed and not rec.faults) if rec else "",
            "device": (res.environment.get("gpu") or {}).get("name", res.environment.get("execution")),
        })
    return rows


def to_markdown(res: Result) -> str:
    """A Result as a markdown table with its notes (paper and PR ready)."""
    rows = result_rows(res)
    cols = ["row", "median_us", "round_min_us", "round_max_us", "speedup", "speedup_low", "speedup_high", "launches",
            "valid"]
    if res.kind == "chain":  # prefixes of a launch chain: each launch's marginal cost instead of speedups
        cols = ["row", "median_us", "round_min_us", "round_max_us", "marginal_us"]
    out = [f"**{res.workload.get('name')}** ({res.kind}, {res.mode}, {rows[0]['device']}, "
           f"{res.protocol.get('rounds')} rounds x {res.protocol.get('observations')} obs)", "",
           "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
    out += [f"- note: {n}" for n in res.notes]
    return "\n".join(out) + "\n"


def to_csv(results: list[Result]) -> str:
    """CSV, one row per timed row of every Result."""
    rows = [row for r in results for row in result_rows(r)]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()
