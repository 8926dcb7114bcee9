"""Methods kprof can time: dense baselines and sparse candidates behind one interface."""

from kprof.methods import fathom, santa, sdpa, triton_dense  # noqa: F401  (register the built-in methods)
from kprof.methods.base import Method, Prepared, Stage
from kprof.methods.registry import METHODS, get_method, register

__all__ = ["METHODS", "Method", "Prepared", "Stage", "get_method", "register"]
