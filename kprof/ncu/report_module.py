"""``.ncu-rep`` files through Nsight Compute's Python report interface (``ncu_report``).

The module ships in ncu's ``extras/python`` folder (or as the ``ncu-report`` package). It is
looked up on ``sys.path`` first, then beside the ncu binary kprof finds. Rows come out in the
same raw form as the CSV reader's (metric name -> value in base units) so one normalisation
serves both.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

from kprof.core.errors import KprofError
from kprof.ncu.locate import find_ncu

_EXTRAS = ("extras/python", "../extras/python", "../../nsight-compute/extras/python")


def find_report_module() -> ModuleType | None:
    """``ncu_report``, importing it from ncu's extras/python folder when it is not on sys.path."""
    try:
        return importlib.import_module("ncu_report")
    except ImportError:
        pass
    folders = []
    ncu = find_ncu()
    if ncu is not None:  # beside the binary (which may be a wrapper script in cuda/bin)
        base = Path(ncu.path).resolve().parent
        folders += [(base / rel).resolve() for rel in _EXTRAS]
        folders += sorted(base.parent.glob("nsight-compute-*/extras/python"), reverse=True)
    folders += sorted(Path("/opt/nvidia/nsight-compute").glob("*/extras/python"), reverse=True)
    for folder in folders:
        if (folder / "ncu_report.py").exists():
            sys.path.insert(0, str(folder))
            try:
                return importlib.import_module("ncu_report")
            except ImportError:
                sys.path.remove(str(folder))
    return None


def _kernel_name(action) -> str:
    demangled = getattr(action, "NameBase_DEMANGLED", None)
    try:
        return action.name(demangled) if demangled is not None else action.name()
    except TypeError:
        return action.name()


def _value(module: ModuleType, metric) -> tuple[float | str | None, str]:
    """A metric's value by its declared kind: strings as text, no value as None, numbers as float.

    ``as_double`` of a string metric is not an error in the report interface (it yields a
    number), so the kind decides, not an exception.
    """
    unit = metric.unit() if hasattr(metric, "unit") else ""
    kinds = getattr(module, "IMetric", None)
    kind = metric.kind() if hasattr(metric, "kind") else None
    if kinds is not None and kind is not None:
        if kind == getattr(kinds, "ValueKind_STRING", object()):
            text = metric.as_string()
            return (text if text not in ("", "n/a") else None), unit
        if kind in (getattr(kinds, "ValueKind_UNKNOWN", object()), getattr(kinds, "ValueKind_ANY", object())):
            return None, unit
    return float(metric.as_double()), unit


def report_records(module: ModuleType, path: Path) -> list[dict]:
    """One record per profiled launch: id, kernel_full and every metric as (value, unit)."""
    try:
        ctx = module.load_report(str(path))
    except Exception as exc:  # the module raises its own error types
        raise KprofError(f"{path} is not a readable .ncu-rep ({exc}): was it written by ncu --export?") from None
    records = []
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            rec = {"id": len(records), "kernel_full": _kernel_name(action), "metrics": {}}
            for name in action.metric_names():
                rec["metrics"][name] = _value(module, action.metric_by_name(name))
            records.append(rec)
    return records
