"""Interval clocks behind one interface: CUDA events on the GPU, the host clock on the CPU.

A clock hands out an :class:`IntervalRecorder` holding ``n`` start/stop slots. The runner marks
``start(i)``/``stop(i)`` around each invocation and reads all intervals after one
``synchronize()`` per round, so the host never waits on the device between observations.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod

import numpy as np
import torch


class IntervalRecorder(ABC):
    @abstractmethod
    def start(self, i: int) -> None: ...

    @abstractmethod
    def stop(self, i: int) -> None: ...

    @abstractmethod
    def elapsed_us(self, count: int) -> np.ndarray:
        """Durations of slots ``0..count-1`` in microseconds (after the clock synchronised)."""


class Clock(ABC):
    name: str

    @abstractmethod
    def recorder(self, n: int) -> IntervalRecorder: ...

    @abstractmethod
    def synchronize(self) -> None: ...


class _EventRecorder(IntervalRecorder):
    def __init__(self, n: int):
        self._start = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        self._stop = [torch.cuda.Event(enable_timing=True) for _ in range(n)]

    def start(self, i: int) -> None:
        self._start[i].record()

    def stop(self, i: int) -> None:
        self._stop[i].record()

    def elapsed_us(self, count: int) -> np.ndarray:
        return np.array([self._start[i].elapsed_time(self._stop[i]) * 1e3 for i in range(count)])


class CudaEventClock(Clock):
    """Device-side intervals: includes GPU execution and idle gaps between launches, not host time."""

    name = "cuda-events"

    def recorder(self, n: int) -> IntervalRecorder:
        return _EventRecorder(n)

    def synchronize(self) -> None:
        torch.cuda.synchronize()


class _HostRecorder(IntervalRecorder):
    def __init__(self, n: int):
        self._t = np.zeros((n, 2), dtype=np.int64)

    def start(self, i: int) -> None:
        self._t[i, 0] = time.perf_counter_ns()

    def stop(self, i: int) -> None:
        self._t[i, 1] = time.perf_counter_ns()

    def elapsed_us(self, count: int) -> np.ndarray:
        return (self._t[:count, 1] - self._t[:count, 0]) / 1e3


class HostClock(Clock):
    """Wall-clock intervals for synchronous (CPU) execution; lets the protocol run in CI."""

    name = "host-clock"

    def recorder(self, n: int) -> IntervalRecorder:
        return _HostRecorder(n)

    def synchronize(self) -> None:
        pass


def clock_for(device: torch.device) -> Clock:
    return CudaEventClock() if device.type == "cuda" else HostClock()
