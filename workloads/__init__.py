"""Decode workloads: the Workload type, its file format, named specs and the synthetic generator.

Names are loaded on first use (PEP 562), so that listing the named specs loads no torch.
"""

import importlib

_HOMES = {
    "SPECS": "specs", "WorkloadSpec": "specs", "get_spec": "specs",
    "resolve_shape": "resolve", "resolve_workload": "resolve",
    "load": "storage", "save": "storage",
    "SyntheticRecipe": "synthetic", "synthesize": "synthetic",
    "Workload": "workload", "WorkloadShape": "shape",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'kprof.workloads' has no attribute {name!r}")
    return getattr(importlib.import_module(f"kprof.workloads.{_HOMES[name]}"), name)
