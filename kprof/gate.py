"""Performance regression gate: a candidate Result against a committed baseline Result.

The two runs were not interleaved, so each run's rounds are resampled independently
(:func:`kprof.stats.unpaired_bootstrap`). For latency the ratio is candidate / baseline latency
per method; for speedup it is the baseline run's speedup / the candidate run's speedup. Either
way a ratio above 1 is a regression. With threshold t: SLOWER when the whole interval is above
1 + t, FASTER when it is below 1 - t, SAME when it lies within [1 - t, 1 + t], UNCERTAIN
otherwise.

Runs on different devices, workloads or protocols are incomparable. A method's launch config
may differ between the runs (a new tuned profile, a changed default): that is exactly the kind of
change the gate exists to judge, so it is compared and the difference is named in the row.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from kprof.atomic import atomic_path
from kprof.results import Result
from kprof.stats import Interval, unpaired_bootstrap

EXIT = {"FASTER": 0, "SAME": 0, "SLOWER": 1, "UNCERTAIN": 2, "INCOMPARABLE": 2}
_PROTOCOL_KEYS = ("rounds", "warmup_pairs", "observations", "evict_mib", "graph", "host_bound")


@dataclass(frozen=True)
class GateRow:
    method: str
    verdict: str
    ratio: Interval | None
    baseline_us: float | None
    candidate_us: float | None
    note: str = ""


def incomparable(base: Result, cand: Result) -> list[str]:
    """Reasons two Results must not be compared (device, workload, protocol)."""
    why = []
    bg, cg = base.environment.get("gpu") or {}, cand.environment.get("gpu") or {}
    if bg.get("name") != cg.get("name") or base.environment.get("execution") != cand.environment.get("execution"):
        why.append(f"device differs ({bg.get('name', base.environment.get('execution'))} vs "
                   f"{cg.get('name', cand.environment.get('execution'))})")
    if base.workload.get("content_hash") != cand.workload.get("content_hash"):
        why.append(f"workload differs ({base.workload.get('name')} {str(base.workload.get('content_hash'))[:12]} vs "
                   f"{cand.workload.get('name')} {str(cand.workload.get('content_hash'))[:12]})")
    for k in _PROTOCOL_KEYS:
        if base.protocol.get(k) != cand.protocol.get(k):
            why.append(f"protocol {k} differs ({base.protocol.get(k)} vs {cand.protocol.get(k)})")
    return why


def config_difference(base: dict, cand: dict) -> str:
    """'launch config: partial.BLOCK_N 64->16, ...' for the launch parameters that differ, else ''."""
    diffs = []
    for launch in sorted(set(base) | set(cand)):
        b, c = base.get(launch) or {}, cand.get(launch) or {}
        diffs += [f"{launch}.{k} {b.get(k, '-')}->{c.get(k, '-')}" for k in sorted(set(b) | set(c)) if b.get(k) != c.get(k)]
    return "launch config: " + ", ".join(diffs) if diffs else ""


def verdict(iv: Interval, threshold: float) -> str:
    if iv.low > 1 + threshold:
        return "SLOWER"
    if iv.high < 1 - threshold:
        return "FASTER"
    if iv.low >= 1 - threshold and iv.high <= 1 + threshold:
        return "SAME"
    return "UNCERTAIN"


def gate(base: Result, cand: Result, threshold: float = 0.03, metric: str = "latency", resamples: int = 10_000,
         seed: int = 0) -> tuple[str, list[GateRow], list[str]]:
    """Overall verdict, per-method rows and reasons of incomparability."""
    reasons = incomparable(base, cand)
    if reasons:
        return "INCOMPARABLE", [], reasons
    base_methods = {m.label: m for m in base.methods}
    rows = []
    for m in cand.methods:
        b = base_methods.get(m.label)
        if b is None:
            continue
        note = config_difference(b.config, m.config)
        if metric == "latency":
            iv = unpaired_bootstrap(cand.observations[m.label], base.observations[m.label], resamples, seed=seed)
        else:
            if m.role == "baseline":
                continue
            ref = next(x.label for x in cand.methods if x.role == "baseline")
            if ref in base_methods:  # the reference is every speedup's denominator: name its change too
                ref_note = config_difference(base_methods[ref].config,
                                             next(x for x in cand.methods if x.label == ref).config)
                note = "; ".join(x for x in (note, ref_note and f"reference {ref} {ref_note}") if x)
            s_base = unpaired_bootstrap(base.observations[ref], base.observations[m.label], resamples, seed=seed)
            s_cand = unpaired_bootstrap(cand.observations[ref], cand.observations[m.label], resamples, seed=seed + 1)
            iv = Interval(s_base.estimate / s_cand.estimate, s_base.low / s_cand.high, s_base.high / s_cand.low)
        rows.append(GateRow(m.label, verdict(iv, threshold), iv, base.summaries[m.label].median_us.estimate,
                            cand.summaries[m.label].median_us.estimate, note))
    if not rows:
        return "INCOMPARABLE", rows, ["no method appears in both results"]
    order = ["INCOMPARABLE", "SLOWER", "UNCERTAIN", "SAME", "FASTER"]
    overall = min((r.verdict for r in rows), key=order.index)
    return overall, rows, []


def summary_markdown(overall: str, rows: list[GateRow], reasons: list[str], threshold: float, metric: str) -> str:
    lines = [f"### kprof gate: **{overall}** ({metric}, threshold {threshold:.1%})", ""]
    if reasons:
        lines += [f"- {r}" for r in reasons]
        return "\n".join(lines) + "\n"
    lines += ["| method | baseline us | candidate us | ratio (cand/base) | 95% CI | verdict | note |",
              "|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.ratio is None:
            lines.append(f"| {r.method} | | | | | {r.verdict} | {r.note} |")
            continue
        lines.append(f"| {r.method} | {r.baseline_us:.2f} | {r.candidate_us:.2f} | {r.ratio.estimate:.4f} | "
                     f"[{r.ratio.low:.4f}, {r.ratio.high:.4f}] | {r.verdict} | {r.note} |")
    return "\n".join(lines) + "\n"


def replace_baseline(candidate_path: Path, baseline_path: Path) -> None:
    """Copy the candidate Result (and its sidecar) over the baseline, atomically, sidecar first."""
    cand_sidecar = candidate_path.with_suffix(".obs.npz")
    if cand_sidecar.exists():
        with atomic_path(baseline_path.with_suffix(".obs.npz")) as tmp:
            shutil.copyfile(cand_sidecar, tmp)
    doc = json.loads(candidate_path.read_text())
    if doc.get("observations_file"):
        doc["observations_file"] = baseline_path.with_suffix(".obs.npz").name
    with atomic_path(baseline_path) as tmp:
        tmp.write_text(json.dumps(doc, indent=2))
