"""Programmatic dependent launch (PDL, sm_90+) for chains of short kernels.

A decode step here is a chain of small launches whose own work is a few microseconds; between two
of them the GPU drains the first grid, then launches and ramps up the next. A kernel launched
with ``launch_pdl=True`` may instead be scheduled while its predecessor in the stream still runs:
it does its independent prologue (loading the query, constants, drawing noise), then
``wait_for_predecessor`` blocks until the predecessor grid has completed and its writes are
visible. ``release_dependents`` lets the next kernel of the chain be scheduled.

Rules that keep a chain correct (the tests check outputs with and without PDL):
- before ``wait_for_predecessor``, no access that conflicts with the immediate predecessor's: no
  read of what it writes, no write of what it reads or writes (SANTA++'s merge resets tables
  that only it writes and only the launch after it reads);
- ``release_dependents`` only after ``wait_for_predecessor``, so a grid that has released has
  seen its predecessor complete, and by induction every earlier grid of the chain; the one
  exception is the first kernel of a chain, which has no wait (it is launched plainly) and may
  release at once (the dense split-KV partial does, so its combine is scheduled early);
- the first kernel of a chain is launched without the attribute, so it starts only after
  everything before it in the stream (the previous step, the user's writes) has finished.

The Triton interpreter has no grid-dependency control, so both helpers compile to nothing unless
the ``PDL`` constexpr is set, and :func:`pdl_supported` sets it only for compiled sm_90+ launches.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kprof.core.errors import ConfigError
from kprof.kernels import INTERPRETED

try:  # Triton >= 3.4
    from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait
except ImportError:  # pragma: no cover - older Triton: PDL is never turned on
    gdc_launch_dependents = gdc_wait = None


def _launcher_has_pdl() -> bool:
    try:
        from triton.backends.nvidia.compiler import CUDAOptions
    except ImportError:  # pragma: no cover - Triton without the NVIDIA backend
        return False
    return "launch_pdl" in getattr(CUDAOptions, "__dataclass_fields__", {})


def pdl_supported(device: torch.device) -> bool:
    """Whether launches on ``device`` can use PDL: compiled Triton with GDC, an sm_90+ GPU."""
    if INTERPRETED or device.type != "cuda" or gdc_wait is None or not _launcher_has_pdl():
        return False
    return torch.cuda.get_device_capability(device) >= (9, 0)


def resolve_pdl(requested: bool | None, device: torch.device) -> bool:
    """``None`` means "where supported"; an explicit True on an unsupported device is an error."""
    supported = pdl_supported(device)
    if requested is None:
        return supported
    if requested and not supported:
        raise ConfigError("pdl=1 needs a compiled Triton launch on an sm_90+ GPU with grid-dependency "
                          "control (Triton >= 3.4): drop pdl=1 or use pdl=0")
    return requested


@triton.jit
def wait_for_predecessor(PDL: tl.constexpr):
    """Block until the previous grid in the stream has completed and its writes are visible."""
    if PDL:
        gdc_wait()


@triton.jit
def release_dependents(PDL: tl.constexpr):
    """Allow the next grid of the chain to be scheduled (call after ``wait_for_predecessor``)."""
    if PDL:
        gdc_launch_dependents()
