"""The CUDA driver library through ctypes, for the few calls only its API has (an L2 access-policy
window on a stream, the context's L2 fetch granularity); each caller declares the signatures of
the calls it makes."""

from __future__ import annotations

import ctypes
import functools

from kprof.core.errors import ConfigError


@functools.cache
def _library() -> ctypes.CDLL | OSError:
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        return exc


def cuda_driver(fix: str) -> ctypes.CDLL:
    """libcuda, or a one-line ConfigError ending in ``fix`` where it cannot be loaded."""
    library = _library()
    if isinstance(library, OSError):
        raise ConfigError(f"the CUDA driver library cannot be loaded ({library}): {fix}")
    return library
