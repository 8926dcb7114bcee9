"""Decode workloads: the Workload type, its file format, named specs and the synthetic generator."""

from kprof.workloads.resolve import resolve_shape, resolve_workload
from kprof.workloads.specs import SPECS, WorkloadSpec, get_spec
from kprof.workloads.storage import load, save
from kprof.workloads.synthetic import SyntheticRecipe, synthesize
from kprof.workloads.workload import Workload, WorkloadShape

__all__ = [
    "SPECS",
    "SyntheticRecipe",
    "Workload",
    "WorkloadShape",
    "WorkloadSpec",
    "get_spec",
    "load",
    "resolve_shape",
    "resolve_workload",
    "save",
    "synthesize",
]
