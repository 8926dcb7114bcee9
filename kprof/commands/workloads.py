"""``kprof workload`` as use cases: the named specs, and what one workload is. A named spec is
described from its declaration (no torch); its tensors are made only for ``--stats``."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from kprof.commands.preflight import check_workloads
from kprof.workloads.specs import SPECS, WorkloadSpec, get_spec, is_spec

__all__ = ["SPECS", "WorkloadInfo", "WorkloadSpec", "describe"]


@dataclass
class WorkloadInfo:
    name: str
    shape: object  # WorkloadShape
    spec: WorkloadSpec | None  # the declaration, for a named or synthetic spec
    metadata: dict
    content_hash: str | None = None  # with statistics: the materialised tensors' hash
    attention: dict | None = None  # statistic -> {"mean", "min", "max"} over query heads (fp64)
    heads: list | None = None  # per query head

    def to_dict(self) -> dict:
        doc = {"name": self.name, "shape": asdict(self.shape), "kv_bytes": self.shape.kv_bytes,
               "spec": asdict(self.spec) if self.spec else None, "metadata": self.metadata}
        if self.attention is not None:
            doc |= {"content_hash": self.content_hash, "attention": self.attention,
                    "heads": [asdict(h) for h in self.heads]}
        return doc


STATISTICS = ("top1pct_mass", "top512_mass", "sink_mass", "effective_keys")


def describe(name_or_file: str, stats: bool = False) -> WorkloadInfo:
    """A spec from its declaration, or (a file, or ``stats``) the materialised workload with its
    content hash and attention statistics (exact fp64 softmax per query head)."""
    check_workloads([name_or_file], what="workload", makes_tensors=stats or Path(name_or_file).is_file())
    if is_spec(name_or_file) and not Path(name_or_file).is_file() and not stats:
        spec = get_spec(name_or_file)
        meta = {"model": spec.model, "layer": spec.layer, "rope_theta": spec.rope_theta, "seed": spec.seed,
                "layout": spec.layout, "source": "synthetic (made on use; a captured file replaces it)"}
        return WorkloadInfo(spec.name, spec.shape, spec, meta)
    from kprof.workloads.resolve import resolve_workload
    from kprof.workloads.statistics import attention_profile

    w = resolve_workload(name_or_file)
    prof = attention_profile(w)
    summary = {f: {"mean": prof.mean(f), "min": prof.min(f), "max": prof.max(f)} for f in STATISTICS}
    spec = get_spec(name_or_file) if is_spec(name_or_file) and not Path(name_or_file).is_file() else None
    return WorkloadInfo(w.name, w.shape, spec, w.metadata, w.content_hash(), summary, prof.heads)
