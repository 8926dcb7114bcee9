"""Python callables as rows of a run: their reference output, its check, and the validated row.

A callable is timed as one opaque call; ``reference`` (a tensor, or a function run on float64
CPU copies of the inputs) is what its output must match.
"""

from __future__ import annotations

import math
from typing import Callable, Mapping

import torch

from kprof.commands.session import MeasurementSession, ValidatedMethod
from kprof.core.errors import KprofError
from kprof.measure.catalog import record_catalog
from kprof.methods.base import Prepared, Stage
from kprof.methods.validation import compare_outputs
from kprof.results.result import MethodRecord, Validation


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
