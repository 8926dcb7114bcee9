"""What every measurement command sets up the same way: target, workload, prepared methods.

A :class:`MeasurementSession` resolves the device and workload once, prepares each method
outside timing, validates its output against the fp64 reference (output poisoned first) and
records its launch catalog with the profiler, all before any timed round.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

from kprof.catalog import record_catalog
from kprof.clocks import clock_for
from kprof.environment import Environment, collect_environment
from kprof.eviction import EvictionBuffer
from kprof.execution import ExecutionTarget, resolve_target
from kprof.graphs import capture
from kprof.methods import Prepared, get_method
from kprof.protocol import TimingProtocol, default_protocol
from kprof.results import MethodRecord, Result, Speedup, Validation
from kprof.runner import TimedOp
from kprof.summarize import summarize
from kprof.telemetry import TelemetryReport, TelemetrySampler
from kprof.validation import compare_outputs
from kprof.workloads import Workload, resolve_workload

GPU_DEFAULT_WORKLOAD = "qwen2.5-7b-l14-32k"
CPU_DEFAULT_WORKLOAD = "cpu-smoke"


@dataclass
class PreparedMethod:
    record: MethodRecord
    prepared: Prepared
    output: torch.Tensor  # validated output of one run (kept for cross-method error)


@dataclass
class MeasurementSession:
    target: ExecutionTarget
    workload: Workload
    protocol: TimingProtocol
    environment: Environment
    notes: list[str] = field(default_factory=list)
    config_mode: str = "auto"  # "auto" (tuned when the cache matches) | "default" | a JSON file
    _references: dict = field(default_factory=dict)

    @classmethod
    def open(cls, device: str, workload: str | None, overrides: dict, status: Callable[[str], None] = lambda s: None,
             config_mode: str = "auto"):
        target = resolve_target(device)
        notes = []
        if not target.is_gpu:
            notes.append("CPU embedded default: Triton interpreter and host clock; these are not GPU numbers")
        protocol = default_protocol(target.is_gpu).with_overrides(**overrides)
        name = workload or (GPU_DEFAULT_WORKLOAD if target.is_gpu else CPU_DEFAULT_WORKLOAD)
        status(f"loading workload {name}")
        w = resolve_workload(name, device=target.device)
        return cls(target, w, protocol, collect_environment(with_ncu=False), notes, config_mode)

    def workload_doc(self) -> dict:
        from dataclasses import asdict

        return {"name": self.workload.name, "content_hash": self.workload.content_hash(),
                "shape": asdict(self.workload.shape), "metadata": self.workload.metadata}

    def reference(self, method) -> torch.Tensor:
        key = type(method).reference
        if key not in self._references:
            self._references[key] = method.reference(self.workload)
        return self._references[key]

    def launch_config(self, method_name: str) -> dict:
        """Launch overrides for a method under this session's --config mode (notes say which)."""
        from kprof.tuned_configs import file_overrides, tuned_overrides

        if self.config_mode == "default":
            return {}
        if self.config_mode == "auto":
            overrides, notes = tuned_overrides(method_name, self.workload.shape, env=self.environment)
            self.notes.extend(notes)
            return overrides
        return file_overrides(self.config_mode, method_name)

    def prepare(self, method_name: str, label: str, role: str, overrides=None, method=None) -> PreparedMethod:
        """Prepare and validate ``method_name`` (or the given ``method`` instance, which keeps
        whatever it caches between prepares, such as Fathom's pinned index, across variants)."""
        method = method or get_method(method_name)
        if overrides is None:
            overrides = self.launch_config(method_name)
        prepared = method.prepare(self.workload, self.target, overrides)
        if prepared.output is not None:
            prepared.output.fill_(float("nan"))
        out = prepared.run().clone()
        reference = (method.reference_for(self.workload, prepared) if method.selection_dependent
                     else self.reference(method))
        report = compare_outputs(out, reference)
        catalog = record_catalog(prepared.run, prepared.expected_kernels, self.target.device)
        record = MethodRecord(
            label=label, method=method_name, role=role, config=prepared.config, details=prepared.details,
            catalog=catalog,
            validation=Validation(report.rel_error, report.max_abs_error, report.non_finite, report.tolerance, report.passed),
        )
        pm = PreparedMethod(record, prepared, out)
        self.collect_faults([pm])
        return pm

    @staticmethod
    def collect_faults(prepared: list[PreparedMethod]) -> None:
        """Ask each method for faults its runs reported so far (after validation, after timing)."""
        for pm in prepared:
            if pm.prepared.faults is not None:
                pm.record.faults = list(pm.prepared.faults())

    def timed_op(self, label: str, invoke: Callable[[], object]) -> TimedOp:
        return TimedOp(label, capture(invoke, self.target.device) if self.protocol.graph else invoke)

    @property
    def mode(self) -> str:
        """What the numbers measure; on the CPU they are host-clock times of interpreted kernels."""
        if self.target.is_gpu:
            return self.protocol.mode
        return "CPU interpreter, host clock" + ("" if self.protocol.host_bound else f", eviction {self.protocol.evict_mib} MiB")

    def clock(self):
        return clock_for(self.target.device)

    def eviction(self) -> EvictionBuffer | None:
        if self.protocol.host_bound or self.protocol.evict_mib == 0:
            return None
        return EvictionBuffer(self.target.device, self.protocol.evict_mib)

    def telemetry(self) -> TelemetrySampler:
        return TelemetrySampler(self.target.device.index if self.target.is_gpu else None)

    def result(self, kind: str, methods: list[MethodRecord], observations: dict[str, np.ndarray],
               telemetry: TelemetryReport, notes: list[str], speedups: list[Speedup] = ()) -> Result:
        """A Result of this session: fingerprint, workload, protocol, summaries of every row."""
        summaries = {label: summarize(o, self.protocol) for label, o in observations.items()}
        notes = list(notes) + [f"{label}: {s.drift.note} (all rounds retained)"
                               for label, s in summaries.items() if s.drift.flagged]
        if telemetry.throttled_rounds:
            notes.append(f"throttled rounds: {telemetry.throttled_rounds}")
        return Result(
            kind=kind,
            environment=self.environment.to_dict(),
            workload=self.workload_doc(),
            protocol=self.protocol.to_dict(),
            clock=self.clock().name,
            mode=self.mode,
            methods=methods,
            summaries=summaries,
            speedups=list(speedups),
            telemetry=telemetry.to_dict(),
            notes=notes,
            kprof_version=self.environment.kprof,
            git_revision=self.environment.git_revision,
            observations=observations,
        )
