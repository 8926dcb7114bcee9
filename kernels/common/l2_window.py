"""An L2 access-policy window that marks one buffer's lines as streaming (evict-first).

A decode kernel reads its K and V once. Per-instruction eviction hints reach only Triton's plain
loads: ``cp.async`` (the pipelined loops) and TMA loads ignore or drop them. A stream's access
policy window is applied by the hardware to every access in its byte range, whatever the load
form: lines the kernel brings into L2 there replace one another rather than what the caller left
in L2. The window is set on the launching stream just before a launch and the stream's previous
window restored right after it, so nothing else launched on that stream is affected. Graph
capture records the window on the captured kernel node.

Only the CUDA driver API has the call (``cuStreamSetAttribute``); it is reached through ctypes.
"""

from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass
from typing import Callable

import torch

from kprof.core.errors import ConfigError
from kprof.kernels.common.bound_launch import current_stream_source

_ACCESS_POLICY_WINDOW = 1  # CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW (a stream attribute too)
_STREAMING = 1  # CU_ACCESS_PROPERTY_STREAMING
_MAX_WINDOW_ATTRIBUTE = 109  # CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE


class _Window(ctypes.Structure):
    _fields_ = [("base_ptr", ctypes.c_void_p), ("num_bytes", ctypes.c_size_t), ("hit_ratio", ctypes.c_float),
                ("hit_prop", ctypes.c_int), ("miss_prop", ctypes.c_int)]


class _AttrValue(ctypes.Union):  # CUlaunchAttributeValue: 64 bytes
    _fields_ = [("window", _Window), ("pad", ctypes.c_char * 64)]


@functools.cache
def _driver() -> ctypes.CDLL:
    return ctypes.CDLL("libcuda.so.1")


def _check(result: int, what: str) -> None:
    if result != 0:
        raise ConfigError(f"{what} failed with CUDA driver error {result}: run without the L2 window option")


def max_window_bytes(device: torch.device) -> int:
    """The largest window the device allows (0 where there is none)."""
    if device.type != "cuda":
        return 0
    value = ctypes.c_int(0)
    index = device.index if device.index is not None else torch.cuda.current_device()
    _check(_driver().cuDeviceGetAttribute(ctypes.byref(value), _MAX_WINDOW_ATTRIBUTE, index),
           "reading the device's largest L2 access-policy window")
    return value.value


@dataclass(frozen=True)
class StreamingWindow:
    """The byte range ``[base, base + nbytes)`` of one tensor, marked streaming in L2."""

    base: int
    nbytes: int

    @classmethod
    def over(cls, buffer: torch.Tensor, option: str) -> "StreamingWindow":
        """A window over all of ``buffer`` (contiguous, on a CUDA device); ``option`` names the
        setting in errors."""
        if buffer.device.type != "cuda":
            raise ConfigError(f"{option} needs a CUDA device: drop it on the CPU")
        if not buffer.is_contiguous():
            raise ConfigError(f"{option}: the buffer must be contiguous")
        nbytes = buffer.numel() * buffer.element_size()
        limit = max_window_bytes(buffer.device)
        if nbytes > limit:
            raise ConfigError(f"{option}: {nbytes / 2**20:,.0f} MiB is more than this GPU's largest L2 window "
                              f"({limit / 2**20:,.0f} MiB): drop the option at this context length")
        return cls(buffer.data_ptr(), nbytes)

    def wrap(self, launch: Callable[[], None]) -> Callable[[], None]:
        """``launch`` run with the window set on the current stream, the stream's window restored
        after. The driver calls' arguments are built once: the pair costs the host about as much
        as one more launch."""
        driver = _driver()
        get, put = driver.cuStreamGetAttribute, driver.cuStreamSetAttribute
        for call in (get, put):
            call.argtypes = (ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)
            call.restype = ctypes.c_int
        mine, before = _AttrValue(), _AttrValue()
        mine.window = _Window(self.base, self.nbytes, 1.0, _STREAMING, _STREAMING)
        mine_p, before_p = ctypes.addressof(mine), ctypes.addressof(before)
        stream_of, device = current_stream_source()

        def windowed() -> None:
            stream = stream_of(device)
            _check(get(stream, _ACCESS_POLICY_WINDOW, before_p), "reading the stream's L2 access-policy window")
            _check(put(stream, _ACCESS_POLICY_WINDOW, mine_p), "setting an L2 access-policy window on the stream")
            try:
                launch()
            finally:
                _check(put(stream, _ACCESS_POLICY_WINDOW, before_p), "restoring the stream's L2 access-policy window")

        windowed.keep = (mine, before)  # the structures the addresses point into live as long as the launch
        return windowed
