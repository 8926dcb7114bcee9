"""The device's measured copy peak: the bandwidth a plain device-to-device copy reaches here.

Percent of peak in kprof's tables is against this measured number, not the datasheet's: a
decode kernel that reads its bytes at 90% of what ``copy_`` reaches is near its floor whatever
the datasheet says. It is measured once (``kprof env --measure-peak``) and cached per device,
driver and torch build, so every later run reports against the same number.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

import torch

from kprof.core.atomic import atomic_write_text
from kprof.core.paths import measured_dir, measured_files
from kprof.measure.harness import Harness
from kprof.measure.protocol import default_protocol
from kprof.measure.stats import latency

COPY_MIB = {"cuda": 2048, "cpu": 256}  # far beyond any L2 / last-level cache


@dataclass
class CopyPeak:
    device: str  # what it was measured on (GPU name, or "cpu")
    key: str  # device, driver and torch build: a cached peak is used only where this matches
    gbs: float  # (bytes read + bytes written) / median copy time, in GB/s (1e9 bytes)
    copy_bytes: int  # bytes of the source buffer
    median_us: float
    measured: str


def peak_key(environment: dict) -> str:
    gpu = environment.get("gpu") or {}
    return "|".join(str(x) for x in (gpu.get("name", environment.get("execution")), environment.get("driver"),
                                      environment.get("torch")))


PEAK_FILE = "copy-peak.json"


def read_cached(name: str, key: str) -> dict | None:
    """The record under ``key`` in the first peak cache ``name`` that has one (core.paths.measured_files)."""
    for path in measured_files(name):
        try:
            record = json.loads(path.read_text())[key]
        except (OSError, KeyError, TypeError, json.JSONDecodeError, UnicodeDecodeError):
            continue
        if isinstance(record, dict):
            return record
    return None


def write_cached(name: str, key: str, record: dict) -> Path:
    """Put ``record`` under ``key`` of this machine's peak cache ``name`` (atomically; other keys kept)."""
    path = measured_dir() / name
    try:
        doc = json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        doc = {}
    doc[key] = record
    atomic_write_text(path, json.dumps(doc, indent=2))
    return path


def load_peak(environment: dict) -> CopyPeak | None:
    """The cached peak of this device, driver and torch build, if one was measured."""
    record = read_cached(PEAK_FILE, peak_key(environment))
    try:
        return CopyPeak(**record) if record else None
    except TypeError:
        return None


def measure_peak(device: torch.device, environment: dict) -> CopyPeak:
    """Time ``dst.copy_(src)`` under kprof's protocol and cache the result."""
    nbytes = COPY_MIB[device.type] << 20
    src = torch.randn(nbytes // 4, device=device)
    dst = torch.empty_like(src)
    protocol = default_protocol(device.type == "cuda").with_overrides(host_bound=True)
    obs = Harness(device, protocol).time(lambda: dst.copy_(src)).observations[0]
    median_us = latency(obs, protocol.level).estimate
    gpu = environment.get("gpu") or {}
    peak = CopyPeak(device=gpu.get("name", device.type), key=peak_key(environment), gbs=2 * nbytes / median_us / 1e3,
                    copy_bytes=nbytes, median_us=median_us,
                    measured=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    write_cached(PEAK_FILE, peak.key, asdict(peak))
    return peak
