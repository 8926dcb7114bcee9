"""Where kernels run: a CUDA device, or the CPU through the Triton interpreter.

Triton decides at ``@triton.jit`` decoration time whether a kernel is interpreted, so the
choice must be made before any kernel module is imported; :func:`configure_triton` does that
and ``kprof.kernels`` calls it on import.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from kprof.core.errors import KprofError

_INTERPRET_VAR = "TRITON_INTERPRET"


def cuda_available() -> bool:
    return torch.cuda.is_available()


def cuda_device_count() -> int:
    return torch.cuda.device_count() if cuda_available() else 0


def configure_triton() -> bool:
    """Turn on the Triton interpreter when there is no GPU; return whether it is on.

    An explicit ``TRITON_INTERPRET`` in the environment always wins.
    """
    if _INTERPRET_VAR not in os.environ and not cuda_available():
        os.environ[_INTERPRET_VAR] = "1"
    return os.environ.get(_INTERPRET_VAR, "0") not in ("", "0", "false", "False")


@dataclass(frozen=True)
class ExecutionTarget:
    """The device kernels run on and whether Triton interprets them on the CPU."""

    device: torch.device
    interpreted: bool

    @property
    def is_gpu(self) -> bool:
        return self.device.type == "cuda"

    @property
    def label(self) -> str:
        if self.is_gpu:
            return f"GPU ({torch.cuda.get_device_name(self.device)})"
        return "CPU (Triton interpreter; numbers are not GPU numbers)"


def resolve_target(requested: str = "auto") -> ExecutionTarget:
    """Map ``auto|cuda|cpu`` to an :class:`ExecutionTarget`, with a clear error for cuda-less."""
    interpreted = configure_triton()
    if requested not in ("auto", "cuda", "cpu"):
        raise KprofError(f"unknown device {requested!r}: use auto, cuda or cpu")
    if requested == "cuda" and not cuda_available():
        raise KprofError("CUDA requested but no CUDA device is visible: run on a GPU machine or pass --device cpu")
    if requested == "cpu" or not cuda_available():
        return ExecutionTarget(torch.device("cpu"), interpreted=True)
    if interpreted:
        raise KprofError(
            "TRITON_INTERPRET is set but a GPU was requested: unset TRITON_INTERPRET or pass --device cpu"
        )
    return ExecutionTarget(torch.device("cuda", torch.cuda.current_device()), interpreted=False)
