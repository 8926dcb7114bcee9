"""Named workload specs: the shapes kprof benchmarks, materialisable without a model."""

from __future__ import annotations

from dataclasses import dataclass

from kprof.core.errors import WorkloadError
from kprof.workloads.shape import WorkloadShape


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
    layout: str = "clustered"  # the generator's content: see kprof.workloads.synthetic.LAYOUTS

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


SYNTHETIC = "synthetic:"
SYNTHETIC_EXAMPLE = "synthetic:hq=8,hkv=2,d=64,n=4096,dtype=fp16"
LAYOUTS = ("clustered", "uniform")
_DTYPES = ("fp16", "bf16", "fp32")
_REQUIRED = ("hq", "hkv", "d", "n", "dtype")
_OPTIONAL = ("seed", "layout", "rope_theta")


def is_spec(name: str) -> bool:
    """A named spec or a synthetic shape spec (``synthetic:hq=...``)."""
    return name in SPECS or name.startswith(SYNTHETIC)


def _synthetic(text: str) -> WorkloadSpec:
    """``synthetic:hq=8,hkv=2,d=64,n=4096,dtype=fp16[,seed=S][,layout=clustered|uniform][,rope_theta=T]``."""
    fix = f"write e.g. {SYNTHETIC_EXAMPLE}"
    fields: dict[str, str] = {}
    for part in filter(None, text[len(SYNTHETIC):].split(",")):
        key, eq, value = part.partition("=")
        key = key.strip()
        if not eq or key not in _REQUIRED + _OPTIONAL:
            raise WorkloadError(f"bad synthetic spec part {part!r} in {text!r}: keys are "
                                f"{', '.join(_REQUIRED + _OPTIONAL)}; {fix}")
        if key in fields:
            raise WorkloadError(f"synthetic spec {text!r} sets {key} twice: {fix}")
        fields[key] = value.strip()
    missing = [k for k in _REQUIRED if k not in fields]
    if missing:
        raise WorkloadError(f"synthetic spec {text!r} lacks {', '.join(missing)}: {fix}")
    sizes = {}
    for key in ("hq", "hkv", "d", "n", "seed"):
        if key in fields:
            try:
                sizes[key] = int(fields[key])
            except ValueError:
                raise WorkloadError(f"synthetic spec {text!r}: {key}={fields[key]!r} is not an integer: "
                                    f"{fix}") from None
    if any(sizes[k] < 1 for k in ("hq", "hkv", "d", "n")) or sizes.get("seed", 0) < 0:
        raise WorkloadError(f"synthetic spec {text!r}: sizes must be positive and the seed not negative: {fix}")
    if sizes["hq"] % sizes["hkv"]:
        raise WorkloadError(f"synthetic spec {text!r}: hq={sizes['hq']} is not a multiple of hkv={sizes['hkv']} "
                            "(each KV head serves a whole group of query heads)")
    if sizes["d"] % 2:
        raise WorkloadError(f"synthetic spec {text!r}: d={sizes['d']} is odd; RoPE rotates channel pairs, so d is even")
    if fields["dtype"] not in _DTYPES:
        raise WorkloadError(f"synthetic spec {text!r}: dtype={fields['dtype']!r}: use one of {', '.join(_DTYPES)}")
    layout = fields.get("layout", "clustered")
    if layout not in LAYOUTS:
        raise WorkloadError(f"synthetic spec {text!r}: layout={layout!r}: use one of {', '.join(LAYOUTS)}")
    try:
        theta = float(fields.get("rope_theta", "10000"))
    except ValueError:
        raise WorkloadError(f"synthetic spec {text!r}: rope_theta={fields['rope_theta']!r} is not a number") from None
    if not theta > 1 or theta == float("inf"):  # RoPE's frequencies are theta ** (-2i/d): a base above 1
        raise WorkloadError(f"synthetic spec {text!r}: rope_theta={fields['rope_theta']} must be a finite number "
                            "above 1 (models use 1e4 to 1e6)")
    # the canonical name: the same shape written in another order is the same workload
    name = SYNTHETIC + ",".join(f"{k}={fields[k]}" for k in _REQUIRED + _OPTIONAL if k in fields)
    return WorkloadSpec(name, sizes["hq"], sizes["hkv"], sizes["d"], sizes["n"], fields["dtype"], "synthetic", None,
                        theta, f"synthetic shape ({layout} keys)", sizes.get("seed", 0), layout)


def get_spec(name: str) -> WorkloadSpec:
    """A named spec, or the spec a ``synthetic:`` string describes."""
    if name.startswith(SYNTHETIC):
        return _synthetic(name)
    try:
        return SPECS[name]
    except KeyError:
        raise WorkloadError(
            f"unknown workload {name!r}: use a workload file, one of {', '.join(SPECS)}, or a shape such as "
            f"{SYNTHETIC_EXAMPLE}"
        ) from None
