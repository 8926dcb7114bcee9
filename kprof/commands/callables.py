"""Python callables as rows of a run: their reference output, its check, and the validated row.

A callable is timed as one opaque call; ``reference`` (a tensor, or a function run on float64
CPU copies of the inputs) is what its output must match.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Callable, Mapping

import torch

from kprof.commands.compare import run_prepared, unique_labels
from kprof.commands.session import MeasurementSession, ValidatedMethod, refuse_invalid
from kprof.core.errors import KprofError
from kprof.core.target import resolve_target
from kprof.measure.catalog import record_catalog
from kprof.measure.fingerprint import collect_environment
from kprof.measure.harness import Harness, stopping_rule
from kprof.measure.protocol import default_protocol
from kprof.methods.base import Prepared, Stage
from kprof.methods.validation import compare_outputs
from kprof.results.schema import MethodRecord, Result, Summary, Validation
from kprof.results.summarise import summarise_row


def _fp64(inputs: Mapping[str, object]) -> dict:
    """CPU float64 copies of the floating tensors among ``inputs`` (what a reference is run on)."""
    return {k: v.detach().to("cpu", torch.float64) if isinstance(v, torch.Tensor) and v.is_floating_point() else v
            for k, v in inputs.items()}


def expected_output(reference, inputs: Mapping[str, object] | None):
    """The reference output: a tensor, ``reference()``, or ``reference(**inputs)`` on fp64 CPU copies."""
    if reference is None or isinstance(reference, torch.Tensor):
        return reference
    if not callable(reference):
        raise KprofError(f"reference= must be a tensor or a callable, not a {type(reference).__name__}")
    out = reference(**_fp64(inputs)) if inputs is not None else reference()
    if not isinstance(out, torch.Tensor):
        raise KprofError(f"the reference returned a {type(out).__name__}, not a tensor: return the expected output")
    return out


def check_output(label: str, out: object, expected: torch.Tensor | None, tolerance: float | None) -> Validation:
    """``out`` against ``expected``: a Validation, or a one-line error when it cannot be compared."""
    if expected is None:
        return Validation(math.nan, math.nan, 0, math.nan, True)
    if not isinstance(out, torch.Tensor):
        raise KprofError(f"{label} returned a {type(out).__name__}, not a tensor, so it cannot be checked against "
                         "the reference: return the output tensor (or pass no reference= to time it unchecked)")
    if out.shape != expected.shape:
        raise KprofError(f"{label}: output shape {tuple(out.shape)} differs from the reference's "
                         f"{tuple(expected.shape)}: return the same shape as the reference")
    if out.is_complex() and not expected.is_complex():
        raise KprofError(f"{label} returned a {out.dtype} tensor against a real reference: its imaginary part "
                         "would be dropped; return a real tensor")
    report = compare_outputs(out, expected, tolerance)
    return Validation(report.rel_error, report.max_abs_error, report.non_finite, report.tolerance, report.passed)


def callable_method(session: MeasurementSession, label: str, role: str, fn: Callable[..., object],
                     expected: torch.Tensor | None, tolerance: float | None) -> ValidatedMethod:
    """A callable as a validated row: run once, its output compared with ``expected``."""
    if not callable(fn):
        raise KprofError(f"{label}: pass a callable or a method spec string, not a {type(fn).__name__}")
    out = fn()
    if session.target.is_gpu:
        torch.cuda.synchronize()
    validation = check_output(label, out, expected, tolerance)
    # a copy: two callables writing one preallocated buffer must not compare equal by aliasing
    kept = out.detach().clone() if isinstance(out, torch.Tensor) else torch.empty(0)
    prepared = Prepared(method=label, config={}, run=fn, stages=(Stage("call", fn),), expected_kernels=())
    record = MethodRecord(label=label, method="callable", role=role, config={}, details={},
                          catalog=record_catalog(fn, (), session.target.device), validation=validation)
    return ValidatedMethod(record, prepared, kept)


def callables_session(device: str, workload: str | None, overrides: dict, on_workload: bool) -> MeasurementSession:
    """A session on ``workload`` when a method spec (or an attention kernel) runs on one; else one
    with no workload, the callables holding their own inputs."""
    if on_workload:
        return MeasurementSession.open(device, workload, overrides)
    target = resolve_target(device)
    protocol = default_protocol(target.is_gpu).with_overrides(**overrides)
    notes = [] if target.is_gpu else ["CPU: host clock; these are not GPU numbers"]
    return MeasurementSession(target, None, protocol, collect_environment(), notes)


def compare_callables(ops: list[tuple[str, object]], inputs: Mapping[str, object] | None, reference,
                      tolerance: float | None, workload: str | None, name: str, overrides: dict, strict: bool,
                      device: str, flops=None, bytes=None) -> Result:
    """``ops[0]`` (the baseline) and the candidates after it, callables or method specs, validated
    and timed in one paired run (what :func:`kprof.compare` does once its arguments are checked)."""
    session = callables_session(device, workload, overrides, any(isinstance(op, str) for _, op in ops))
    expected = expected_output(reference, inputs)
    labels = unique_labels([label for label, _ in ops])
    prepared = []
    for i, ((_, op), label) in enumerate(zip(ops, labels)):
        role = "baseline" if i == 0 else "candidate"
        prepared.append(session.prepare(op, label, role) if isinstance(op, str)
                        else callable_method(session, label, role, op, expected, tolerance))
    if strict:
        refuse_invalid([pm.record for pm in prepared])
    if expected is None and any(not isinstance(op, str) for _, op in ops):
        session.notes.append("callables were not validated: pass reference= to compare their outputs")
    work_flops, work_bytes = work_amount(flops, inputs), work_amount(bytes, inputs)
    for (_, op), pm in zip(ops, prepared):
        if not isinstance(op, str):
            pm.record.flops_per_call = work_flops
            if work_bytes is not None:
                pm.record.bytes_per_call, pm.record.bytes_source = int(work_bytes), "given by the caller"
    result = run_prepared(session, prepared, [(0, k) for k in range(1, len(prepared))])
    if session.workload is None:
        tensors = {k: {"shape": list(v.shape), "dtype": str(v.dtype).removeprefix("torch."), "device": v.device.type}
                   for k, v in (inputs or {}).items() if isinstance(v, torch.Tensor)}
        # the gate compares Results of one name and the same input shapes and dtypes only
        ident = hashlib.sha256(json.dumps([name, tensors], sort_keys=True).encode()).hexdigest()[:16]
        result.workload = {"name": name, "content_hash": f"callables:{ident}", "shape": None,
                           "dtype": dtype_of(inputs), "metadata": {"inputs": tensors}}
    return result


def time_callable(fn: Callable[[], object], overrides: dict, device: str, flops=None, bytes=None) -> Summary:
    """One callable under the protocol, summarised as a Result's row is (:func:`kprof.time`)."""
    for value in (flops, bytes):  # numbers are checked before the timing, not after it
        if value is not None and not callable(value):
            work_amount(value, None)
    target = resolve_target(device)
    protocol = default_protocol(target.is_gpu).with_overrides(**overrides)
    harness = Harness(target.device, protocol)
    m = harness.time(fn, stop=stopping_rule(protocol, []))
    summary = summarise_row(m.observations[0], protocol.interval_level, m.table)
    us = summary.median_us.estimate
    summary.tflops = work_amount(flops, None) / us / 1e6 if flops is not None else None
    summary.gb_per_s = work_amount(bytes, None) / us / 1e3 if bytes is not None else None
    return summary


def work_amount(value, inputs: Mapping[str, object] | None) -> float | None:
    """``flops=`` or ``bytes=``: a number, or a function of the inputs (``value(**inputs)``)."""
    if value is None:
        return None
    if callable(value):
        value = value(**(inputs or {}))
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        raise KprofError(f"flops= and bytes= take a positive number or a function of the inputs returning one, "
                         f"got {value!r}")
    return float(value)


def dtype_of(inputs: Mapping[str, object] | None) -> str | None:
    """The dtype of the first floating tensor among ``inputs`` (which matmul roof applies)."""
    from kprof.measure.matmul_peak import dtype_name

    for v in (inputs or {}).values():
        if isinstance(v, torch.Tensor) and v.is_floating_point():
            return dtype_name(v.dtype)
    return None
