"""kprof's own Triton dense decode kernels as Methods: ``triton-decode`` (one launch, the dense
reference next to flash) and ``triton-dense`` (the two-launch flash-decoding form)."""

from __future__ import annotations

from kprof.core.config_space import MethodConfig
from kprof.core.errors import ConfigError
from kprof.kernels.dense import (
    LAUNCH_KERNELS,
    LAUNCH_SPACES,
    ONE_LAUNCH_KERNELS,
    ONE_LAUNCH_SPACES,
    OneLaunchDecode,
    SplitKVDecode,
)
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

    def launch_kernels(self):
        return ONE_LAUNCH_KERNELS

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


_OPTIONS = {"pdl": "0|1: the combine as a programmatic dependent launch (default: where supported, sm_90+)",
            "window": "0|1: K and V copied into one buffer that an L2 access-policy window marks streaming for "
                      "the partial (CUDA; at most the GPU's largest window, 128 MiB on an H200)"}


def _use(key: str) -> str:
    return f"{key}=1 or {key}=0 ({_OPTIONS[key].split(': ', 1)[1]})"


@register
class TritonDense(Method):
    name = "triton-dense"
    summary = "Triton split-KV decode: per-split partials for a whole GQA group, then a combine"
    pow2_head_dim = True
    options = _OPTIONS

    def __init__(self, pdl: int | None = None, window: int = 0):
        """``triton-dense:pdl=0|1``: launch the combine as a programmatic dependent of the partials
        (sm_90+; default: where supported). ``window=1``: K and V copied into one buffer that an L2
        access-policy window marks streaming for the partial launch (CUDA only; the buffer must fit
        the GPU's largest window; later in-place writes to the workload's K and V are not seen)."""
        for key, value in (("pdl", pdl), ("window", window)):
            if value not in (None, 0, 1):
                raise ConfigError(f"triton-dense option {key}={value}: use {_use(key)}")
        self.pdl = None if pdl is None else bool(pdl)
        self.window = bool(window)

    @classmethod
    def from_options(cls, options: dict[str, str]) -> "TritonDense":
        unknown = sorted(set(options) - set(cls.options))
        if unknown:
            raise ConfigError(f"unknown triton-dense option {unknown[0]!r}: use "
                              f"{' or '.join(f'{key}=0|1' for key in cls.options)} (kprof methods says what each does)")
        kw = {}
        for key, value in options.items():
            try:
                kw[key] = int(value)
            except ValueError:
                raise ConfigError(f"triton-dense option {key}={value!r}: use {_use(key)}") from None
        return cls(**kw)

    def config_space(self):
        return LAUNCH_SPACES

    def launch_kernels(self):
        return LAUNCH_KERNELS

    def _prepare(self, workload: Workload, config: MethodConfig) -> Prepared:
        op = SplitKVDecode(workload.q, workload.k, workload.v, config, pdl=self.pdl, window=self.window)
        return Prepared(
            method=self.name,
            config=config,
            run=op.run,
            stages=(Stage("partial", op.launch_partial), Stage("combine", op.launch_combine)),
            expected_kernels=("_split_kv_partial", "split_kv_combine"),
            output=op.out,
            details={"num_splits": op.num_splits, "split_len": op.split_len, "pdl": op.pdl, "l2_window": self.window},
            handle=op,
        )
