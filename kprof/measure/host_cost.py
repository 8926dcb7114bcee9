"""``host_us_per_call``: the host's own time to issue one call, apart from the device's.

Event timing says how long the GPU works; it cannot say whether the host can issue the work that
fast. A decode loop without CUDA graphs pays the larger of the two per step, so a multi-launch
method that is fast on the device can still lose in eager use. Calls are issued in short bursts
with no synchronisation inside a burst (few enough that the launch queue never fills and blocks
the host), and the median over bursts is reported. A call that waits on the GPU itself (``.item()``,
``.cpu()``) counts that wait too: it is then host-bound by its own doing. Off a GPU every call
runs on the host anyway, so there is nothing to separate and the answer is None. Measured after
timing, so the timed state is the validated one.
"""

from __future__ import annotations

import statistics
import time
from typing import Callable

import torch

CALLS_PER_BURST = 20
BURSTS = 7


def host_us_per_call(fn: Callable[[], object], device: torch.device,
                     calls: int = CALLS_PER_BURST, bursts: int = BURSTS) -> float | None:
    if device.type != "cuda":
        return None
    per_call = []
    for _ in range(bursts):
        torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        per_call.append((time.perf_counter() - t0) / calls * 1e6)
    torch.cuda.synchronize(device)
    return statistics.median(per_call)
