"""A plain function ``f(q, k, v) -> o`` as a Method: the quickest way to time your own kernel.

``q [Hq, d]``, ``k, v [Hkv, N, d]`` are the workload's tensors on the run's device; the function
returns the attention output ``[Hq, d]``, which is validated against fp64 dense attention like
every other method's. It is timed as one opaque call; a function made ``@kprof.tunable`` has one
launch, ``call``, whose declared parameters it receives as keyword arguments.
"""

from __future__ import annotations

import functools
from typing import Callable

import torch

from kprof.core.config_space import MethodConfig
from kprof.core.errors import KprofError
from kprof.methods.base import Method, Prepared, Stage
from kprof.methods.tunable import LAUNCH, TunableFunction
from kprof.workloads.workload import Workload


class FunctionMethod(Method):
    """Base of the Method classes :meth:`for_function` makes, one per user function."""

    name = "function"
    summary = "a user function f(q, k, v) -> o [Hq, d], validated against fp64 dense attention"
    fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]

    @classmethod
    def for_function(cls, fn: Callable, name: str) -> type["FunctionMethod"]:
        """A Method class named ``name`` that calls ``fn``, living in the function's module: tuning
        and measurement keys hash that module's jit functions (its code, without any), so editing
        them invalidates those keys."""
        doc = (fn.__doc__ or "").strip().splitlines()
        module = getattr(fn, "__module__", None)
        return type(f"Function_{fn.__name__}", (cls,), {
            "fn": staticmethod(fn), "name": name, "summary": doc[0] if doc else f"the function {name}",
            "kernel_modules": (module,) if module else (), "__module__": module or cls.__module__,
        })

    def config_space(self):
        return {LAUNCH: self.fn.space} if isinstance(self.fn, TunableFunction) else {}

    @classmethod
    def from_options(cls, options: dict[str, str]) -> "FunctionMethod":
        """A tunable function's parameters as options (``MODULE:NAME:BLOCK_N=128``); a plain
        function takes none."""
        method = cls()
        if not options:
            return method
        if not isinstance(cls.fn, TunableFunction):
            raise KprofError(f"--method {cls.name}: a function takes no options unless it is @kprof.tunable: drop "
                             f"':{','.join(f'{k}={v}' for k, v in options.items())}'")
        try:
            method.launch_overrides = {LAUNCH: {k: int(v) for k, v in options.items()}}
        except ValueError:
            raise KprofError(f"--method {cls.name}: launch parameters are integers, got "
                             f"{', '.join(f'{k}={v}' for k, v in options.items())}") from None
        return method

    def _prepare(self, workload: Workload, config: MethodConfig) -> Prepared:
        q, k, v = workload.q, workload.k, workload.v
        name = self.name
        fn = functools.partial(self.fn.fn, **config[LAUNCH]) if LAUNCH in config else self.fn
        out = fn(q, k, v)  # once before timing: the output a timed call must also give
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != tuple(q.shape):
            got = f"shape {tuple(out.shape)}" if isinstance(out, torch.Tensor) else f"a {type(out).__name__}"
            raise KprofError(f"{name} returned {got}: return the attention output, one tensor of shape "
                             f"{tuple(q.shape)} (q's shape [Hq, d])")

        def run() -> torch.Tensor:
            return fn(q, k, v)

        return Prepared(method=name, config=config, run=run, stages=(Stage("call", run),), expected_kernels=(),
                        details={"function": name})
