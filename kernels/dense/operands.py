"""``DenseOperands``: what both dense decode kernels derive from (q, k, v) before any launch.

The inputs made contiguous, the GQA geometry, the query tile height the tensor-core dot needs,
the base-2 score scale, the dot precision, and the fp32 split-partials workspace.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton

LOG2E = 1.4426950408889634


@dataclass(frozen=True)
class DenseOperands:
    q: torch.Tensor  # [Hq, d]
    k: torch.Tensor  # [Hkv, N, d]
    v: torch.Tensor
    hq: int
    hkv: int
    n: int
    d: int
    group: int
    block_g: int  # the G query heads padded to a power of two >= 16 (tl.dot rows)
    qk_scale_log2: float
    precision: str

    @classmethod
    def of(cls, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, method: str) -> "DenseOperands":
        hq, d = q.shape
        hkv, n, _ = k.shape
        if d & (d - 1) or d < 16:
            raise ValueError(f"head dim {d} unsupported: {method} needs a power of two >= 16")
        group = hq // hkv
        return cls(q.contiguous(), k.contiguous(), v.contiguous(), hq, hkv, n, d, group,
                   max(16, triton.next_power_of_2(group)), (1.0 / d**0.5) * LOG2E,
                   "ieee" if q.dtype == torch.float32 else "tf32")

    def partials(self, num_splits: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Running max, mass ``[Hq, splits]`` and weighted values ``[Hq, splits, d]`` in fp32."""
        m = torch.empty(self.hq, num_splits, device=self.q.device, dtype=torch.float32)
        acc = torch.empty(self.hq, num_splits, self.d, device=self.q.device, dtype=torch.float32)
        return m, torch.empty_like(m), acc
