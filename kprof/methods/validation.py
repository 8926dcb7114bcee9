"""Compare a method's output with its fp64 reference."""

from __future__ import annotations

from dataclasses import dataclass

import torch

# relative L2 error allowed per output dtype (fp32 accumulate everywhere)
TOLERANCES = {torch.float32: 1e-5, torch.float16: 1e-2, torch.bfloat16: 2e-2}


@dataclass(frozen=True)
class ValidationReport:
    rel_error: float  # ||out - ref|| / ||ref||
    max_abs_error: float
    non_finite: int
    tolerance: float

    @property
    def passed(self) -> bool:
        return self.non_finite == 0 and self.rel_error <= self.tolerance

    @property
    def status(self) -> str:
        if self.non_finite:
            return f"FAIL ({self.non_finite} non-finite)"
        return "ok" if self.passed else f"FAIL (rel {self.rel_error:.2e} > {self.tolerance:.0e})"


def compare_outputs(output: torch.Tensor, reference: torch.Tensor, tolerance: float | None = None) -> ValidationReport:
    """Relative L2 and max-abs error of ``output`` against ``reference`` (both moved to fp64 CPU)."""
    if output.shape != reference.shape:
        raise ValueError(f"output shape {tuple(output.shape)} != reference shape {tuple(reference.shape)}")
    if output.is_complex() or reference.is_complex():
        raise ValueError(f"output is {output.dtype} against a {reference.dtype} reference: attention outputs are "
                         "real; return a real tensor")
    # a dtype outside the table (fp64, an 8-bit float) is held to the tolerance of its width
    tol = (TOLERANCES.get(output.dtype, 1e-5 if output.dtype.itemsize >= 4 else 1e-1) if tolerance is None
           else tolerance)
    out = output.detach().to("cpu", torch.float64)
    ref = reference.detach().to("cpu", torch.float64)
    non_finite = int((~torch.isfinite(out)).sum())
    diff = torch.nan_to_num(out - ref, nan=float("inf"))
    rel = (diff.norm() / ref.norm().clamp_min(1e-300)).item()
    return ValidationReport(rel_error=rel, max_abs_error=diff.abs().max().item(), non_finite=non_finite, tolerance=tol)
