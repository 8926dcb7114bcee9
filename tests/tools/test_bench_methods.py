"""Example benchmarks of the shipped methods through ``kprof_benchmark`` and ``kprof_compare``
(host clock on CPU).

Run on a GPU with ``pytest tests/tools/test_bench_methods.py -m gpu --benchmark-autosave``; the
kprof statistics are in each benchmark's ``extra_info``.
"""

import pytest

from kprof.methods import get_method

TINY = {"rounds": 2, "observations": 3, "warmup_pairs": 1, "evict_mib": 1}


@pytest.mark.parametrize("method", ["math", "triton-dense"])
def test_bench_dense_methods_tiny(kprof_benchmark, make_workload, target, method):
    w = make_workload(4, 2, 64, 16, seed=1)
    prepared = get_method(method).prepare(w, target)
    summary = kprof_benchmark(prepared.run, **TINY)
    assert summary.observations == 6 and summary.median_us.estimate > 0
    info = kprof_benchmark.benchmark.extra_info
    assert info["kprof_rounds"] == 2 and info["kprof_median_us"] == summary.median_us.estimate
    assert kprof_benchmark.benchmark.stats.stats.rounds == 6


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["santa", "triton-dense"])
def test_bench_qwen32k_against_flash(kprof_compare, target, method):
    from kprof.workloads import synthesize

    w = synthesize("qwen2.5-7b-l14-32k")
    flash = get_method("flash").prepare(w, target).run
    mine = get_method(method).prepare(w, target).run
    res = kprof_compare(flash, mine)
    if res is None:  # --benchmark-disable: each callable ran once
        return
    speedup = res.speedup(res.methods[1].label)
    assert speedup.has_interval and speedup.low <= speedup.estimate <= speedup.high
    assert speedup.estimate > 1, "kprof's own decode kernels beat Flash SDPA at 32K on the H200"
    info = kprof_compare.benchmark.extra_info
    assert info["kprof_speedup"] == speedup.estimate
