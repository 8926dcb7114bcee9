"""The device's measured matmul peak per dtype: the FLOP rate ``torch.mm`` reaches here.

Work rates of a user's callable (``flops=``) are reported against this, the compute roof of the
roofline, as the copy peak (:mod:`kprof.measure.copy_peak`) is its bandwidth roof. Measured by
``kprof env --measure-peak`` and cached per device, driver, torch build and dtype.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timezone

import torch

from kprof.measure.copy_peak import peak_key, read_cached, write_cached
from kprof.measure.harness import Harness
from kprof.measure.protocol import default_protocol
from kprof.measure.stats import latency

SIZE = {"cuda": 8192, "cpu": 512}  # square matmul side: compute-bound on either
DTYPES = {"cuda": ("fp16", "bf16", "fp32"), "cpu": ("fp32",)}
TORCH_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


@dataclass
class MatmulPeak:
    device: str
    key: str
    dtype: str
    tflops: float  # 2 n^3 / time per call, in 1e12 FLOP/s
    n: int
    median_us: float
    measured: str


MATMUL_PEAK_FILE = "matmul-peak.json"


def dtype_name(dtype: torch.dtype) -> str | None:
    return next((name for name, d in TORCH_DTYPES.items() if d == dtype), None)


def load_matmul_peaks(environment: dict) -> dict[str, float]:
    """Cached matmul peaks of this setup, dtype -> TFLOP/s."""
    out = {}
    for dtype in TORCH_DTYPES:
        record = read_cached(MATMUL_PEAK_FILE, f"{peak_key(environment)}|{dtype}")
        if record and isinstance(record.get("tflops"), (int, float)):
            out[dtype] = float(record["tflops"])
    return out


def measure_matmul_peak(device: torch.device, environment: dict, dtype: str) -> MatmulPeak:
    """Time ``torch.mm`` of two n x n matrices under kprof's protocol (host-bound: no eviction
    needed, the operands live in L2 no more than the real workloads' do) and cache it."""
    n = SIZE[device.type]
    a = torch.randn(n, n, device=device, dtype=TORCH_DTYPES[dtype])
    b = torch.randn(n, n, device=device, dtype=TORCH_DTYPES[dtype])
    out = torch.empty(n, n, device=device, dtype=TORCH_DTYPES[dtype])
    protocol = default_protocol(device.type == "cuda").with_overrides(host_bound=True)
    obs = Harness(device, protocol).time(lambda: torch.mm(a, b, out=out)).observations[0]
    median_us = latency(obs, protocol.level).estimate
    gpu = environment.get("gpu") or {}
    key = f"{peak_key(environment)}|{dtype}"
    peak = MatmulPeak(device=gpu.get("name", device.type), key=key, dtype=dtype,
                      tflops=2 * n**3 / median_us / 1e6, n=n, median_us=median_us,
                      measured=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    write_cached(MATMUL_PEAK_FILE, key, asdict(peak))
    return peak
