"""An L2 access-policy window that marks one buffer's lines as streaming (evict-first).

A decode kernel reads its K and V once. Per-instruction eviction hints reach only Triton's plain
loads: ``cp.async`` (the pipelined loops) and TMA loads ignore or drop them. A stream's access
policy window is applied by the hardware to every access in its byte range, whatever the load
form: lines the kernel brings into L2 there replace one another rather than what the caller left
in L2. The window is set on the launching stream just before a launch and the stream's previous
window restored right after it, so nothing else launched on that stream is affected. CUDA-graph
replays of a captured launch kept the window's gain on the H200, so capture takes it along.

Only the CUDA driver API has the call (``cuStreamSetAttribute``); it is reached through ctypes.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Callable

import torch

from kprof.core.errors import ConfigError
from kprof.kernels.common.bound_launch import current_stream_source
from kprof.kernels.common.cuda_driver import cuda_driver

_ACCESS_POLICY_WINDOW = 1  # CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW (a stream attribute too)
_STREAMING = 1  # CU_ACCESS_PROPERTY_STREAMING
_MAX_WINDOW_ATTRIBUTE = 109  # CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE


class _Window(ctypes.Structure):
    _fields_ = [("base_ptr", ctypes.c_void_p), ("num_bytes", ctypes.c_size_t), ("hit_ratio", ctypes.c_float),
                ("hit_prop", ctypes.c_int), ("miss_prop", ctypes.c_int)]


class _AttrValue(ctypes.Union):  # CUlaunchAttributeValue: 64 bytes
    _fields_ = [("window", _Window), ("pad", ctypes.c_char * 64)]


def _driver() -> ctypes.CDLL:
    driver = cuda_driver("run without the L2 window option")
    for call in (driver.cuStreamGetAttribute, driver.cuStreamSetAttribute):
        call.argtypes = (ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)
        call.restype = ctypes.c_int
    return driver


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


def check_fits(nbytes: int, device: torch.device, option: str) -> None:
    """Refuse, before anything is allocated, a buffer no window on ``device`` can cover."""
    if device.type != "cuda":
        raise ConfigError(f"{option} needs a CUDA device: drop it on the CPU")
    limit = max_window_bytes(device)
    if nbytes > limit:
        raise ConfigError(f"{option}: {nbytes / 2**20:,.0f} MiB is more than this GPU's largest L2 window "
                          f"({limit / 2**20:,.0f} MiB): drop the option at this context length")


@dataclass(frozen=True)
class StreamingWindow:
    """The byte range ``[base, base + nbytes)`` of one tensor on device ``device``, marked streaming in L2."""

    base: int
    nbytes: int
    device: int

    @classmethod
    def over(cls, buffer: torch.Tensor, option: str) -> "StreamingWindow":
        """A window over all of ``buffer`` (contiguous, on a CUDA device); ``option`` names the
        setting in errors."""
        nbytes = buffer.numel() * buffer.element_size()
        check_fits(nbytes, buffer.device, option)
        if not buffer.is_contiguous():
            raise ConfigError(f"{option}: the buffer must be contiguous")
        index = buffer.device.index if buffer.device.index is not None else torch.cuda.current_device()
        return cls(buffer.data_ptr(), nbytes, index)

    def wrap(self, launch: Callable[[], None]) -> "WindowedLaunch":
        """``launch`` run with this window set on the current stream of the buffer's device."""
        return WindowedLaunch(self, launch)


class WindowedLaunch:
    """A launch between setting a window on the current stream and restoring the stream's own.
    The driver calls' arguments are built once: the three calls cost the host about 6 us."""

    def __init__(self, window: StreamingWindow, launch: Callable[[], None]):
        self.launch = launch
        self._mine, self._before = _AttrValue(), _AttrValue()  # the addresses below point into these
        self._mine.window = _Window(window.base, window.nbytes, 1.0, _STREAMING, _STREAMING)
        self._mine_p, self._before_p = ctypes.addressof(self._mine), ctypes.addressof(self._before)
        driver = _driver()
        self._get, self._put = driver.cuStreamGetAttribute, driver.cuStreamSetAttribute
        self._stream_of, _ = current_stream_source()
        self._device = window.device

    def __call__(self) -> None:
        stream, attr = self._stream_of(self._device), _ACCESS_POLICY_WINDOW
        _check(self._get(stream, attr, self._before_p), "reading the stream's L2 access-policy window")
        _check(self._put(stream, attr, self._mine_p), "setting an L2 access-policy window on the stream")
        try:
            self.launch()
        except BaseException:
            self._put(stream, attr, self._before_p)  # best effort: the launch's own error is the one to see
            raise
        _check(self._put(stream, attr, self._before_p), "restoring the stream's L2 access-policy window")
