"""Named workload specs: the shapes kprof benchmarks, materialisable without a model."""

from __future__ import annotations

from dataclasses import dataclass

from kprof.core.errors import WorkloadError
from kprof.workloads.workload import WorkloadShape


@dataclass(frozen=True)
class WorkloadSpec:
    """A named decode shape plus the provenance a synthetic stand-in records."""

    name: str
    hq: int
    hkv: int
    d: int
    n: int
    dtype: str
    model: str
    layer: int | None
    rope_theta: float
    description: str
    seed: int = 0

    @property
    def shape(self) -> WorkloadShape:
        return WorkloadShape(hq=self.hq, hkv=self.hkv, n=self.n, d=self.d, dtype=self.dtype)


SPECS: dict[str, WorkloadSpec] = {
    s.name: s
    for s in (
        WorkloadSpec(
            "qwen2.5-7b-l14-32k", 28, 4, 128, 32768, "fp16", "Qwen/Qwen2.5-7B-Instruct", 14, 1e6,
            "SANTA++ kernel benchmark shape: layer 14, 32K context, batch 1",
        ),
        WorkloadSpec(
            "qwen2.5-7b-l14-8k", 28, 4, 128, 8192, "fp16", "Qwen/Qwen2.5-7B-Instruct", 14, 1e6,
            "Qwen2.5-7B layer 14 at 8K context",
        ),
        WorkloadSpec(
            "qwen3-8b-128k", 32, 8, 128, 131072, "bf16", "Qwen/Qwen3-8B", None, 1e6,
            "Fathom shape: Qwen3-8B at 128K context",
        ),
        WorkloadSpec(
            "qwen3-8b-1m", 32, 8, 128, 1048576, "bf16", "Qwen/Qwen3-8B", None, 1e6,
            "Fathom shape: Qwen3-8B at 1M context (4 GiB of bf16 K/V per layer)",
        ),
        WorkloadSpec(
            "cpu-smoke", 14, 2, 64, 2048, "fp32", "synthetic", None, 1e4,
            "small CPU/interpreter workload with GQA group 7; the embedded default without a GPU",
        ),
    )
}


def get_spec(name: str) -> WorkloadSpec:
    try:
        return SPECS[name]
    except KeyError:
        raise WorkloadError(
            f"unknown workload {name!r}: use a workload file or one of {', '.join(SPECS)}"
        ) from None
