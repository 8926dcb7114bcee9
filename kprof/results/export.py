"""Results as flat rows: markdown tables and CSV for papers, PRs and spreadsheets."""

from __future__ import annotations

import csv
import io

from kprof.results.result import Result


def to_markdown(res: Result) -> str:
    """A Result as a markdown table with its notes (paper and PR ready)."""
    rows = res.rows()
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
    rows = [row for r in results for row in r.rows()]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()
