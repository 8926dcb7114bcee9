"""pytest plugin (entry point ``pytest11``): the ``kprof_benchmark`` fixture.

It times a GPU operation with the kprof harness (CUDA events, eviction buffer before each call,
rounds with one host sync each; the host clock without CUDA) and hands every observation to
pytest-benchmark's storage, so ``pytest --benchmark-autosave`` and
``--benchmark-compare-fail=median:5%`` gate GPU kernels::

    def test_decode(kprof_benchmark):
        kprof_benchmark(prepared.run, rounds=5, observations=200)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest


@dataclass
class KprofBenchmark:
    benchmark: object  # pytest-benchmark's BenchmarkFixture

    def __call__(self, fn: Callable[[], object], rounds: int = 5, observations: int = 200, warmup: int = 20,
                 evict_mib: int | None = None, host_bound: bool = False) -> np.ndarray:
        """Time ``fn`` and record it; returns the observations ``[rounds, observations]`` in us."""
        import torch

        from kprof.measure.harness import Harness
        from kprof.measure.protocol import TimingProtocol
        from kprof.measure.stats import median_of_medians

        device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
        mib = evict_mib if evict_mib is not None else (512 if device.type == "cuda" else 8)
        protocol = TimingProtocol(rounds=rounds, warmup_pairs=warmup, observations=observations, evict_mib=mib,
                                  host_bound=host_bound)
        harness = Harness(device, protocol, telemetry=False)
        clock = harness.clock
        obs = harness.time(fn).observations[0]
        bench = self.benchmark
        if getattr(bench, "_mode", None):
            raise RuntimeError("kprof_benchmark: the benchmark fixture was already used in this test")
        try:
            bench._mode = "kprof_benchmark(...)"
            stats = bench._make_stats(1)
        except AttributeError as exc:  # pytest-benchmark internals changed
            raise RuntimeError(f"kprof_benchmark needs pytest-benchmark's BenchmarkFixture._make_stats "
                               f"({exc})") from None
        for value in obs.reshape(-1):
            stats.update(float(value) * 1e-6)  # pytest-benchmark stores seconds
        bench.extra_info.update({
            "kprof_clock": clock.name, "kprof_mode": protocol.mode, "kprof_rounds": rounds,
            "kprof_observations": observations, "kprof_median_of_round_medians_us": median_of_medians(obs),
        })
        return obs


@pytest.fixture
def kprof_benchmark(benchmark) -> KprofBenchmark:
    """Time an operation with the kprof protocol and store it in pytest-benchmark."""
    return KprofBenchmark(benchmark)
