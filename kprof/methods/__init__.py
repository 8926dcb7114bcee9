"""Methods kprof can time: dense baselines and sparse candidates behind one interface.

The interface and registry live here; the library baselines (SDPA, FlashInfer) too. Each Triton
kernel family keeps its Method adapter beside its launches (``kprof.kernels.<family>.method``),
loaded by name when the registry is first asked (:data:`kprof.methods.registry.BUILTIN`). Names
load on first use (PEP 562), so that listing the built-in methods (:mod:`.catalogue`) loads no torch.
"""

import importlib

_HOMES = {"Method": "base", "Prepared": "base", "Stage": "base",
          "get_method": "registry", "register": "registry", "registered": "registry"}

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'kprof.methods' has no attribute {name!r}")
    return getattr(importlib.import_module(f"kprof.methods.{_HOMES[name]}"), name)
