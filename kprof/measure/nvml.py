"""Thin, failure-tolerant access to NVML (nvidia-ml-py): clocks, temperature, power, throttling."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Iterator

try:
    import pynvml
except ImportError:  # nvidia-ml-py is a dependency, but keep kprof importable without it
    pynvml = None

# NVML clock-event (throttle) reason bits worth naming; others are reported as hex.
THROTTLE_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
# reasons that mean the GPU ran slower than it could, as opposed to idling or user settings
SLOWDOWN_MASK = 0x4 | 0x8 | 0x20 | 0x40 | 0x80


def decode_throttle(mask: int) -> list[str]:
    names = [name for bit, name in THROTTLE_REASONS.items() if mask & bit]
    rest = mask & ~sum(THROTTLE_REASONS)
    if rest:
        names.append(hex(rest))
    return names


@dataclass(frozen=True)
class GpuSample:
    sm_clock_mhz: int
    mem_clock_mhz: int
    temperature_c: int
    power_w: float
    throttle_mask: int

    @property
    def throttled(self) -> bool:
        return bool(self.throttle_mask & SLOWDOWN_MASK)


@contextlib.contextmanager
def nvml_session() -> Iterator[bool]:
    """Initialise NVML for the block; yields False (and never raises) if NVML is unusable."""
    if pynvml is None:
        yield False
        return
    try:
        pynvml.nvmlInit()
    except Exception:  # NVMLError subclasses, missing libnvidia-ml
        yield False
        return
    try:
        yield True
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def device_handle(index: int):
    return pynvml.nvmlDeviceGetHandleByIndex(index)


def sample(handle) -> GpuSample:
    """One reading of clocks, temperature, power and throttle reasons (NVML must be initialised)."""
    get_reasons = (getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
                   or pynvml.nvmlDeviceGetCurrentClocksThrottleReasons)
    return GpuSample(
        sm_clock_mhz=pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
        mem_clock_mhz=pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM),
        temperature_c=pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU),
        power_w=pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,
        throttle_mask=int(get_reasons(handle)),
    )


def driver_version() -> str:
    v = pynvml.nvmlSystemGetDriverVersion()
    return v.decode() if isinstance(v, bytes) else v
