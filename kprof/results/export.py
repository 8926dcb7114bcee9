"""Results for other tools: markdown (rounded as the terminal shows it), CSV, JSON rows and a
pandas DataFrame with numeric columns (NaN where a value is missing)."""

from __future__ import annotations

import csv
import io

from kprof.results.rows import COLUMNS, chain_marginals_us, format_us, rows
from kprof.results.schema import Result


def _speedup(row: dict) -> str:
    if row["speedup"] is None:
        return "baseline" if row["kind"] == "compare" else ""
    if row["speedup_low"] is None:
        return f"{row['speedup']:.3f}x (no interval)"
    return f"{row['speedup']:.3f}x [{row['speedup_low']:.3f}, {row['speedup_high']:.3f}]"


def _valid(row: dict) -> str:
    return {True: "ok", False: "FAIL", None: ""}[row["valid"]]


def to_markdown(res: Result) -> str:
    """A Result as a markdown table with its notes (paper and PR ready), rounded like the terminal."""
    table = rows(res)
    level = int(round(res.protocol.get("level", 0.95) * 100))
    if res.kind == "chain":  # prefixes of a launch chain: each launch's marginal cost instead of speedups
        marginal = chain_marginals_us(res)
        head = ["row", "time us", "round means us", "marginal us"]
        body = [[r["row"], format_us(r["median_us"]), f"{format_us(r['round_min_us'])}–{format_us(r['round_max_us'])}",
                 format_us(marginal.get(r["row"]))] for r in table]
    else:
        head = ["row", "valid", "time us", f"speedup [{level}% CI]", "round means us", "launches", "noise"]
        body = [[r["row"], _valid(r), format_us(r["median_us"]), _speedup(r),
                 f"{format_us(r['round_min_us'])}–{format_us(r['round_max_us'])}", str(r["launches"] or "n/a"),
                 f"{r['noise_pct']:.1f}%" if r["noise_pct"] is not None else ""] for r in table]
    out = [f"**{res.workload.get('name')}** ({res.kind}, {res.mode}, {table[0]['device']}, "
           f"{res.protocol.get('rounds')} rounds x {res.protocol.get('observations')} obs)", "",
           "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(cells) + " |" for cells in body]
    out += [f"- **partial result**: {res.partial}: less was timed than the run asked for"] if res.partial else []
    out += [f"- note: {n}" for n in res.notes]
    return "\n".join(out) + "\n"


def all_rows(results: list[Result]) -> list[dict]:
    """Every timed row of every Result (JSON's ``null`` where a value is missing)."""
    return [row for r in results for row in rows(r)]


def to_csv(results: list[Result]) -> str:
    """CSV, one row per timed row of every Result; an empty cell where a value is missing."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(COLUMNS))
    writer.writeheader()
    writer.writerows({k: "" if v is None else v for k, v in row.items()} for row in all_rows(results))
    return buf.getvalue()


def to_frame(results: list[Result]):
    """A pandas DataFrame of :func:`all_rows`: numbers as float or integer columns with NaN where
    missing, ``valid`` and ``drift_flagged`` as nullable booleans."""
    import pandas as pd  # on demand: measuring never loads pandas

    frame = pd.DataFrame(all_rows(results), columns=list(COLUMNS))
    text = {"workload", "kind", "row", "mode", "device", "baseline"}
    flags = {"valid", "drift_flagged"}
    for column in frame.columns:
        if column in flags:
            frame[column] = frame[column].astype("boolean")
        elif column not in text:
            frame[column] = pd.to_numeric(frame[column], errors="coerce")
    return frame
