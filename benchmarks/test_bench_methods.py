"""Example benchmarks of the shipped methods through ``kprof_compare``: outside ``tests/``, run on
a GPU with ``pytest benchmarks -m gpu --benchmark-autosave``; the kprof statistics are in each
benchmark's ``extra_info``. Their assertions are the claims the H200 results make."""

import pytest

from kprof.methods import get_method


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
