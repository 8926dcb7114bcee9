"""FlashInfer as a dense baseline: the decode path FlashInfer recommends for one long sequence.

That is its batch decode wrapper over a paged KV cache, whose plan splits the KV length across
thread blocks, with tensor cores for grouped queries. The workload's K/V are copied once into
FlashInfer's paged layout (``HND``: ``[pages, Hkv, page, d]``), and the plan and its workspace are
made in preparation, outside timing; a timed call is the wrapper's ``run``. Optional: ``pip install
'kprof[flashinfer]'``; without FlashInfer the method is listed and refuses to run in one line.
"""

from __future__ import annotations

import importlib.util
import math

import torch

from kprof.core.config_space import MethodConfig
from kprof.core.errors import ConfigError, MethodUnavailable
from kprof.core.target import ExecutionTarget
from kprof.methods.base import Method, Prepared, Stage
from kprof.methods.registry import register
from kprof.workloads.workload import Workload

WORKSPACE_BYTES = 128 * 2**20  # FlashInfer's recommended float workspace for decode plans
INSTALL = ("FlashInfer is not installed: pip install 'kprof[flashinfer]' (or build its source distribution with "
           "pip install --no-deps --no-build-isolation flashinfer-python)")


def paged(x: torch.Tensor, page: int) -> torch.Tensor:
    """``[Hkv, N, d]`` as FlashInfer's HND pages ``[ceil(N / page), Hkv, page, d]`` (a copy; the last
    page padded with zeros, which the plan's last-page length leaves unread)."""
    hkv, n, d = x.shape
    pages = math.ceil(n / page)
    padded = torch.zeros(hkv, pages * page, d, dtype=x.dtype, device=x.device)
    padded[:, :n] = x
    return padded.view(hkv, pages, page, d).permute(1, 0, 2, 3).contiguous()


@register
class FlashInferDecode(Method):
    name = "flashinfer"
    summary = ("FlashInfer batch decode over a paged KV cache, its planned split over the KV length, tensor "
               "cores for grouped queries (optional: pip install 'kprof[flashinfer]')")
    needs_cuda = True
    dtypes = (torch.float16, torch.bfloat16)
    options = {"page": "int, a power of two (16): tokens per KV page"}

    def __init__(self, page: int = 16):
        if page < 1 or page & (page - 1):
            raise ConfigError(f"flashinfer: page={page} is not a power of two: pass e.g. page=16")
        self.page = page

    @classmethod
    def from_options(cls, options: dict[str, str]) -> "FlashInferDecode":
        unknown = set(options) - set(cls.options)
        if unknown:
            raise ConfigError(f"flashinfer takes the option page=N (tokens per KV page), not "
                              f"{', '.join(sorted(unknown))}")
        try:
            return cls(int(options.get("page", 16)))
        except ValueError:
            raise ConfigError(f"flashinfer: page={options['page']!r} is not a whole number") from None

    def check_available(self, workload: Workload, target: ExecutionTarget) -> None:
        super().check_available(workload, target)
        if importlib.util.find_spec("flashinfer") is None:
            raise MethodUnavailable(INSTALL)

    def _prepare(self, workload: Workload, config: MethodConfig) -> Prepared:
        import flashinfer

        s, dev = workload.shape, workload.q.device
        k, v = paged(workload.k, self.page), paged(workload.v, self.page)
        pages = k.shape[0]
        indptr = torch.tensor([0, pages], dtype=torch.int32, device=dev)
        indices = torch.arange(pages, dtype=torch.int32, device=dev)
        last = torch.tensor([s.n - (pages - 1) * self.page], dtype=torch.int32, device=dev)
        workspace = torch.zeros(WORKSPACE_BYTES, dtype=torch.uint8, device=dev)  # zeroed before first use, as asked
        # use_cuda_graph: the plan writes into these fixed buffers, so a graph may capture run()
        wrapper = flashinfer.BatchDecodeWithPagedKVCacheWrapper(
            workspace, "HND", use_cuda_graph=True, use_tensor_cores=True,
            paged_kv_indptr_buffer=indptr.clone(), paged_kv_indices_buffer=indices.clone(),
            paged_kv_last_page_len_buffer=last.clone())
        wrapper.plan(indptr, indices, last, s.hq, s.hkv, s.d, self.page, pos_encoding_mode="NONE",
                     q_data_type=workload.q.dtype, kv_data_type=workload.k.dtype)
        q = workload.q[None]  # [1, Hq, d]
        out = torch.empty_like(q)
        result = out[0]  # the view run() returns, made once: a timed call does the kernel's work only

        def run() -> torch.Tensor:
            wrapper.run(q, (k, v), out=out)
            return result

        return Prepared(method=self.name, config=config, run=run, stages=(Stage("decode", run),),
                        expected_kernels=(), output=result,
                        details={"page": self.page, "pages": pages, "version": flashinfer.__version__})
