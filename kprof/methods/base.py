"""The Method interface: everything the harness, tuner and profilers need, nothing more.

``prepare`` does all one-off work (packing, workspace allocation) outside timing and returns a
:class:`Prepared`, whose ``run()`` issues exactly the timed operation. Baselines and candidates
implement the same interface, so the harness never knows which method it times.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Callable, ClassVar, Mapping

import torch

from kprof.core.config_space import LaunchSpace, MethodConfig, resolve_method_config
from kprof.core.errors import ConfigError, MethodUnavailable
from kprof.core.target import ExecutionTarget
from kprof.methods.dense_reference import dense_attention_fp64
from kprof.workloads.workload import Workload


@dataclass(frozen=True)
class Stage:
    """One GPU launch (or an opaque library call) of a prepared method, runnable on its own."""

    name: str
    launch: Callable[[], object]


@dataclass
class Prepared:
    """A method bound to a workload, device and config, ready to be timed.

    ``run`` returns the output ``[Hq, d]``; it must not allocate, synchronise the host or loop
    over heads in Python. ``stages`` run in order reproduce ``run``. ``expected_kernels`` are
    substrings of the GPU kernel names the profiler should see, one per launch, in order.
    ``output`` lets validation poison the output buffer before a run to catch unwritten rows.
    """

    method: str
    config: MethodConfig
    run: Callable[[], torch.Tensor]
    stages: tuple[Stage, ...]
    expected_kernels: tuple[str, ...]
    output: torch.Tensor | None = None  # the buffer run() writes, when the method owns one
    details: dict = field(default_factory=dict)
    handle: object = None  # the method's own operator object (for method-specific validation)
    # problems the method detected in its own runs since it was prepared, one line each (e.g. a
    # pipelined wait inside a kernel that gave up); asked after validation and after timing
    faults: Callable[[], list[str]] | None = None


class Method(ABC):
    """A decode-attention implementation that kprof can prepare, run, validate, time and tune."""

    name: ClassVar[str]
    summary: ClassVar[str]
    needs_cuda: ClassVar[bool] = False
    sampled: ClassVar[bool] = False  # output depends on random noise: validate several realisations
    selection_dependent: ClassVar[bool] = False  # validate by replaying the method's own selection
    pow2_head_dim: ClassVar[bool] = False  # Triton kernels that tile the head dim need d = 2^k >= 16
    # a plugin's modules outside its own module whose jit functions its launches may run: tuning
    # keys hash them for a launch that names no kernels (kprof.tuning.source_key)
    kernel_modules: ClassVar[tuple[str, ...]] = ()
    dtypes: ClassVar[tuple[torch.dtype, ...]] = (torch.float16, torch.bfloat16, torch.float32)
    # what each ``name:key=value`` option takes and does, as "values: meaning" by key (``kprof
    # methods`` lists them); ``from_options`` refuses every other key
    options: ClassVar[dict[str, str]] = {}

    def config_space(self) -> Mapping[str, LaunchSpace]:
        """Tunable launch parameters per launch name; empty for library calls."""
        return {}

    def launch_kernels(self) -> Mapping[str, tuple]:
        """The ``@triton.jit`` functions each launch compiles, by launch name. A tuned profile's
        key hashes only their code and what they call, so edits elsewhere (adapters, references,
        help strings) keep it valid. A launch left out is keyed on every jit function of the
        method's modules."""
        return {}

    def check_available(self, workload: Workload, target: ExecutionTarget) -> None:
        """Raise :class:`MethodUnavailable` with a one-line reason if this cannot run here."""
        if self.needs_cuda and not target.is_gpu:
            raise MethodUnavailable(
                f"method {self.name!r} needs a CUDA GPU and this run is on the CPU: "
                "run on a GPU machine, or choose a CPU-capable method such as 'math' or 'triton-dense'"
            )
        if workload.dtype not in self.dtypes:
            allowed = ", ".join(str(d).removeprefix("torch.") for d in self.dtypes)
            raise MethodUnavailable(
                f"method {self.name!r} does not support {str(workload.dtype).removeprefix('torch.')} inputs: "
                f"use a workload in {allowed}"
            )
        d = workload.shape.d
        if self.pow2_head_dim and (d < 16 or d & (d - 1)):
            raise MethodUnavailable(f"{self.name} does not support head dim {d}: it needs a power of two >= 16")

    launch_overrides: dict[str, dict[str, int]] = {}  # from "name:launch.PARAM=V" specs

    def prepare(
        self,
        workload: Workload,
        target: ExecutionTarget,
        overrides: Mapping[str, Mapping[str, int]] | None = None,
    ) -> Prepared:
        """Resolve the launch config (spec overrides, then ``overrides``) and do the one-off work."""
        self.check_available(workload, target)
        merged = {launch: dict(params) for launch, params in self.launch_overrides.items()}
        for launch, params in (overrides or {}).items():
            merged.setdefault(launch, {}).update(params)
        config = resolve_method_config(self.config_space(), merged, workload.shape)
        if workload.q.device != target.device:
            workload = workload.to(target.device)
        return self._prepare(workload, config)

    @abstractmethod
    def _prepare(self, workload: Workload, config: MethodConfig) -> Prepared: ...

    @classmethod
    def from_options(cls, options: dict[str, str]) -> "Method":
        """Build from ``name:key=value,...`` options; methods without options accept none."""
        if options:
            raise ConfigError(f"method {cls.name!r} takes no options, got {', '.join(options)}")
        return cls()

    def bytes_per_call(self, workload: Workload, prepared: Prepared) -> int | None:
        """Bytes one call must move at least (asked after the validation run): its reads of the KV
        cache and the query, and its output written once. Dense attention reads all of K and V;
        a sparse method overrides this with what its plan reads. None: not known."""
        s = workload.shape
        return s.kv_bytes + 2 * s.hq * s.d * workload.dtype.itemsize

    def flops_per_call(self, workload: Workload, prepared: Prepared) -> int | None:
        """Floating-point operations of one call: dense attention's ``4 Hq N d`` (scores and the
        weighted sum) for a method that moves dense attention's bytes; None for one that declares
        its own bytes, as a sparse method's work depends on what it selected."""
        if type(self).bytes_per_call is not Method.bytes_per_call:
            return None
        s = workload.shape
        return 4 * s.hq * s.n * s.d

    def bytes_from_host(self, prepared: Prepared) -> bool:
        """Whether some of :meth:`bytes_per_call` cross PCIe from host memory: then a percent of the
        device's copy peak would mislead, and tables leave it out."""
        return False

    def reference(self, workload: Workload) -> torch.Tensor:
        """fp64 CPU output this method must match; dense attention unless the method is sparse."""
        return dense_attention_fp64(workload)

    def reference_for(self, workload: Workload, prepared: Prepared) -> torch.Tensor:
        """Reference for one prepared run; sampling methods override it to replay their sample."""
        return self.reference(workload)
