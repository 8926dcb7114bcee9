"""kprof's own Triton dense decode kernels as Methods: ``triton-decode`` (one launch, the dense
reference next to flash) and ``triton-dense`` (the two-launch flash-decoding form)."""

from __future__ import annotations

from kprof.core.config_space import MethodConfig
from kprof.kernels.dense import LAUNCH_SPACES, ONE_LAUNCH_SPACES, OneLaunchDecode, SplitKVDecode
from kprof.methods.base import Method, Prepared, Stage
from kprof.methods.registry import register
from kprof.workloads.workload import Workload


@register
class TritonDecode(Method):
    name = "triton-decode"
    summary = "Triton split-KV decode in one launch: the last program of each KV head combines"
    pow2_head_dim = True

    def config_space(self):
        return ONE_LAUNCH_SPACES

    def _prepare(self, workload: Workload, config: MethodConfig) -> Prepared:
        op = OneLaunchDecode(workload.q, workload.k, workload.v, config)
        return Prepared(
            method=self.name,
            config=config,
            run=op.run,
            stages=(Stage("decode", op.run),),
            expected_kernels=("_dense_decode",),
            output=op.out,
            details={"num_splits": op.num_splits},
            faults=op.faults,
        )


@register
class TritonDense(Method):
    name = "triton-dense"
    summary = "Triton split-KV decode: per-split partials for a whole GQA group, then a combine"
    pow2_head_dim = True

    def config_space(self):
        return LAUNCH_SPACES

    def _prepare(self, workload: Workload, config: MethodConfig) -> Prepared:
        op = SplitKVDecode(workload.q, workload.k, workload.v, config)
        return Prepared(
            method=self.name,
            config=config,
            run=op.run,
            stages=(Stage("partial", op.launch_partial), Stage("combine", op.launch_combine)),
            expected_kernels=("_split_kv_partial", "split_kv_combine"),
            output=op.out,
            details={"num_splits": op.num_splits, "split_len": op.split_len},
        )
