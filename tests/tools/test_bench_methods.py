"""Example benchmarks of the shipped methods through ``kprof_benchmark`` (host clock on CPU).

Run on a GPU with ``pytest tests/tools/test_bench_methods.py --benchmark-autosave`` and gate later runs with
``--benchmark-compare --benchmark-compare-fail=median:5%``.
"""

import numpy as np
import pytest

from kprof.methods import get_method


@pytest.mark.parametrize("method", ["math", "triton-dense"])
def test_bench_dense_methods_tiny(kprof_benchmark, make_workload, target, method):
    w = make_workload(4, 2, 64, 16, seed=1)
    prepared = get_method(method).prepare(w, target)
    obs = kprof_benchmark(prepared.run, rounds=2, observations=3, warmup=1, evict_mib=1)
    assert obs.shape == (2, 3) and np.all(obs > 0)
    assert kprof_benchmark.benchmark.stats.stats.rounds == 6
    assert kprof_benchmark.benchmark.extra_info["kprof_rounds"] == 2


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["flash", "cudnn", "triton-dense", "santa"])
def test_bench_qwen32k(kprof_benchmark, target, method):
    from kprof.workloads import synthesize

    prepared = get_method(method).prepare(synthesize("qwen2.5-7b-l14-32k"), target)
    kprof_benchmark(prepared.run, rounds=5, observations=200)
