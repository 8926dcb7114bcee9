"""Launch catalog: which GPU kernels one invocation really issues (torch.profiler, never during timing)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class LaunchCatalog:
    kernels: list[str] = field(default_factory=list)  # kernel names of one invocation, in order
    launches_per_call: int | None = None
    expected: list[str] = field(default_factory=list)
    matches_expected: bool | None = None  # None: not checked (CPU, or nothing declared)
    note: str = ""


def _kernel_events(prof) -> list[tuple[float, str]]:
    import torch

    events = []
    for evt in prof.events():
        if getattr(evt, "device_type", None) == torch.autograd.DeviceType.CUDA:
            events.append((evt.time_range.start, evt.name))
    return sorted(events)


def matches(kernels: Sequence[str], expected: Sequence[str]) -> bool:
    """Each expected substring matches one launch, in order, and nothing else ran."""
    return len(kernels) == len(expected) and all(e in k for e, k in zip(expected, kernels))


def record_catalog(invoke: Callable[[], object], expected: Sequence[str], device: torch.device,
                   invocations: int = 3) -> LaunchCatalog:
    """Profile ``invocations`` calls after a warm-up and return the kernels of one call."""
    if device.type != "cuda":
        return LaunchCatalog(expected=list(expected), note="no GPU: launch catalog not recorded")
    import torch
    from torch.profiler import ProfilerActivity, profile

    invoke()
    torch.cuda.synchronize()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch.profiler's "clears events" notice
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(invocations):
                invoke()
            torch.cuda.synchronize()
    names = [n for _, n in _kernel_events(prof)]
    if not names or len(names) % invocations:
        return LaunchCatalog(kernels=names, expected=list(expected),
                             note=f"{len(names)} kernels over {invocations} calls: launches differ between calls")
    per_call = names[: len(names) // invocations]
    ok = matches(per_call, expected) if expected else None
    return LaunchCatalog(kernels=per_call, launches_per_call=len(per_call), expected=list(expected),
                         matches_expected=ok)
