"""A workload's shape: what kernels specialise on and tune caches bucket by. Plain numbers, no
tensors, so that listing and checking shapes loads no torch."""

from __future__ import annotations

from dataclasses import dataclass

DTYPE_BYTES = {"fp16": 2, "bf16": 2, "fp32": 4}


@dataclass(frozen=True)
class WorkloadShape:
    """Sizes a kernel is specialised on; also the key of tuning-cache shape buckets."""

    hq: int
    hkv: int
    n: int
    d: int
    dtype: str

    @property
    def group(self) -> int:
        return self.hq // self.hkv

    @property
    def kv_bytes(self) -> int:
        """Bytes of K plus V: what a dense decode step must read at least once."""
        return 2 * self.hkv * self.n * self.d * DTYPE_BYTES[self.dtype]

    def __str__(self) -> str:
        return f"Hq={self.hq} Hkv={self.hkv} N={self.n} d={self.d} {self.dtype}"
