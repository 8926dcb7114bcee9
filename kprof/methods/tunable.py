"""``@kprof.tunable``: a plain function declares its launch parameters beside itself.

::

    @kprof.tunable(space={"BLOCK_N": [32, 64, 128], "num_warps": [2, 4, 8]},
                   default={"BLOCK_N": 64, "num_warps": 4},
                   constraints=[lambda cfg, shape: cfg["BLOCK_N"] <= shape.n])
    def my_attention(q, k, v, *, BLOCK_N, num_warps): ...

The function keeps its ``f(q, k, v) -> o`` form (called so, it gets its defaults); kprof passes a
config's values as keyword arguments. ``space=`` may also be a ``@triton.autotune`` kernel: its
configs (their keyword arguments, ``num_warps`` and ``num_stages``) become the space, and only
those combinations are tried. A constraint reads ``(config, shape)``: the workload's shape, or
for ``kprof.tune(..., inputs=...)`` the inputs mapping. ``kprof tune --method MODULE:NAME`` then
tunes the function like a built-in launch, and ``--method MODULE:NAME:BLOCK_N=128`` runs one config.
"""

from __future__ import annotations

import functools
from typing import Callable, Iterable, Mapping

from kprof.core.config_space import Constraint, LaunchSpace, Param
from kprof.core.errors import ConfigError

LAUNCH = "call"  # a function's one launch, as configs and tuned profiles name it


class TunableFunction:
    """A function with a declared :class:`LaunchSpace`; calling it fills in the defaults."""

    def __init__(self, fn: Callable, space: LaunchSpace):
        functools.update_wrapper(self, fn)
        self.fn, self.space = fn, space

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **{**self.space.default(), **kwargs})

    def __repr__(self) -> str:
        params = ", ".join(p.name for p in self.space.params)
        return f"<tunable {getattr(self.fn, '__qualname__', self.fn)} over {params}>"


def _constraint(c) -> Constraint:
    """A Constraint, a ``(description, predicate)`` pair, or a predicate ``(config, shape) -> bool``
    (described by its docstring or name)."""
    if isinstance(c, Constraint):
        return c
    if isinstance(c, tuple) and len(c) == 2 and callable(c[1]):
        return Constraint(str(c[0]), c[1])
    if callable(c):
        doc = (getattr(c, "__doc__", None) or "").strip()
        return Constraint(doc.splitlines()[0] if doc else getattr(c, "__name__", "constraint"), c)
    raise ConfigError(f"a constraint must be a function (config, shape) -> bool or a (description, function) "
                      f"pair, not a {type(c).__name__}")


def _ints(name: str, values: Iterable) -> tuple[int, ...]:
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int):
            raise ConfigError(f"tunable parameter {name!r}: value {v!r} is not an integer (launch parameters are "
                              "integers: block sizes, warps, stages)")
        out.append(v)
    if not out or len(set(out)) != len(out):
        raise ConfigError(f"tunable parameter {name!r} needs distinct values, got {list(values)}")
    return tuple(out)


def space_from_mapping(space: Mapping[str, Iterable[int]], default: Mapping[str, int] | None,
                       constraints: Iterable = ()) -> LaunchSpace:
    """The product space of ``space``'s values, with ``default`` (first values where not given)."""
    if not space:
        raise ConfigError("@kprof.tunable needs a non-empty space, e.g. space={'BLOCK_N': [32, 64]}")
    default = dict(default or {})
    unknown = set(default) - set(space)
    if unknown:
        raise ConfigError(f"@kprof.tunable default names {', '.join(sorted(unknown))}, which the space lacks")
    params = []
    for name, values in space.items():
        vals = _ints(name, values)
        d = default.get(name, vals[0])
        if d not in vals:
            raise ConfigError(f"@kprof.tunable default {name}={d} is not among its values {list(vals)}")
        params.append(Param(name, vals, d))
    return LaunchSpace(LAUNCH, tuple(params), tuple(_constraint(c) for c in constraints))


def space_from_autotune(kernel, constraints: Iterable = ()) -> LaunchSpace:
    """The space of a ``@triton.autotune`` kernel: exactly its configs (the first is the default)."""
    configs = [{**c.kwargs, "num_warps": c.num_warps, "num_stages": c.num_stages} for c in kernel.configs]
    if not configs:
        raise ConfigError("the @triton.autotune kernel has no configs to tune over")
    keys = list(configs[0])
    if any(list(c) != keys for c in configs):
        raise ConfigError("the @triton.autotune configs set different keys: give every config the same ones")
    space = {k: list(dict.fromkeys(c[k] for c in configs)) for k in keys}
    listed = {tuple(c[k] for k in keys) for c in configs}
    one_of = Constraint(f"one of the kernel's {len(configs)} autotune configs",
                        lambda cfg, shape: tuple(cfg[k] for k in keys) in listed)
    return space_from_mapping(space, configs[0], [one_of, *constraints])


def tunable(space=None, default: Mapping[str, int] | None = None, constraints: Iterable = ()):
    """Declare a function's launch parameters (see the module docstring)."""
    if space is None:
        raise ConfigError("@kprof.tunable needs space=: a mapping of parameter -> values, or a @triton.autotune "
                          "kernel")
    declared = (space_from_autotune(space, constraints) if hasattr(space, "configs")
                else space_from_mapping(space, default, constraints))

    def wrap(fn: Callable) -> TunableFunction:
        return TunableFunction(fn, declared)

    return wrap
