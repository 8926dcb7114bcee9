"""Methods kprof can time: dense baselines and sparse candidates behind one interface.

The interface and registry live here; the library baselines (SDPA) too. Each Triton kernel
family keeps its Method adapter beside its launches (``kprof.kernels.<family>.method``), loaded
by name when the registry is first asked (:data:`kprof.methods.registry.BUILTIN`).
"""

from kprof.methods.base import Method, Prepared, Stage
from kprof.methods.registry import get_method, register, registered

__all__ = ["Method", "Prepared", "Stage", "get_method", "register", "registered"]
