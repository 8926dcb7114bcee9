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
from kprof.measure.harness import Harness, Progress
from kprof.measure.matmul_peak import load_matmul_peaks
from kprof.measure.protocol import TimingProtocol, default_protocol
from kprof.methods import Method, Prepared, get_method
from kprof.methods.dense_reference import dense_attention_fp64
from kprof.methods.user_code import is_users, running_users_code
from kprof.methods.validation import compare_outputs
from kprof.ncu.measured_bytes import SOURCE as MEASURED_SOURCE
from kprof.ncu.measured_bytes import bytes_key, lookup_bytes
from kprof.results.schema import MethodRecord, Validation
from kprof.results.summarise import RunContext
from kprof.tuning.lookup import file_overrides, tuned_overrides
from kprof.tuning.source_key import source_hash
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
        return cls(target, w, protocol, collect_environment(), notes, config_mode,
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
        return file_overrides(self.config_mode, method_name, get_method(method_name).config_space())

    def prepare(self, method_name: str, label: str, role: str, overrides=None, method=None) -> ValidatedMethod:
        """Prepare and validate ``method_name`` (or the given ``method`` instance, which keeps
        whatever it caches between prepares, such as Fathom's pinned index, across variants)."""
        method = method or get_method(method_name)
        if overrides is None:
            overrides = self.launch_config(method_name)
        def users():  # the user's own method: its failure one line naming their file, not kprof's traceback
            return running_users_code(label) if is_users(method) else contextlib.nullcontext()

        with self.phase("preparation"), users():
            prepared = method.prepare(self.workload, self.target, overrides)
        with self.phase("validation"):
            with users():
                if prepared.output is not None:
                    prepared.output.fill_(float("nan"))
                out = prepared.run().clone()
                own = method.reference_for(self.workload, prepared) if method.selection_dependent else None
            reference = self.reference(method) if own is None else own  # kprof's own: a failure keeps its traceback
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

    def context(self) -> RunContext:
        """Where and how this session measures, as its Results record it: the fingerprint with the
        measured peaks, the workload, the protocol, the clock and the setup phases so far."""
        environment = self.environment.to_dict()
        if (peak := load_peak(environment)) is not None:
            environment["copy_peak_gbs"] = peak.gbs
        if matmul := load_matmul_peaks(environment):
            environment["matmul_peak_tflops"] = matmul
        return RunContext(environment=environment, workload=self.workload_doc(), protocol=self.protocol.to_dict(),
                          clock="cuda-events" if self.target.is_gpu else "host-clock", mode=self.mode,
                          kprof_version=self.environment.kprof, git_revision=self.environment.git_revision,
                          phases_s=dict(self.setup_s))


KEEP_INVALID = "fix it, or pass --keep-invalid (Python: strict=False) to time it anyway"


def refuse_invalid(records: list[MethodRecord]) -> None:
    """Stop before timing when a row's output failed validation: timing a wrong kernel answers
    nothing. One line naming the row, its error and the tolerance."""
    failed = [r for r in records if not r.validation.passed]
    if not failed:
        return
    v, more = failed[0].validation, len(failed) - 1
    problem = (f"{failed[0].label}: output differs from the reference (relative error {v.rel_error:.1e} > tolerance "
               f"{v.tolerance:.1e}, {v.non_finite} non-finite)" + (f", and {more} more row(s) failed" if more else ""))
    raise InvalidOutput(f"{problem}: nothing was timed; {KEEP_INVALID}", problem=problem)
