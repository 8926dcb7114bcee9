"""The Workload: one decode step of one attention layer, exactly as the kernel sees it."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace

import torch

from kprof.core.errors import WorkloadError
from kprof.workloads.shape import WorkloadShape  # noqa: F401 (callers import it from here too)

SUPPORTED_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
DTYPE_NAMES = {v: k for k, v in SUPPORTED_DTYPES.items()}


def dtype_from_name(name: str) -> torch.dtype:
    try:
        return SUPPORTED_DTYPES[name]
    except KeyError:
        raise WorkloadError(f"unknown dtype {name!r}: use one of {', '.join(SUPPORTED_DTYPES)}") from None


@dataclass
class Workload:
    """``q [Hq, d]`` at the query position, post-RoPE ``k, v [Hkv, N, d]``, key positions ``[N]``.

    ``metadata`` holds provenance (model, layer, context, source...) as JSON-able values.
    """

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    positions: torch.Tensor
    query_position: int
    metadata: dict = field(default_factory=dict)
    source: str | None = field(default=None, compare=False)  # file it was loaded from, if any

    def __post_init__(self) -> None:
        validate_tensors(self.q, self.k, self.v, self.positions)

    @property
    def dtype(self) -> torch.dtype:
        return self.q.dtype

    @property
    def shape(self) -> WorkloadShape:
        hkv, n, d = self.k.shape
        return WorkloadShape(hq=self.q.shape[0], hkv=hkv, n=n, d=d, dtype=DTYPE_NAMES[self.dtype])

    @property
    def name(self) -> str:
        return str(self.metadata.get("name", "unnamed"))

    def content_hash(self) -> str:
        """SHA-256 over shapes, dtype and the raw bytes of q, k, v and positions."""
        h = hashlib.sha256()
        h.update(f"{self.shape}|qpos={self.query_position}".encode())
        for t in (self.q, self.k, self.v, self.positions):
            t = t.detach().to("cpu").contiguous()
            h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
        return h.hexdigest()

    def to(self, device: torch.device | str) -> "Workload":
        return replace(
            self,
            q=self.q.to(device),
            k=self.k.to(device),
            v=self.v.to(device),
            positions=self.positions.to(device),
        )


def validate_tensors(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, positions: torch.Tensor) -> None:
    """Raise :class:`WorkloadError` naming the first inconsistency."""
    if q.dim() != 2:
        raise WorkloadError(f"q must be [Hq, d], got shape {tuple(q.shape)}: store the last position's query only")
    if k.dim() != 3 or v.dim() != 3:
        raise WorkloadError(f"k and v must be [Hkv, N, d], got {tuple(k.shape)} and {tuple(v.shape)}")
    if k.shape != v.shape:
        raise WorkloadError(f"k {tuple(k.shape)} and v {tuple(v.shape)} differ in shape: both must be [Hkv, N, d]")
    hq, d = q.shape
    hkv, n, dk = k.shape
    if dk != d:
        raise WorkloadError(f"head dim mismatch: q has d={d}, k/v have d={dk}")
    if hkv == 0 or n == 0 or d == 0 or hq == 0:
        raise WorkloadError(f"empty workload: Hq={hq} Hkv={hkv} N={n} d={d}")
    if hq % hkv:
        raise WorkloadError(f"GQA needs Hq divisible by Hkv, got Hq={hq}, Hkv={hkv}")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dtype not in DTYPE_NAMES:
            raise WorkloadError(f"{name} has dtype {t.dtype}: supported are {', '.join(SUPPORTED_DTYPES)}")
    if not (q.dtype == k.dtype == v.dtype):
        raise WorkloadError(f"q, k, v dtypes differ ({q.dtype}, {k.dtype}, {v.dtype}): store them in one dtype")
    if positions.dim() != 1 or positions.shape[0] != n:
        raise WorkloadError(f"positions must be [N={n}], got shape {tuple(positions.shape)}")
    if positions.dtype != torch.int64:
        raise WorkloadError(f"positions must be int64, got {positions.dtype}")
