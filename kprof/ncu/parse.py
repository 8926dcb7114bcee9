"""Nsight Compute CSV (``--page raw`` or ``--page details``, base or auto units) -> a pandas DataFrame.

One row per kernel launch with typed, unit-normalised columns: ``id``, ``kernel`` (short name),
``kernel_full``, the Table 14 columns (``ctas``, ``duration_us``, ``occupancy_pct``,
``eligible_warps``, ``dram_pct``, ``registers_per_thread``) and every other metric under its
ncu name (durations in us, percentages as numbers). Tolerates ``==PROF==``/``==WARNING==``
lines and program output around the table, thousands separators, ``n/a`` and quoted commas.
"""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path

import pandas as pd

from kprof.core.errors import KprofError, UsageError
from kprof.ncu.metrics import TABLE14

_TIME_UNITS = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3,
               "s": 1e6, "second": 1e6}
_BYTE_UNITS = {"byte": 1, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "tbyte": 1e12}
_ROLLUP = re.compile(r"__(time_duration|bytes)(?:_\w+)?\.(?:sum|avg|min|max)$")
_NUMBER = re.compile(r"^[+-]?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?([eE][+-]?\d+)?$")


def short_kernel_name(name: str) -> str:
    """``void ns::kern<T, 4>(Params)`` -> ``kern``."""
    s = name.strip().replace("<unnamed>", "unnamed").replace("(anonymous namespace)", "anonymous")
    if s.startswith("void "):
        s = s[5:]
    depth, cut = 0, len(s)
    for i, ch in enumerate(s):  # drop template arguments and the parameter list at depth 0
        if ch in "<(" and depth == 0:
            cut = i
            break
    s = s[:cut]
    return s.rsplit("::", 1)[-1] or name


def parse_number(text: str) -> float | None:
    t = text.strip()
    if t in ("", "n/a", "N/A", "-"):
        return None
    if _NUMBER.match(t):
        return float(t.replace(",", ""))
    return None


def _normalise(value: float | None, unit: str, metric: str = "") -> tuple[float | None, str]:
    """``value`` in us or bytes; a duration or byte metric in a unit ncu never writes is refused
    (a guess would be off by a factor of 1000 or more)."""
    u = unit.strip().lower()
    rollup = _ROLLUP.search(metric)  # a plain sum or mean: its unit is a time or a byte count, nothing else
    if u and rollup and rollup.group(1) == "time_duration" and u not in _TIME_UNITS:
        raise KprofError(f"{metric} is in unit {unit!r}, not a time unit ncu writes ({', '.join(_TIME_UNITS)}): "
                         "export the file again from ncu")
    if u and rollup and rollup.group(1) == "bytes" and u not in _BYTE_UNITS:
        raise KprofError(f"{metric} is in unit {unit!r}, not a byte unit ncu writes ({', '.join(_BYTE_UNITS)}): "
                         "export the file again from ncu")
    if value is None:
        return None, u
    if u in _TIME_UNITS:  # rounded to what a CSV carries: 2752 ns is 2.752 us, not 2.7520000000000002
        return float(f"{value * _TIME_UNITS[u]:.12g}"), "us"
    if u in _BYTE_UNITS:
        return float(f"{value * _BYTE_UNITS[u]:.12g}"), "byte"
    return value, u


def _table_lines(text: str, source: str) -> list[str]:
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(('"ID"', "ID,")):  # as ncu quotes it, or saved again with minimal quoting
            quoted = line.startswith('"')
            cut = i == len(lines) - 1 and not text.endswith("\n")  # ends inside or right after the header
            if cut or quoted and (not line.rstrip().endswith('"') or line.rstrip().endswith(',"')):
                raise KprofError(f"{source}: its header line is cut off after {len(line)} characters, so the file is "
                                 "truncated: export it again from ncu (`ncu --import REPORT --csv --page raw`)")
            if quoted:  # ncu's own output: the program's lines and ncu's ==PROF== lines around the table
                return [ln for ln in lines[i:] if ln.startswith('"')]
            return [ln for ln in lines[i:] if ln.strip() and not ln.startswith("==")]
    raise KprofError(f"{source} is not Nsight Compute CSV (no \"ID\" header line): export with `ncu --csv --page raw` "
                     "or `--page details`")


def _columns(header: list[str], names: tuple[str, ...], source: str) -> dict[str, int]:
    missing = [n for n in names if n not in header]
    if missing:
        raise KprofError(f"{source} has an \"ID\" column but no {', '.join(repr(m) for m in missing)}: it is not "
                         "Nsight Compute CSV; export with `ncu --csv --page raw` or `--page details`")
    return {n: header.index(n) for n in names}


def _row_fields(r: list[str], header: list[str], line: int, source: str) -> None:
    if len(r) != len(header):
        raise KprofError(f"{source}, table row {line}: {len(r)} fields where the header has {len(header)}; the file "
                         "is truncated or edited: export it again from ncu")
    if not r[0].strip().isdigit():
        raise KprofError(f"{source}, table row {line}: launch ID {r[0]!r} is not a number: export it again from ncu")


def _from_raw(rows: list[list[str]], source: str) -> pd.DataFrame:
    header = rows[0]
    name = _columns(header, ("Kernel Name",), source)["Kernel Name"]
    units = rows[1] if len(rows) > 1 and rows[1] and rows[1][0] == "" else [""] * len(header)
    body = rows[2:] if units is not rows[0] and len(rows) > 1 and rows[1] and rows[1][0] == "" else rows[1:]
    first = len(rows) - len(body) + 1
    records = []
    for line, r in enumerate(body, start=first):
        _row_fields(r, header, line, source)
        rec = {"id": int(r[0]), "kernel_full": r[name]}
        for col, unit, raw in zip(header, units, r):
            if "__" not in col:
                continue
            value, _ = _normalise(parse_number(raw), unit, col)
            rec[col] = value if value is not None else (math.nan if raw.strip() in ("", "n/a") else raw)
        records.append(rec)
    return pd.DataFrame.from_records(records)


def _from_details(rows: list[list[str]], source: str) -> pd.DataFrame:
    header = rows[0]
    ix = _columns(header, ("ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value"), source)
    per_launch: dict[int, dict] = {}
    for line, r in enumerate(rows[1:], start=2):
        _row_fields(r, header, line, source)
        rec = per_launch.setdefault(int(r[ix["ID"]]), {"id": int(r[ix["ID"]]), "kernel_full": r[ix["Kernel Name"]]})
        value, _ = _normalise(parse_number(r[ix["Metric Value"]]), r[ix["Metric Unit"]], r[ix["Metric Name"]])
        rec[r[ix["Metric Name"]]] = value if value is not None else r[ix["Metric Value"]]
    return pd.DataFrame.from_records(list(per_launch.values()))


_DETAILS_ALIASES = {  # details-page display names -> raw metric names of the Table 14 columns
    "Grid Size": "launch__grid_size", "Duration": "gpu__time_duration.sum",
    "Achieved Occupancy": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "Eligible Warps Per Scheduler": "smsp__warps_eligible.avg.per_cycle_active",
    "DRAM Throughput": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "Registers Per Thread": "launch__registers_per_thread",
}


def read_ncu_csv(source: str | Path, text: str | None = None) -> pd.DataFrame:
    """Parse ncu CSV (a path, or ``text`` named ``source``) into the canonical per-launch frame."""
    if text is None:
        path = Path(source)
        if not path.exists():
            raise UsageError(f"{source} does not exist: pass the CSV `ncu --csv --page raw` wrote")
        if not path.is_file():  # a folder, or a FIFO whose read would wait for ever
            raise UsageError(f"{source} is not a regular file: pass the CSV `ncu --csv --page raw` wrote")
        try:
            text = path.read_text(errors="replace")
        except OSError as exc:
            raise KprofError(f"cannot read {source} ({exc.strerror}): check the path") from None
    lines = _table_lines(text, str(source))
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    if "Metric Name" in rows[0]:
        df = _from_details(rows, str(source)).rename(columns=_DETAILS_ALIASES)
    else:
        df = _from_raw(rows, str(source))
    return canonical_frame(df, source)


def frame_from_report_records(records: list[dict], source: str | Path) -> pd.DataFrame:
    """The canonical frame from :func:`kprof.ncu.report_module.report_records` output."""
    rows = []
    for rec in records:
        row = {"id": rec["id"], "kernel_full": rec["kernel_full"]}
        for name, (value, unit) in rec["metrics"].items():
            row[name] = (_normalise(value, unit)[0] if isinstance(value, float)
                         else (math.nan if value is None else value))
        rows.append(row)
    return canonical_frame(pd.DataFrame.from_records(rows), source)


def canonical_frame(df: pd.DataFrame, source: str | Path) -> pd.DataFrame:
    """Short kernel names, typed Table 14 columns, rows in launch order."""
    if df.empty:
        raise KprofError(f"{source} holds no kernel rows: was anything profiled? check ncu's filters")
    df.insert(1, "kernel", df["kernel_full"].map(short_kernel_name))
    for column, metric in TABLE14.items():
        df[column] = pd.to_numeric(df[metric], errors="coerce") if metric in df else math.nan
    for column in ("ctas", "registers_per_thread"):
        df[column] = df[column].astype("Int64")
    return df.sort_values("id").reset_index(drop=True)


def table14(df: pd.DataFrame) -> pd.DataFrame:
    """The Table 14 view: kernel and the six columns, one row per launch."""
    return df[["id", "kernel", *TABLE14.keys()]]


def medians_over_captures(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Per-metric medians over captures of the same launches (matched by launch order)."""
    stacked = pd.concat([f.assign(launch=range(len(f))) for f in frames])
    numeric = stacked.select_dtypes("number").columns.difference(["id", "launch"])
    med = stacked.groupby("launch")[list(numeric)].median()
    names = frames[0][["kernel", "kernel_full"]].reset_index(drop=True)
    out = pd.concat([names, med.reset_index(drop=True)], axis=1)
    for column in ("ctas", "registers_per_thread"):
        if column in out:
            out[column] = out[column].round().astype("Int64")
    return out
