"""``santa``: SANTA++ (representative-key team sampling) as five Triton launches.

Options are given with the method name: ``santa:p=16,r=4,s=124,parents=kmeans,seed=0`` (or
``k=`` instead of ``s=``; ``seed`` seeds k-means, ``noise_seed`` the Gumbel noise, ``fresh=1``
draws new noise on every call, and ``out=fp32`` keeps P.V and the output in fp32 so validation
sees the accumulation error without the final fp16/bf16 rounding; ``pdl=0|1`` turns programmatic
dependent launch of launches 2-5 off or on, default on where the GPU supports it). Preparation (teams,
packing, workspaces) happens in ``prepare``; ``run`` is the five launches (four with
``attend.REDUCE=1``). ``santa-fused`` takes
the same options and runs the same estimator in two launches (``kernels/santa/fused.py``).
"""

from __future__ import annotations

import time

import torch

from kprof.core.config_space import MethodConfig
from kprof.core.errors import ConfigError, MethodUnavailable
from kprof.core.target import ExecutionTarget
from kprof.kernels.santa.cache import load_or_build
from kprof.kernels.santa.fused import FUSED_KERNEL_NAMES, FUSED_LAUNCH_KERNELS, FUSED_LAUNCH_SPACES, SantaFusedDecode
from kprof.kernels.santa.preparation import SantaSettings, pack
from kprof.kernels.santa.reference import Selection, attention_with_selection
from kprof.kernels.santa.step import KERNEL_NAMES, LAUNCH_KERNELS, LAUNCH_SPACES, SantaDecode
from kprof.methods.base import Method, Prepared, Stage
from kprof.methods.registry import register
from kprof.workloads.workload import Workload

_INT_OPTIONS = ("p", "r", "s", "k", "seed", "noise_seed", "fresh", "pdl")
_OPTIONS = {
    "p": "int (16): tokens per parent cluster (N / P clusters)", "r": "int (4): teams per parent (divides P)",
    "s": "int (124): the budget S; K = min(teams, S / (P / R))", "k": "int: K itself, instead of the budget's",
    "parents": "kmeans|contiguous: how parent clusters are formed", "seed": "int (0): the k-means seed",
    "noise_seed": "int (0): the Gumbel noise's seed",
    "fresh": "0|1: new noise every call (seed advanced on the device)",
    "out": "native|fp32: the output's dtype", "pdl": "0|1: programmatic dependent launches (default: sm_90+)",
}


@register
class Santa(Method):
    name = "santa"
    summary = ("SANTA++: score representatives, Gumbel top-(K+1) through a bound filter, merge and selected "
               "attention per query head, reduce")
    dtypes = (torch.float16, torch.bfloat16, torch.float32)
    sampled = True
    selection_dependent = True
    pow2_head_dim = True
    options = _OPTIONS

    def __init__(self, p: int = 16, r: int = 4, s: int = 124, k: int | None = None, parents: str = "kmeans",
                 seed: int = 0, noise_seed: int = 0, fresh: int = 0, out: str = "native", pdl: int | None = None):

        self.settings = SantaSettings(p=p, r=r, s=s, parents=parents, seed=seed)
        self.k_override = k
        self.noise_seed = noise_seed
        self.fresh = bool(fresh)
        if out not in ("native", "fp32"):
            raise ConfigError(f"santa option out={out!r}: use out=native (the input dtype) or out=fp32")
        self.out = out
        if pdl not in (None, 0, 1):
            raise ConfigError(f"santa option pdl={pdl}: use pdl=1 (programmatic dependent launch) or pdl=0")
        self.pdl = None if pdl is None else bool(pdl)

    @classmethod
    def from_options(cls, options: dict[str, str]) -> "Santa":
        kw = {}
        for key, value in options.items():
            if key in ("parents", "out"):
                kw[key] = value
            elif key in _INT_OPTIONS:
                try:
                    kw[key] = int(value)
                except ValueError:
                    raise ConfigError(f"santa option {key}={value!r} must be an integer") from None
                if kw[key] < (1 if key in ("p", "r", "s", "k") else 0):
                    least = "positive" if key in ("p", "r", "s", "k") else "at least 0"
                    raise ConfigError(f"santa option {key}={value} must be {least}: {key}={_OPTIONS[key]}")
            else:
                raise ConfigError(f"unknown santa option {key!r}: use {', '.join(cls.options)}")
        return cls(**kw)

    decode_class = SantaDecode
    kernel_names = KERNEL_NAMES

    def config_space(self):
        return LAUNCH_SPACES

    def launch_kernels(self):
        return LAUNCH_KERNELS

    def check_available(self, workload: Workload, target: ExecutionTarget) -> None:
        super().check_available(workload, target)
        if workload.shape.group > 8:
            raise MethodUnavailable(f"santa supports GQA groups up to 8, this workload has {workload.shape.group}")

    def _prepare(self, workload: Workload, config: MethodConfig) -> Prepared:

        t0 = time.perf_counter()
        layout, outcome = load_or_build(workload, self.settings)
        arts = pack(workload.k, workload.v, layout)
        m_min, m_max = int(layout.num_teams.min()), int(layout.num_teams.max())
        k = self.k_override if self.k_override is not None else self.settings.budget(m_min)
        op = self.decode_class(workload.q, arts, k, config, seed=self.noise_seed, fresh=self.fresh,
                               out_dtype=torch.float32 if self.out == "fp32" else None, pdl=self.pdl)
        mem = arts.memory()
        return Prepared(
            method=self.name,
            config=config,
            run=op.run,
            stages=tuple(Stage(name, fn) for name, fn in op.stages()),
            expected_kernels=op.kernel_names,
            output=op.out,
            details={
                "settings": self.settings.__dict__, "noise_seed": self.noise_seed, "out": self.out, "k": op.k,
                "all_teams": op.all_teams, "pdl": op.pdl, "noise_ahead": op.ahead, "narrow_merge": op.narrow,
                "merge_per_head": op.per_head, "reduce_in_attend": "reduce" not in op.launch_names,
                "teams_per_kv_head": layout.num_teams.tolist(), "teams_min_max": [m_min, m_max],
                "memory_bytes": mem, "team_cache": outcome.status, "prepare_seconds": time.perf_counter() - t0,
            },
            handle=op,
            faults=getattr(op, "faults", None),
        )

    def bytes_per_call(self, workload: Workload, prepared: Prepared) -> int:
        """Every representative key scored, the K and V rows of the teams selected as launch 4 reads
        them (each query head's own with ``merge.PER_HEAD``; else a KV head's query heads' union, once
        per KV head), the query and the output."""
        op = prepared.handle
        teams, _ = op.selections()
        lengths = op.arts.layout.length
        item, s = workload.dtype.itemsize, workload.shape
        rows = 0
        for h in range(s.hkv):
            group = teams[h * s.group:(h + 1) * s.group]
            chosen = torch.cat(group) if getattr(op, "per_head", False) else torch.unique(torch.cat(group))
            rows += int(lengths[h, chosen].sum())
        reps = int(op.arts.layout.num_teams.sum()) * s.d * op.arts.rep_keys.element_size()
        return reps + 2 * rows * s.d * item + 2 * s.hq * s.d * item

    def reference_for(self, workload: Workload, prepared: Prepared) -> torch.Tensor:
        """fp64 output with the kernels' own selected teams and corrections (Appendix E)."""

        op = prepared.handle
        teams, corrections = op.selections()
        return attention_with_selection(workload.q, workload.k, workload.v, op.arts.layout.teams(),
                                        [Selection(t, c) for t, c in zip(teams, corrections)])


@register
class SantaFused(Santa):
    """The same estimator, options and validation as ``santa`` in two launches (``kernels/santa/fused.py``)."""

    name = "santa-fused"
    summary = ("SANTA++ in two launches: score + Gumbel top-(K+1) per block; merge, selected attention "
               "and reduce in one launch whose programs take tickets")
    decode_class = SantaFusedDecode
    kernel_names = FUSED_KERNEL_NAMES

    def config_space(self):
        return FUSED_LAUNCH_SPACES

    def launch_kernels(self):
        return FUSED_LAUNCH_KERNELS
