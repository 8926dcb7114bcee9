"""A plain function ``f(q, k, v) -> o`` as a Method: the quickest way to time your own kernel.

``q [Hq, d]``, ``k, v [Hkv, N, d]`` are the workload's tensors on the run's device; the function
returns the attention output ``[Hq, d]``, which is validated against fp64 dense attention like
every other method's. It is timed as one opaque call (it has no launch parameters to tune).
"""

from __future__ import annotations

from typing import Callable

import torch

from kprof.core.config_space import MethodConfig
from kprof.methods.base import Method, Prepared, Stage
from kprof.workloads.workload import Workload


class FunctionMethod(Method):
    name = "function"  # each instance carries its MODULE:NAME as its name
    summary = "a user function f(q, k, v) -> o [Hq, d], validated against fp64 dense attention"

    def __init__(self, fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor], name: str):
        self.fn = fn
        self.name = name
        doc = (fn.__doc__ or "").strip().splitlines()
        self.summary = doc[0] if doc else f"the function {name}"

    def _prepare(self, workload: Workload, config: MethodConfig) -> Prepared:
        q, k, v = workload.q, workload.k, workload.v
        fn = self.fn

        def run() -> torch.Tensor:
            return fn(q, k, v)

        return Prepared(method=self.name, config=config, run=run, stages=(Stage("call", run),), expected_kernels=(),
                        details={"function": self.name})
