"""``bound_launch``: a Triton launch with its grid, arguments and views fixed once.

Computing grids, strides, config lookups and per-head views on every call is what made
multi-launch decode steps host-bound (a GPU decode step of 30 us cannot hide 100+ us of Python
per call), so all of that is done once here. Triton's own dispatch then still costs about 25 us a
launch on an H200 host (binding the arguments, the specialization key, the cache lookup), which
five SANTA++ launches cannot afford either. So after the first call, which goes through Triton
and compiles, a bound launch calls the compiled kernel's launcher directly with the same
arguments in declaration order, the way Triton's own ``JITFunction.run`` ends.

The direct path is taken only where it is known to match Triton's: a compiled GPU kernel
(never the interpreter), Triton 3.4 or newer (whose launcher takes every declared argument,
constexprs included, and whose launch hooks live in ``triton.knobs``), and no launch hooks
registered (a profiler's hooks see Triton's path). It skips Triton's per-call check that module
globals a kernel was compiled against have not changed: kprof's kernels read only constant ones.
Anything bound must stay the same object for the life of the launch: buffers are filled in
place, never replaced.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import triton


def _triton_at_least(major: int, minor: int) -> bool:
    parts = triton.__version__.split(".")
    try:
        return (int(parts[0]), int(parts[1])) >= (major, minor)
    except (IndexError, ValueError):
        return False


def _launch_hooks_registered() -> bool:
    """Whether a profiler (or anything else) listens to Triton's launches."""
    knobs = getattr(triton, "knobs", None)
    runtime = getattr(knobs, "runtime", None)
    for name in ("launch_enter_hook", "launch_exit_hook"):
        hook = getattr(runtime, name, None)
        if hook is not None and getattr(hook, "calls", True):  # a HookChain with no calls is silent
            return True
    return False


def declared_arguments(kernel, args: tuple, kwargs: dict[str, Any]) -> tuple | None:
    """The kernel's arguments in declaration order, defaults applied, launch options (num_warps,
    num_stages, ...) left out: what Triton's launcher takes. None when they do not bind."""
    fn = getattr(kernel, "fn", None)
    if fn is None:
        return None
    signature = inspect.signature(fn)
    try:
        bound = signature.bind(*args, **{k: v for k, v in kwargs.items() if k in signature.parameters})
    except TypeError:
        return None
    bound.apply_defaults()
    return tuple(bound.arguments.values())


class BoundLaunch:
    """One launch with everything fixed; ``__call__`` issues it on the current stream."""

    def __init__(self, kernel, grid: tuple, args: tuple, kwargs: dict[str, Any]):
        self._kernel, self._given_grid = kernel, grid
        self._triton_call = kernel[grid]
        self._args, self._kwargs = args, kwargs
        self._grid = (tuple(grid) + (1, 1))[:3]
        self._values = declared_arguments(kernel, args, kwargs) if _triton_at_least(3, 4) else None
        self._direct: tuple | None = None  # (run, function, packed metadata, stream getter, device)
        self._looked = self._values is None  # whether the direct path was looked for (once, after compiling)

    @property
    def keywords(self) -> dict[str, Any]:
        """The bound keyword arguments (constexprs and launch options), as on ``functools.partial``."""
        return dict(self._kwargs)

    def replaced(self, **keywords: Any) -> BoundLaunch:
        """The same launch with some keyword arguments replaced: a probe's variant of a bound
        launch, over the same buffers."""
        return BoundLaunch(self._kernel, self._given_grid, self._args, {**self._kwargs, **keywords})

    @property
    def direct(self) -> bool:
        """Whether calls now skip Triton's dispatch."""
        return self._direct is not None

    def __call__(self) -> None:
        if self._direct is not None and not _launch_hooks_registered():
            run, function, metadata, stream_of, device = self._direct
            run(*self._grid, stream_of(device), function, metadata, None, None, None, *self._values)
            return
        compiled = self._triton_call(*self._args, **self._kwargs)
        if not self._looked:
            self._direct, self._looked = _direct_path(compiled), True


def _direct_path(compiled) -> tuple | None:
    """The launcher of a compiled GPU kernel, or None (interpreter, or an unknown kernel object)."""
    if not all(hasattr(compiled, a) for a in ("run", "function", "packed_metadata")):
        return None
    stream_of, device = current_stream_source()
    return compiled.run, compiled.function, compiled.packed_metadata, stream_of, device


def current_stream_source() -> tuple[Callable[[int], int], int]:
    """Triton's own getter of the current stream (torch's, so graph capture is seen), and the device."""
    from triton.runtime import driver

    return driver.active.get_current_stream, driver.active.get_current_device()


def bound_launch(kernel, grid: tuple, *args, **kwargs) -> Callable[[], None]:
    """``kernel[grid](*args, **kwargs)`` as a zero-argument call, bound once."""
    return BoundLaunch(kernel, grid, args, kwargs)
