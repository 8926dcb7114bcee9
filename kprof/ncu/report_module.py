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

from kprof.ncu.locate import find_ncu

_EXTRAS = ("extras/python", "../extras/python", "../../nsight-compute/extras/python")


def find_report_module() -> ModuleType | None:
    """``ncu_report``, importing it from ncu's extras/python folder when it is not on sys.path."""
    try:
        return importlib.import_module("ncu_report")
    except ImportError:
        pass
    ncu = find_ncu()
    if ncu is None:
        return None
    base = Path(ncu.path).resolve().parent
    for rel in _EXTRAS:
        folder = (base / rel).resolve()
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


def _value(metric) -> tuple[float | str | None, str]:
    unit = metric.unit() if hasattr(metric, "unit") else ""
    try:
        return float(metric.as_double()), unit
    except (TypeError, ValueError, AttributeError):
        text = metric.as_string()
        return (text if text not in ("", "n/a") else None), unit


def report_records(module: ModuleType, path: Path) -> list[dict]:
    """One record per profiled launch: id, kernel_full and every metric as (value, unit)."""
    ctx = module.load_report(str(path))
    records = []
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            rec = {"id": len(records), "kernel_full": _kernel_name(action), "metrics": {}}
            for name in action.metric_names():
                rec["metrics"][name] = _value(action.metric_by_name(name))
            records.append(rec)
    return records
