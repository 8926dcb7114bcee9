"""What every measurement command sets up the same way: target, workload, prepared methods.

A :class:`MeasurementSession` resolves the device and workload once, prepares each method
outside timing, validates its output against the fp64 reference (output poisoned first) and
records its launch catalog with the profiler, all before any timed round.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import asdict, dataclass, field
from typing import Callable

import torch

from kprof.core.errors import InvalidOutput
from kprof.core.target import ExecutionTarget, resolve_target
from kprof.measure.catalog import record_catalog
from kprof.measure.copy_peak import load_peak
from kprof.measure.fingerprint import Environment, collect_environment
from kprof.measure.harness import Harness, Measurement, Progress
from kprof.measure.matmul_peak import load_matmul_peaks
from kprof.measure.protocol import TimingProtocol, default_protocol
from kprof.measure.stats import BAD_LIMIT
from kprof.methods import Method, Prepared, get_method
from kprof.methods.dense_reference import dense_attention_fp64
from kprof.methods.validation import compare_outputs
from kprof.ncu.measured_bytes import SOURCE as MEASURED_SOURCE
from kprof.ncu.measured_bytes import bytes_key, lookup_bytes
from kprof.results.result import MethodRecord, Result, Speedup, Summary, Validation
from kprof.tuning.cache import source_hash
from kprof.tuning.lookup import file_overrides, tuned_overrides
from kprof.workloads import Workload, resolve_workload

GPU_DEFAULT_WORKLOAD = "qwen2.5-7b-l14-32k"
CPU_DEFAULT_WORKLOAD = "cpu-smoke"


@dataclass
class ValidatedMethod:
    """A prepared method after its validation run: its Result record, the prepared call, and the
    output that run produced (compared across methods)."""

    record: MethodRecord
    prepared: Prepared
    output: torch.Tensor  # validated output of one run (kept for cross-method error)


@dataclass
class MeasurementSession:
    target: ExecutionTarget
    workload: Workload | None  # None: callables that hold their own inputs (kprof.compare)
    protocol: TimingProtocol
    environment: Environment
    notes: list[str] = field(default_factory=list)
    config_mode: str = "auto"  # "auto" (tuned when the cache matches) | "default" | a JSON file
    setup_s: dict[str, float] = field(default_factory=dict)  # wall seconds per setup phase, for the Result
    keep_invalid: bool = False  # time rows whose output failed validation (marked FAIL) instead of stopping
    _references: dict = field(default_factory=dict)

    @contextlib.contextmanager
    def phase(self, name: str):
        """Time a setup phase (workload, preparation, validation, launch catalog, host cost)."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.setup_s[name] = self.setup_s.get(name, 0.0) + time.perf_counter() - t0

    @classmethod
    def open(cls, device: str, workload: str | None, overrides: dict, status: Callable[[str], None] = lambda s: None,
             config_mode: str = "auto", keep_invalid: bool = False):
        target = resolve_target(device)
        notes = []
        if not target.is_gpu:
            notes.append("CPU embedded default: Triton interpreter and host clock; these are not GPU numbers")
        protocol = default_protocol(target.is_gpu).with_overrides(**overrides)
        name = workload or (GPU_DEFAULT_WORKLOAD if target.is_gpu else CPU_DEFAULT_WORKLOAD)
        status(f"loading workload {name}")
        t0 = time.perf_counter()
        w = resolve_workload(name, device=target.device)
        loaded = time.perf_counter() - t0
        return cls(target, w, protocol, collect_environment(with_ncu=False), notes, config_mode,
                   {"workload": loaded}, keep_invalid)

    def workload_doc(self) -> dict:
        if self.workload is None:
            return {"name": "callables", "content_hash": None, "shape": None, "metadata": {}}
        return {"name": self.workload.name, "content_hash": self.workload.content_hash(),
                "shape": asdict(self.workload.shape), "metadata": self.workload.metadata}

    def reference(self, method) -> torch.Tensor:
        key = type(method).reference
        if key not in self._references:
            self._references[key] = method.reference(self.workload)
        return self._references[key]

    def dense_reference(self) -> torch.Tensor:
        """fp64 dense attention of this workload (cached): what every method approximates."""
        if Method.reference not in self._references:  # the same entry dense methods validate against
            self._references[Method.reference] = dense_attention_fp64(self.workload)
        return self._references[Method.reference]

    def launch_config(self, method_name: str) -> dict:
        """Launch overrides for a method under this session's --config mode (notes say which)."""
        if self.config_mode == "default":
            return {}
        if self.config_mode == "auto":
            overrides, notes = tuned_overrides(method_name, self.workload.shape, env=self.environment,
                                               eviction=self.protocol.eviction)
            self.notes.extend(notes)
            return overrides
        return file_overrides(self.config_mode, method_name)

    def prepare(self, method_name: str, label: str, role: str, overrides=None, method=None) -> ValidatedMethod:
        """Prepare and validate ``method_name`` (or the given ``method`` instance, which keeps
        whatever it caches between prepares, such as Fathom's pinned index, across variants)."""
        method = method or get_method(method_name)
        if overrides is None:
            overrides = self.launch_config(method_name)
        with self.phase("preparation"):
            prepared = method.prepare(self.workload, self.target, overrides)
        with self.phase("validation"):
            if prepared.output is not None:
                prepared.output.fill_(float("nan"))
            out = prepared.run().clone()
            reference = (method.reference_for(self.workload, prepared) if method.selection_dependent
                         else self.reference(method))
            report = compare_outputs(out, reference)
        with self.phase("launch catalog"):
            catalog = record_catalog(prepared.run, prepared.expected_kernels, self.target.device)
        record = MethodRecord(
            label=label, method=method_name, role=role, config=prepared.config, details=prepared.details,
            catalog=catalog,
            revision=getattr(type(method), "revision", None),
            validation=Validation(report.rel_error, report.max_abs_error, report.non_finite, report.tolerance,
                                  report.passed),
        )
        record.bytes_per_call, record.bytes_source = self.bytes_moved(method, method_name, prepared)
        record.bytes_from_host = method.bytes_from_host(prepared)
        record.flops_per_call = method.flops_per_call(self.workload, prepared)
        exact = not method.selection_dependent and type(method).reference is Method.reference
        with self.phase("validation"):
            record.validation.error_vs_dense = (report.rel_error if exact
                                                else compare_outputs(out, self.dense_reference()).rel_error)
        pm = ValidatedMethod(record, prepared, out)
        self.collect_faults([pm])
        return pm

    def measured_bytes_key(self, method, method_name: str, prepared) -> str | None:
        """Where ``kprof ncu`` keeps this setup's measured DRAM bytes (None off a GPU)."""
        if self.environment.gpu is None:
            return None
        return bytes_key(self.environment.gpu.name, self.workload.content_hash(), method_name, source_hash(method),
                         prepared.config)

    def bytes_moved(self, method, method_name: str, prepared) -> tuple[int | None, str]:
        """DRAM bytes per call: what ncu measured on this setup (``kprof ncu``), else the method's
        declaration."""
        key = self.measured_bytes_key(method, method_name, prepared)
        if key is not None and (measured := lookup_bytes(key)) is not None:
            return measured, MEASURED_SOURCE
        declared = method.bytes_per_call(self.workload, prepared)
        return declared, "declared by the method" if declared is not None else ""

    @staticmethod
    def collect_faults(prepared: list[ValidatedMethod]) -> None:
        """Ask each method for faults its runs reported so far (after validation, after timing)."""
        for pm in prepared:
            if pm.prepared.faults is not None:
                pm.record.faults = list(pm.prepared.faults())

    def harness(self, progress: Progress | None = None, keep_on_interrupt: bool = False) -> Harness:
        """The timing harness for this session's device and protocol; ``keep_on_interrupt``: Ctrl-C
        after a finished round ends the run with the rounds it has (a partial Result)."""
        return Harness(self.target.device, self.protocol, progress=progress, keep_on_interrupt=keep_on_interrupt)

    @property
    def mode(self) -> str:
        """What the numbers measure; on the CPU they are host-clock times of interpreted kernels."""
        if self.target.is_gpu:
            return self.protocol.mode
        return "CPU interpreter, host clock" + (
            "" if self.protocol.host_bound else f", eviction {self.protocol.evict_mib} MiB")

    def result(self, kind: str, methods: list[MethodRecord], measurement: Measurement, notes: list[str],
               speedups: list[Speedup] = ()) -> Result:
        """A Result of this session: fingerprint, workload, protocol, summaries of every row."""
        observations = measurement.rows()
        table = measurement.table
        square = len(measurement.labels) if measurement.orders else 1  # rounds in which every row held every position
        summaries = {label: Summary.of(o, self.protocol.interval_level, table, i, square)
                     for i, (label, o) in enumerate(observations.items())}
        notes = list(notes) + measurement.notes
        notes += [f"{label}: {s.drift.note} (all rounds retained)" for label, s in summaries.items() if s.drift.flagged]
        notes += [f"{label}: {s.bad_observations} of {s.observations} observations were not finite or not positive "
                  "and were left out" for label, s in summaries.items() if s.bad_observations]
        notes += [f"{label}: bad round(s) {', '.join(map(str, s.bad_rounds))} left out of its intervals (far from "
                  "its neighbouring rounds, or throttled)" for label, s in summaries.items() if s.bad_rounds]
        telemetry = measurement.telemetry
        if telemetry is not None and telemetry.throttled_rounds:
            notes.append(f"throttled rounds: {telemetry.throttled_rounds}")
        design = {}
        if measurement.orders:
            design = {"kind": "williams", "cycle": measurement.cycle,
                      "orders": [[measurement.labels[i] for i in order] for order in measurement.orders]}
        if measurement.looks:
            design["looks"] = [asdict(look) for look in measurement.looks]
        protocol = self.protocol.to_dict() | {"rounds": measurement.observations.shape[1]}
        environment = self.environment.to_dict()
        if (peak := load_peak(environment)) is not None:
            environment["copy_peak_gbs"] = peak.gbs
        if matmul := load_matmul_peaks(environment):
            environment["matmul_peak_tflops"] = matmul
        return Result(
            kind=kind,
            environment=environment,
            workload=self.workload_doc(),
            protocol=protocol,
            clock="cuda-events" if self.target.is_gpu else "host-clock",
            mode=self.mode,
            methods=methods,
            summaries=summaries,
            speedups=list(speedups),
            design=design,
            telemetry=telemetry.to_dict() if telemetry is not None else {},
            notes=notes,
            kprof_version=self.environment.kprof,
            git_revision=self.environment.git_revision,
            observations=observations,
            phases_s={k: round(v, 3) for k, v in self.setup_s.items()} | {"timing": round(measurement.wall_s, 3)},
            partial=(f"stopped by Ctrl-C after {measurement.observations.shape[1]} round(s)"
                     if measurement.interrupted else None),
        )


def refuse_invalid(records: list[MethodRecord]) -> None:
    """Stop before timing when a row's output failed validation: timing a wrong kernel answers
    nothing. One line naming the row, its error and the tolerance."""
    failed = [r for r in records if not r.validation.passed]
    if not failed:
        return
    v, more = failed[0].validation, len(failed) - 1
    raise InvalidOutput(
        f"{failed[0].label}: output differs from the reference (relative error {v.rel_error:.1e} > tolerance "
        f"{v.tolerance:.1e}, {v.non_finite} non-finite)" + (f", and {more} more row(s) failed" if more else "")
        + ": nothing was timed; fix it, or pass --keep-invalid (Python: strict=False) to time it anyway")


def bad_observation_error(result: Result) -> str | None:
    """The one-line failure when a row has more than 1% bad observations, else None."""
    over = result.over_bad_limit(BAD_LIMIT)
    if not over:
        return None
    rows = ", ".join(f"{label} {100 * share:.1f}%" for label, share in over.items())
    return (f"too many bad observations (not finite, zero or negative; limit {100 * BAD_LIMIT:g}% of a row): {rows}. "
            "The timer or the method misbehaved: check `kprof env`, then re-run")
