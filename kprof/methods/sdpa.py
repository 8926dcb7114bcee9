"""Dense baselines through PyTorch SDPA with one backend forced and native GQA."""

from __future__ import annotations

from typing import ClassVar

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from kprof.core.config_space import MethodConfig
from kprof.methods.base import Method, Prepared, Stage
from kprof.methods.registry import register
from kprof.workloads.workload import Workload


class _SDPAMethod(Method):
    backend: ClassVar[SDPBackend]
    kernel_names: ClassVar[tuple[str, ...]]

    def _prepare(self, workload: Workload, config: MethodConfig) -> Prepared:
        q = workload.q[None, :, None, :]  # [1, Hq, 1, d] views, no copies
        k = workload.k[None]
        v = workload.v[None]
        backend = self.backend

        def run() -> torch.Tensor:
            with sdpa_kernel([backend]):
                return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)[0, :, 0, :]

        return Prepared(
            method=self.name,
            config=config,
            run=run,
            stages=(Stage("sdpa", run),),
            expected_kernels=self.kernel_names,
            details={"backend": backend.name},
        )


@register
class FlashSDPA(_SDPAMethod):
    name = "flash"
    summary = "PyTorch SDPA, Flash backend forced, native GQA (split-KV forward + combine)"
    needs_cuda = True
    dtypes = (torch.float16, torch.bfloat16)
    backend = SDPBackend.FLASH_ATTENTION
    kernel_names = ("flash", "flash")  # split-KV forward + combine at decode shapes


@register
class CudnnSDPA(_SDPAMethod):
    name = "cudnn"
    summary = "PyTorch SDPA, cuDNN backend forced, native GQA"
    needs_cuda = True
    dtypes = (torch.float16, torch.bfloat16)
    backend = SDPBackend.CUDNN_ATTENTION
    kernel_names = ()  # cuDNN picks its engine at run time: count shown, names not checked


@register
class MathSDPA(_SDPAMethod):
    name = "math"
    summary = "PyTorch SDPA, math backend (runs on CPU and GPU; the CPU baseline substitute)"
    backend = SDPBackend.MATH
    kernel_names = ()
