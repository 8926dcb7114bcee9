"""The Result document: what was measured, where, how, and what came out.

JSON with a schema version; raw per-round observations go to an ``.npz`` sidecar whose SHA-256 the
JSON records. Both are written atomically; ``latest.json`` in the runs folder is a copy of the
newest document. Tables, plots and gates are computed from Results only.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import re
import types
import typing
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from kprof.core.atomic import atomic_path, atomic_write_text, destination_problem, locked, writable_probe
from kprof.core.errors import KprofError, UsageError
from kprof.core.paths import runs_dir as default_runs_dir
from kprof.core.version import VERSION
from kprof.measure.catalog import LaunchCatalog
from kprof.measure.stats import (
    DriftReport,
    Interval,
    RoundTable,
    clean,
    drift,
    method_latency,
    round_noise,
    round_table,
)

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
    lists the rounds left out as bad (far from their neighbours, or throttled). Bad observations
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
    def bad_share(self) -> float:
        return self.bad_observations / self.observations if self.observations else 0.0

    @classmethod
    def of(cls, observations: np.ndarray, level: float = 0.95, table: RoundTable | None = None, row: int = 0,
           cycle: int = 1) -> "Summary":
        """The summary of one row's raw observations ``[rounds, observations]``: row ``row`` of
        ``table`` when the run's round table is given, whose design cycles are ``cycle`` rounds."""
        _, bad = clean(observations)
        table = table or round_table([observations])
        summaries = np.exp(table.log_summaries[row])
        valid = summaries[np.isfinite(summaries)]
        noise = round_noise(observations)
        noise = noise[np.isfinite(noise)]
        return cls(
            median_us=method_latency(table, row, cycle, level),
            round_median_min_us=float(valid.min()) if valid.size else float("nan"),
            round_median_max_us=float(valid.max()) if valid.size else float("nan"),
            noise=float(np.median(noise)) if noise.size else float("nan"),
            drift=drift(summaries),
            round_summaries_us=[float(m) if np.isfinite(m) else None for m in summaries],
            observations=int(np.asarray(observations).size),
            bad_observations=bad,
            bad_rounds=[int(r) for r in np.flatnonzero(table.bad[row] & np.isfinite(table.log_summaries[row]))],
        )


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
        return save_result(self, path, force=force)

    def frame(self):
        """A pandas DataFrame, one row per timed row (the columns of ``kprof report --csv``)."""
        import pandas as pd  # on demand: measuring never loads pandas

        return pd.DataFrame(self.rows())

    def rows(self) -> list[dict]:
        """One flat record per timed row (what markdown, CSV, JSON and :meth:`frame` show)."""
        speed = {s.candidate: s.interval for s in self.speedups}
        marginal = self.chain_marginals_us()
        tokens = {w["name"]: (w.get("shape") or {}).get("n") for w in self.workload.get("points", [self.workload])}
        rows = []
        for label, s in self.summaries.items():
            iv = speed.get(label)
            rec = next((m for m in self.methods if m.label == label), None)
            workload = (rec.workload if rec else None) or self.workload.get("name")
            gbs, share = self.throughput(label)
            tflops, fshare = self.compute_rate(label)
            rows.append({
                "workload": workload, "tokens": tokens.get(workload) or "", "kind": self.kind, "row": label,
                "mode": self.mode,
                "median_us": _round(s.median_us.estimate, 3), "ci_low_us": _round(s.median_us.low, 3),
                "ci_high_us": _round(s.median_us.high, 3), "round_min_us": _round(s.round_median_min_us, 3),
                "round_max_us": _round(s.round_median_max_us, 3),
                "speedup": _round(iv.estimate, 4) if iv else "", "speedup_low": _round(iv.low, 4) if iv else "",
                "speedup_high": _round(iv.high, 4) if iv else "",
                "marginal_us": round(marginal[label], 3) if label in marginal else "",
                "launches": rec.catalog.launches_per_call if rec and rec.catalog.launches_per_call else "",
                "host_us": _round(rec.host_us, 3) if rec and rec.host_us is not None else "",
                "bytes_per_call": (rec.bytes_per_call if rec else None) or "",
                "gb_per_s": _round(gbs, 1) if gbs else "",
                "tflops": _significant(tflops) if tflops else "",
                "pct_matmul_peak": _round(100 * fshare, 1) if fshare else "",
                "pct_copy_peak": _round(100 * share, 1) if share else "",
                "error_vs_dense": _significant(rec.validation.error_vs_dense if rec else None),
                "valid": (rec.validation.passed and not rec.faults) if rec else "",
                "device": (self.environment.get("gpu") or {}).get("name", self.environment.get("execution")),
            })
        return rows

    def throughput(self, label: str) -> tuple[float | None, float | None]:
        """A row's GB/s (its bytes per call over its median) and that as a share of the measured
        copy peak; None where the bytes, the median or the peak are not known, and no share where
        some bytes come from host memory."""
        rec = next((m for m in self.methods if m.label == label), None)
        median = self.summaries[label].median_us.estimate
        if rec is None or not rec.bytes_per_call or not median or median != median:
            return None, None
        gbs = rec.bytes_per_call / median / 1e3  # bytes per microsecond -> 1e9 bytes per second
        peak = self.environment.get("copy_peak_gbs")
        return gbs, gbs / peak if peak and not rec.bytes_from_host else None

    def compute_rate(self, label: str) -> tuple[float | None, float | None]:
        """A row's TFLOP/s (its FLOPs per call over its time) and that as a share of the measured
        matmul peak of the workload's dtype; None where either is not known."""
        rec = next((m for m in self.methods if m.label == label), None)
        median = self.summaries[label].median_us.estimate
        if rec is None or not rec.flops_per_call or not median or median != median:
            return None, None
        tflops = rec.flops_per_call / median / 1e6
        dtype = (self.workload.get("shape") or {}).get("dtype") or self.workload.get("dtype")
        peak = (self.environment.get("matmul_peak_tflops") or {}).get(dtype)
        return tflops, tflops / peak if peak else None

    def over_bad_limit(self, limit: float) -> dict[str, float]:
        """Rows whose share of bad observations exceeds ``limit``."""
        return {label: s.bad_share for label, s in self.summaries.items() if s.bad_share > limit}

    def chain_marginals_us(self) -> dict[str, float]:
        """For a ``chain`` Result: each prefix's median minus the previous one's, i.e. the marginal
        cost of the launch that prefix adds (they add up to the whole chain); empty otherwise."""
        if self.kind != "chain":
            return {}
        out, previous = {}, 0.0
        for label, s in self.summaries.items():
            out[label] = s.median_us.estimate - previous
            previous = s.median_us.estimate
        return out

    def default_stem(self) -> str:
        stamp = self.created.replace(":", "").replace("-", "").replace("+0000", "Z")[:15]
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", str(self.workload.get("name", "workload")))  # synthetic:hq=8,...
        return f"{stamp}-{self.kind}-{name}"


def _round(x, digits: int):
    """A number for a table cell; empty where there is none (no interval, no valid round)."""
    return "" if x is None or x != x else round(x, digits)


def _significant(x: float | None) -> float | str:
    """An error to 4 significant digits (round() would zero a 3e-9); empty where there is none."""
    return "" if x is None or x != x else float(f"{x:.4g}")


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
    return value


def _check(result: Result) -> Result:
    """What the tables and the gate rely on: every timed row summarised, speedups between rows."""
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


def missing_result(path: Path) -> str:
    """The message for a Result path that does not exist, pointing at kprof's runs folder when
    the last run was written there rather than where the path looks."""
    latest = default_runs_dir() / "latest.json"
    if path.name == "latest.json" and latest.is_file() and latest.resolve() != path.absolute().resolve():
        return (f"result file {path} does not exist; runs are kept in {latest.parent} ($KPROF_HOME, else the project "
                f"root, else ~/.cache/kprof): pass {latest}")
    return f"result file {path} does not exist: run `kprof compare` first, or pass a Result file that exists"


def _npz_bytes(observations: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, **{f"obs_{i}": v for i, v in enumerate(observations.values())},
                        labels=np.array(list(observations), dtype=object).astype(str))
    return buf.getvalue()


def _fresh_path(directory: Path, stem: str) -> Path:
    """``stem.json`` in ``directory``, or ``stem-2.json``... so no earlier run is overwritten."""
    path, k = directory / f"{stem}.json", 1
    while path.exists():
        k += 1
        path = directory / f"{stem}-{k}.json"
    return path


def check_destination(path: str | Path | None, force: bool = False, runs_dir: Path | None = None,
                      option: str = "--out") -> None:
    """Refuse, before a run, what :func:`save_result` would fail at after it: ``--out`` naming a
    folder, an existing file (unless ``force``), or a place that cannot be written."""
    if path:
        problem = destination_problem(path, force, option)
    else:
        runs = runs_dir or default_runs_dir()
        why = writable_probe(runs)
        problem = why and f"the runs folder {runs}: {why}: set $KPROF_HOME or pass --out"
    if problem:
        raise UsageError(problem)


def save_result(result: Result, path: str | Path | None = None, runs_dir: Path | None = None,
                force: bool = False, keep_both: bool = False) -> Path:
    """Write ``result`` (JSON + observations sidecar) atomically, under a lock on the folder so
    that two writers never pair one's JSON with the other's sidecar; also refresh ``latest.json``.

    An existing ``path`` is replaced only with ``force``; with ``keep_both`` (a run that ends to
    find its ``--out`` taken since it started) the Result goes to a fresh name beside it;
    otherwise it is refused before anything is written."""
    runs_dir = runs_dir or default_runs_dir()
    path = Path(path) if path else None
    folder = path.parent if path else runs_dir
    if problem := writable_probe(folder):
        raise UsageError(f"cannot save the result in {folder}: {problem}: pass another path")
    if path is not None and path.is_dir():
        raise UsageError(f"cannot save the result as {path}: it is a folder; name a file in it")
    with locked(folder):
        if path is None:
            path = _fresh_path(runs_dir, result.default_stem())
        elif path.exists() and not force:
            if not keep_both:
                raise UsageError(f"{path} exists: choose another name, or pass force=True (--force) to replace it")
            path = _fresh_path(path.parent, path.stem)
        blob = _npz_bytes(result.observations) if result.observations else None
        if blob is not None:
            result.observations_file = path.with_suffix(".obs.npz").name
            result.observations_sha256 = hashlib.sha256(blob).hexdigest()
        text = result.to_json()  # both documents exist before either file is replaced
        if blob is not None:
            with atomic_path(path.with_suffix(".obs.npz")) as tmp:
                tmp.write_bytes(blob)
        atomic_write_text(path, text)
        if path.parent.resolve() == runs_dir.resolve():
            atomic_write_text(runs_dir / "latest.json", text)
    return path


def load_result(path: str | Path, with_observations: bool = True) -> Result:
    """A Result and its observations, read under a shared lock on their folder, so a writer
    replacing the pair (:func:`save_result`) is never seen half-way."""
    path = Path(path)
    with locked(path.parent, shared=True):
        return _load(path, with_observations)


def _load(path: Path, with_observations: bool) -> Result:
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise KprofError(missing_result(path)) from None
    except IsADirectoryError:
        raise UsageError(f"{path} is a folder: pass a Result file in it (its runs are *.json)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise KprofError(f"{path} is not a kprof result (invalid JSON: {exc}): re-run the measurement") from None
    if not isinstance(doc, dict):
        raise KprofError(f"{path} is not a kprof result (a JSON {type(doc).__name__}, not an object): pass a Result "
                         "file that kprof compare or stages wrote")
    try:
        result = result_from_dict(doc)
    except (KeyError, TypeError) as exc:
        raise KprofError(f"{path} is a malformed kprof result ({exc}): re-run the measurement") from None
    if with_observations and result.observations_file:
        sidecar = path.parent / result.observations_file
        renamed = path.with_suffix(".obs.npz")  # the pair renamed together keeps the result's own stem
        if not sidecar.is_file() and renamed.is_file():
            sidecar = renamed
        if not sidecar.is_file():
            names = " or ".join(dict.fromkeys((sidecar.name, renamed.name)))
            raise KprofError(f"observations sidecar {sidecar} is missing: copy it next to {path.name} "
                             f"(as {names}) or re-run")
        blob = sidecar.read_bytes()
        if hashlib.sha256(blob).hexdigest() != result.observations_sha256:
            raise KprofError(f"observations sidecar {sidecar} does not match its result (hash differs): re-run")
        with np.load(io.BytesIO(blob), allow_pickle=False) as z:
            labels = list(z["labels"])
            result.observations = {label: z[f"obs_{i}"] for i, label in enumerate(labels)}
    return result
