"""The Result document's schema: what was measured, where, how, and what came out.

Plain dataclasses with a schema version, and their JSON form: :func:`result_from_dict` rebuilds
them with every field's type checked. Statistics are not computed here (see
:mod:`kprof.results.summarise`), files are not written here (:mod:`kprof.results.store`), and
what tables show is derived in :mod:`kprof.results.rows`.
"""

from __future__ import annotations

import dataclasses
import json
import re
import types
import typing
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from kprof.core.errors import KprofError, UsageError
from kprof.core.version import VERSION
from kprof.measure.catalog import LaunchCatalog
from kprof.measure.stats import DriftReport, Interval

SCHEMA = "kprof-result/3"
# /1: rotation order, bootstrap intervals; /2: round medians, signed-rank intervals over pair cycles
READABLE_SCHEMAS = ("kprof-result/1", "kprof-result/2", SCHEMA)


@dataclass
class Validation:
    rel_error: float
    max_abs_error: float
    non_finite: int
    tolerance: float
    passed: bool
    error_vs_baseline: float | None = None  # rel L2 of this output against the baseline's output
    error_vs_dense: float | None = None  # rel L2 against fp64 dense attention (a sparse method's approximation error)


@dataclass
class Summary:
    """One timed row (a method, or a stage): its latency with an interval, and its rounds.

    Each round is summarised by its fenced mean (:mod:`kprof.measure.rounds`); ``bad_rounds``
    lists the rounds left out as bad (far from their neighbours, or throttled), as indices from 0
    (notes, progress and plots count rounds from 1). Bad observations
    (not finite, zero or negative) are left out of every number here and counted in
    ``bad_observations``; ``observations`` counts all of them.
    """

    median_us: Interval  # the latency: exp of the mean log round summary over design cycles (the name is the schema's)
    round_median_min_us: float
    round_median_max_us: float
    noise: float  # median over rounds of the robust CV within a round
    drift: DriftReport
    round_summaries_us: list[float | None] = field(default_factory=list)
    observations: int = 0
    bad_observations: int = 0
    bad_rounds: list[int] = field(default_factory=list)
    tflops: float | None = None  # kprof.time(flops=): work rate at this time per call
    gb_per_s: float | None = None  # kprof.time(bytes=)

    @property
    def time_us(self) -> float:
        """The time per call in us, as tables show it (``median_us`` is its interval)."""
        return self.median_us.estimate

    @property
    def bad_share(self) -> float:
        return self.bad_observations / self.observations if self.observations else 0.0


@dataclass
class MethodRecord:
    label: str  # unique within the Result ("flash", "flash#2" for an A/A check)
    method: str
    role: str  # "baseline" | "candidate" | "subject"
    config: dict
    details: dict
    catalog: LaunchCatalog
    validation: Validation
    faults: list[str] = field(default_factory=list)  # reported by the method's runs (Prepared.faults)
    revision: str | None = None  # the git commit of a NAME@REV method
    workload: str | None = None  # in a sweep over workloads, the one this row ran on
    bytes_per_call: int | None = None  # DRAM bytes one call moves (None: not known)
    bytes_source: str = ""  # "declared by the method" or what measured them (ncu)
    bytes_from_host: bool = False  # some of them cross PCIe from host memory: no percent of the device peak
    flops_per_call: float | None = None  # floating-point operations one call does (None: not known)
    host_us: float | None = None  # the host's time to issue one call (kprof.measure.host_cost); None off a GPU


@dataclass
class Speedup:
    candidate: str
    baseline: str
    interval: Interval  # baseline / candidate over pair cycles (kprof.measure.stats.paired_speedup)
    position_effect: float = 0.0  # ratio when the baseline precedes the candidate in a round over when not, - 1
    cycle_log_ratios: list[float] = field(default_factory=list)  # one value per pair cycle


@dataclass
class Result:
    kind: str  # "compare" | "stages" | "chain" (stages timed as prefixes of the launch chain)
    environment: dict
    workload: dict
    protocol: dict
    clock: str
    mode: str
    methods: list[MethodRecord]
    summaries: dict[str, Summary]
    speedups: list[Speedup] = field(default_factory=list)
    design: dict = field(default_factory=dict)  # paired runs: {"kind", "cycle", "orders": [[label, ...] per round]}
    telemetry: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    schema: str = SCHEMA
    created: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    kprof_version: str = ""
    git_revision: str | None = None
    phases_s: dict[str, float] = field(default_factory=dict)  # wall seconds: setup phases, then "timing"
    partial: str | None = None  # why the run ended early (Ctrl-C): report reads it, gate refuses it
    observations_file: str | None = None
    observations_sha256: str | None = None
    observations: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("observations")
        return finite(d)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, allow_nan=False, default=_json_default)

    def speedup_record(self, candidate: str, baseline: str | None = None) -> Speedup:
        """The stored speedup of ``candidate`` (against ``baseline``, or the run's baseline)."""
        for sp in self.speedups:
            if sp.candidate == candidate and (baseline is None or sp.baseline == baseline):
                return sp
        raise KprofError(f"this result has no speedup of {candidate!r}"
                         + (f" against {baseline!r}" if baseline else "")
                         + f": it has {', '.join(f'{s.candidate} vs {s.baseline}' for s in self.speedups) or 'none'}")

    def speedup(self, candidate: str, baseline: str | None = None) -> Interval:
        """Baseline time over ``candidate``'s time: estimate and interval (``.low``, ``.high``)."""
        return self.speedup_record(candidate, baseline).interval

    def save(self, path: str | Path | None = None, force: bool = False) -> Path:
        """Write this Result (JSON and observations sidecar) where ``kprof report`` and ``kprof gate``
        read it: a fresh file under runs/ by default; an existing ``path`` only with ``force``."""
        from kprof.results.store import save_result  # the store writes Results; a Result does not import it

        if not isinstance(force, bool):  # force="no" is truthy: it would replace the file it means to keep
            raise UsageError(f"force={force!r}: pass True or False")
        if path is not None and not isinstance(path, (str, Path)):
            raise UsageError(f"path={path!r}: pass a file path (str or pathlib.Path), or nothing for runs/")
        return save_result(self, path, force=force)

    def frame(self):
        """A pandas DataFrame, one row per timed row, numeric columns with NaN where a value is missing."""
        from kprof.results.export import to_frame  # pandas on demand: measuring never loads it

        return to_frame([self])

    def default_stem(self) -> str:
        stamp = self.created.replace(":", "").replace("-", "").replace("+0000", "Z")[:15]
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", str(self.workload.get("name", "workload")))  # synthetic:hq=8,...
        return f"{stamp}-{self.kind}-{name}"


def finite(obj):
    """JSON has no NaN or infinity: such numbers become null."""
    if isinstance(obj, float):
        return obj if np.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    if isinstance(obj, np.floating):
        return float(obj) if np.isfinite(obj) else None
    return obj


def _json_default(obj):
    if isinstance(obj, (np.floating, np.integer)):
        return obj.item()
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


def _build(tp, value, where: str = "result"):
    """Rebuild typed dataclasses from parsed JSON (dataclass, list[X], dict[str, X], X | None),
    checking every value's type: a TypeError names the field that is wrong."""
    origin = typing.get_origin(tp)
    if value is None:  # a number may be null (finite() writes NaN so); a record, list or text may not
        if dataclasses.is_dataclass(tp) or origin in (list, dict) or tp in (str, bool, list, dict):
            raise TypeError(f"{where} is null, not {'an object' if origin is not list else 'a list'}")
        return None
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return _build(args[0], value, where) if len(args) == 1 else value
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise TypeError(f"{where} is a {type(value).__name__}, not an object")
        hints = typing.get_type_hints(tp)
        missing = [f.name for f in dataclasses.fields(tp) if f.name not in value
                   and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        if missing:
            raise TypeError(f"{where} lacks {', '.join(missing)}")
        return tp(**{f.name: _build(hints[f.name], value[f.name], f"{where}.{f.name}")
                     for f in dataclasses.fields(tp) if f.name in value})
    if origin is list:
        if not isinstance(value, list):
            raise TypeError(f"{where} is a {type(value).__name__}, not a list")
        (arg,) = typing.get_args(tp)
        return [_build(arg, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise TypeError(f"{where} is a {type(value).__name__}, not an object")
        _, arg = typing.get_args(tp)
        return {k: _build(arg, v, f"{where}.{k}") for k, v in value.items()}
    if tp in (float, int) and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise TypeError(f"{where} is {value!r}, not a number")
    if tp in (str, bool) and not isinstance(value, tp):
        raise TypeError(f"{where} is {value!r}, not a {tp.__name__}")
    if tp in (dict, list) and not isinstance(value, tp):
        raise TypeError(f"{where} is a {type(value).__name__}, not {'an object' if tp is dict else 'a list'}")
    return value


KINDS = ("compare", "stages", "chain")


def _check(result: Result) -> Result:
    """What the tables and the gate rely on: every timed row summarised, speedups between rows."""
    if result.kind not in KINDS:
        raise TypeError(f"its kind is {result.kind!r}, not one of {', '.join(KINDS)}")
    if not result.summaries:
        raise TypeError("it has no summaries (no timed row)")
    labels = set(result.summaries)
    unknown = [m.label for m in result.methods if m.label not in labels and result.kind == "compare"]
    unknown += [f"{sp.candidate} vs {sp.baseline}" for sp in result.speedups
                if sp.candidate not in labels or sp.baseline not in labels]
    if unknown:
        raise TypeError(f"rows without a summary: {', '.join(unknown)}")
    return result


def result_from_dict(doc: dict) -> Result:
    if isinstance(doc, dict) and "benchmarks" in doc and "machine_info" in doc:
        raise KprofError("this is pytest-benchmark's JSON, not a kprof Result: run pytest with --kprof-results DIR "
                         "and pass DIR/<test>.json (kprof_compare saves one per test)")
    if not isinstance(doc, dict) or doc.get("schema") not in READABLE_SCHEMAS:
        schema = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        if _schema_number(schema) > _schema_number(SCHEMA):
            raise KprofError(f"this Result was written by a newer kprof (schema {schema}; this kprof {VERSION} "
                             f"reads up to {SCHEMA}): upgrade kprof (pip install -U kprof) to read it")
        raise KprofError(f"unsupported result schema {schema!r} (this kprof reads {', '.join(READABLE_SCHEMAS)}): "
                         "pass a Result that kprof compare, stages or the API wrote")
    doc = {k: v for k, v in doc.items() if k != "observations"}
    summaries = doc.get("summaries")
    for summary in summaries.values() if isinstance(summaries, dict) else ():  # /1 and /2 kept round medians
        if isinstance(summary, dict) and "round_medians_us" in summary:
            summary.setdefault("round_summaries_us", summary.pop("round_medians_us"))
    return _check(_build(Result, doc))


def _schema_number(schema) -> int:
    """3 for ``kprof-result/3``; 0 for anything that is not a kprof result schema."""
    match = re.fullmatch(r"kprof-result/(\d+)", schema) if isinstance(schema, str) else None
    return int(match.group(1)) if match else 0
