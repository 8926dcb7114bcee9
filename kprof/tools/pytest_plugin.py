"""pytest plugin (entry point ``pytest11``): the ``kprof_benchmark`` and ``kprof_compare`` fixtures.

Both time with the kprof harness and protocol (CUDA events, eviction, balanced rounds; the
host clock without CUDA), exactly as ``kprof.time`` and ``kprof.compare`` do, and write kprof's
statistics into pytest-benchmark's JSON under ``extra_info``. pytest-benchmark's own columns
come from its public ``pedantic`` API: the host clock around one call and a device sync, so
``--benchmark-compare-fail`` still works, coarsely. ``--benchmark-disable`` runs each callable
once and times nothing::

    def test_decode(kprof_compare):
        res = kprof_compare(flash_decode, my_decode, reference=dense_fp64)
        assert res.speedup("my_decode").low > 1.0   # only in a benchmark run, never a unit test
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pytest


def _synchronized(fn: Callable[[], object]) -> Callable[[], object]:
    """``fn`` followed by a device sync, so a host clock around it sees the GPU work."""
    import torch

    if not torch.cuda.is_available():
        return fn

    def call():
        out = fn()
        torch.cuda.synchronize()
        return out

    return call


def _interval_info(prefix: str, iv) -> dict:
    return {prefix: iv.estimate, f"{prefix}_low": iv.low, f"{prefix}_high": iv.high}


HOST_ROUNDS = 100  # at most this many host-timed calls for pytest-benchmark's own columns


def _host_timing(bench, fn: Callable[[], object], rounds: int) -> None:
    """pytest-benchmark's own statistics of ``fn``: synchronized calls on its clock, one per kprof
    observation up to :data:`HOST_ROUNDS`."""
    bench.extra_info["kprof_note"] = ("pytest-benchmark's columns: host clock around one synchronized call; "
                                      "kprof_*: the kprof protocol (device clock, eviction, balanced rounds)")
    bench.pedantic(_synchronized(fn), rounds=min(rounds, HOST_ROUNDS), warmup_rounds=1, iterations=1)


@dataclass
class KprofBenchmark:
    """``kprof_benchmark(fn, **protocol)``: one callable under the kprof protocol."""

    benchmark: object  # pytest-benchmark's BenchmarkFixture

    def __call__(self, fn: Callable[[], object], **protocol):
        """Time ``fn`` (zero-argument); returns its kprof Summary, or None under --benchmark-disable.
        ``protocol``: ``rounds``, ``observations``, ``warmup_pairs`` (``warmup`` is accepted for it),
        ``evict_mib``, ``graph``, ``host_bound``, ``device``."""
        bench = self.benchmark
        if "warmup" in protocol:
            protocol["warmup_pairs"] = protocol.pop("warmup")
        if bench.disabled:
            bench.pedantic(fn)
            return None
        from kprof.api import time

        summary = time(fn, **protocol)
        bench.extra_info.update({"kprof_rounds": len(summary.round_summaries_us),
                                 "kprof_observations": summary.observations,
                                 **_interval_info("kprof_median_us", summary.median_us)})
        _host_timing(bench, fn, summary.observations)
        return summary


@dataclass
class KprofCompare:
    """``kprof_compare(baseline, candidate, **options)``: two callables interleaved in one run."""

    benchmark: object

    def __call__(self, baseline: Callable[..., object], candidate: Callable[..., object], **options):
        """Time ``candidate`` against ``baseline`` with :func:`kprof.compare` (same options: ``inputs``,
        ``reference``, protocol); returns the Result, or None under --benchmark-disable, where each
        callable runs once. pytest-benchmark's own columns time the candidate."""
        bench = self.benchmark
        inputs = options.get("inputs") or {}
        if bench.disabled:  # no timing, but a wrong candidate still fails the test
            from kprof.api import check_output, expected_output

            expected = expected_output(options.get("reference"), options.get("inputs"))
            for fn in (baseline, candidate):
                out = bench.pedantic(fn, kwargs=dict(inputs)) if fn is candidate else fn(**inputs)
                v = check_output(getattr(fn, "__name__", "callable"), out, expected, options.get("tolerance"))
                if not v.passed:
                    raise AssertionError(f"{getattr(fn, '__name__', 'callable')}: output differs from the reference "
                                         f"(relative error {v.rel_error:.1e} > tolerance {v.tolerance:.1e})")
            return None
        from kprof.api import compare

        res = compare([candidate], baseline, **options)
        base, cand = (m.label for m in res.methods)
        bench.extra_info.update({
            "kprof_baseline": base, "kprof_candidate": cand,
            **_interval_info("kprof_speedup", res.speedup(cand)),
            **_interval_info("kprof_baseline_median_us", res.summaries[base].median_us),
            **_interval_info("kprof_candidate_median_us", res.summaries[cand].median_us),
        })
        _host_timing(bench, lambda: candidate(**inputs), res.summaries[cand].observations)
        return res


@pytest.fixture
def kprof_benchmark(benchmark) -> KprofBenchmark:
    """Time one callable with the kprof protocol; its statistics go to pytest-benchmark's JSON."""
    return KprofBenchmark(benchmark)


@pytest.fixture
def kprof_compare(benchmark) -> KprofCompare:
    """Time a candidate against a baseline, interleaved; the speedup interval goes to pytest-benchmark's JSON."""
    return KprofCompare(benchmark)
