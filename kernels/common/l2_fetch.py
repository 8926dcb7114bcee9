"""The CUDA context's L2 fetch-granularity hint: how many bytes an L2 miss asks memory for.

A read of 64 bytes may leave the L2 as a request of 32, 64 or 128 bytes; the context's limit
(CU_LIMIT_MAX_L2_FETCH_GRANULARITY, 0 to 128 bytes, a hint) sets the largest. Fathom's fused scan
reads pinned host memory in 64-byte scale runs beside 256-byte plane runs, and two neighbouring
tiles' scale runs share one 128-byte line: if the hint makes the first miss fetch the whole line,
the second finds it in L2, and the scan issues fewer PCIe requests. The hint is the whole
context's, so :class:`L2FetchGranularity` sets it for a ``with`` block and restores it after;
every method timed inside sees it. Only the driver API has the call, reached through ctypes.
"""

from __future__ import annotations

import ctypes

from kprof.core.errors import ConfigError
from kprof.kernels.common.cuda_driver import cuda_driver

_LIMIT = 5  # CU_LIMIT_MAX_L2_FETCH_GRANULARITY


def _driver() -> ctypes.CDLL:
    driver = cuda_driver("the L2 fetch hint needs a GPU")
    driver.cuCtxSetLimit.argtypes = (ctypes.c_int, ctypes.c_size_t)
    driver.cuCtxGetLimit.argtypes = (ctypes.POINTER(ctypes.c_size_t), ctypes.c_int)
    return driver


def l2_fetch_bytes() -> int:
    """The current context's hint in bytes (the context made current first, its work finished)."""
    import torch

    torch.cuda.synchronize()
    value = ctypes.c_size_t(0)
    if (err := _driver().cuCtxGetLimit(ctypes.byref(value), _LIMIT)) != 0:
        raise ConfigError(f"reading the L2 fetch granularity failed with CUDA driver error {err}")
    return value.value


def set_l2_fetch_bytes(value: int) -> int:
    """Set the hint (0-128 bytes) and return what the driver made of it."""
    if not 0 <= value <= 128:
        raise ConfigError(f"L2 fetch granularity {value}: the hint takes 0 to 128 bytes")
    if (err := _driver().cuCtxSetLimit(_LIMIT, value)) != 0:
        raise ConfigError(f"setting the L2 fetch granularity to {value} failed with CUDA driver error {err}")
    return l2_fetch_bytes()


class L2FetchGranularity:
    """``with L2FetchGranularity(128) as got:`` the hint set (``got``: what the driver made of it),
    the context's own restored after."""

    def __init__(self, value: int):
        self.value, self.before = value, None

    def __enter__(self) -> int:
        self.before = l2_fetch_bytes()
        return set_l2_fetch_bytes(self.value)

    def __exit__(self, *exc) -> None:
        set_l2_fetch_bytes(self.before)
