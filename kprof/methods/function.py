"""A plain function ``f(q, k, v) -> o`` as a Method: the quickest way to time your own kernel.

``q [Hq, d]``, ``k, v [Hkv, N, d]`` are the workload's tensors on the run's device; the function
returns the attention output ``[Hq, d]``, which is validated against fp64 dense attention like
every other method's. It is timed as one opaque call (it has no launch parameters to tune).
"""

from __future__ import annotations

from typing import Callable

import torch

from kprof.core.config_space import MethodConfig
from kprof.core.errors import KprofError
from kprof.methods.base import Method, Prepared, Stage
from kprof.workloads.workload import Workload


class FunctionMethod(Method):
    """Base of the Method classes :meth:`for_function` makes, one per user function."""

    name = "function"
    summary = "a user function f(q, k, v) -> o [Hq, d], validated against fp64 dense attention"
    fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]

    @classmethod
    def for_function(cls, fn: Callable, name: str) -> type["FunctionMethod"]:
        """A Method class named ``name`` that calls ``fn``; the function's module is hashed into
        tuning and measurement keys, so editing it invalidates them."""
        doc = (fn.__doc__ or "").strip().splitlines()
        return type(f"Function_{fn.__name__}", (cls,), {
            "fn": staticmethod(fn), "name": name, "summary": doc[0] if doc else f"the function {name}",
            "kernel_modules": (fn.__module__,) if getattr(fn, "__module__", None) else (),
        })

    def _prepare(self, workload: Workload, config: MethodConfig) -> Prepared:
        q, k, v = workload.q, workload.k, workload.v
        fn, name = self.fn, self.name
        out = fn(q, k, v)  # once before timing: the output a timed call must also give
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != tuple(q.shape):
            got = f"shape {tuple(out.shape)}" if isinstance(out, torch.Tensor) else f"a {type(out).__name__}"
            raise KprofError(f"{name} returned {got}: return the attention output, one tensor of shape "
                             f"{tuple(q.shape)} (q's shape [Hq, d])")

        def run() -> torch.Tensor:
            return fn(q, k, v)

        return Prepared(method=name, config=config, run=run, stages=(Stage("call", run),), expected_kernels=(),
                        details={"function": name})
