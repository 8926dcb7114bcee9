"""pytest plugin (entry point ``pytest11``): the ``kprof_benchmark`` and ``kprof_compare`` fixtures.

Both time with the kprof harness and protocol (CUDA events, eviction, balanced rounds; the
host clock without CUDA), exactly as ``kprof.time`` and ``kprof.compare`` do, and write kprof's
statistics into pytest-benchmark's JSON under ``extra_info``. pytest-benchmark's own columns
come from its public ``pedantic`` API: the host clock around one call and a device sync, so
``--benchmark-compare-fail`` still works, coarsely. ``--benchmark-disable`` runs each callable
once and times nothing::

    def test_decode(kprof_compare):
        res = kprof_compare(flash_decode, my_decode, reference=dense_fp64, max_regression="3%")

``max_regression`` fails the test when the candidate is SLOWER than the baseline by more than
that, judged from the run's own paired interval (the gate's same-run rule), and when that cannot
be ruled out: no interval, or an estimate beyond the threshold that the interval does not resolve.
A row that failed validation fails the test, timed or not. With
``pytest --kprof-results DIR`` each ``kprof_compare`` also saves its Result as ``DIR/<test>.json``,
which ``kprof gate --baseline HISTORY --candidate DIR/<test>.json`` judges across runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest


def pytest_addoption(parser) -> None:
    parser.addoption("--kprof-results", default=None, metavar="DIR",
                     help="kprof: save each kprof_compare Result as DIR/<test>.json, for kprof gate and kprof report")


def _threshold(text) -> float:
    from kprof.commands.percent import parse_percent
    from kprof.core.errors import KprofError

    try:
        return parse_percent(text, "'3%' or 0.03")
    except KprofError as exc:
        problem = str(exc)  # failed outside the handler: pytest would print the chain
    pytest.fail(f"kprof_compare: max_regression={text!r}: {problem}", pytrace=False)


_SAVED = pytest.StashKey[dict]()  # this session's --kprof-results file names, and the test that wrote each


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


def _check(fixture: str, function: str, *args, **kwargs) -> None:
    """Fail the test in one line when the fixture's arguments are wrong, timed or not
    (--benchmark-disable), rather than with a TypeError from inside kprof."""
    from kprof.api import check_arguments
    from kprof.core.errors import KprofError

    for fn in [a for a in args if not isinstance(a, list)] + [x for a in args if isinstance(a, list) for x in a]:
        if not callable(fn) and not (function == "compare" and isinstance(fn, str)):  # compare takes method specs
            pytest.fail(f"{fixture}: {fn!r:.40} is a {type(fn).__name__}, not a callable: pass the function itself",
                        pytrace=False)
    try:
        check_arguments(function, *args, **kwargs)
    except KprofError as exc:
        pytest.fail(f"{fixture}: {exc}", pytrace=False)


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
        _check("kprof_benchmark", "time", fn, **protocol)
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
    """``kprof_compare(baseline, candidate, max_regression=None, **options)``: two callables
    interleaved in one run."""

    benchmark: object
    results_dir: str | None = None
    test_name: str = "test"
    node_id: str = "test"
    saved: dict | None = None  # file name -> node id, across the session: two tests never share a file
    used: bool = False

    def __call__(self, baseline: Callable[..., object], candidate: Callable[..., object], max_regression=None,
                 **options):
        """Time ``candidate`` against ``baseline`` with :func:`kprof.compare` (same options: ``inputs``,
        ``reference``, protocol); returns the Result, or None under --benchmark-disable, where each
        callable runs once. pytest-benchmark's own columns time the candidate. ``max_regression``
        ("3%"): see the module's docstring."""
        if self.used:  # pytest-benchmark's fixture times once per test
            pytest.fail("kprof_compare: one comparison per test: parametrize the test for more", pytrace=False)
        self.used = True
        threshold = None if max_regression is None else _threshold(max_regression)
        _check("kprof_compare", "compare", [candidate], baseline, **options)
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
        if self.results_dir:
            res.save(Path(self.results_dir) / self._file_name(), force=True)  # each test's latest run
        failed = [m.label for m in res.methods if not m.validation.passed]
        if failed:  # strict=False timed it; a test must still not pass on a wrong kernel
            pytest.fail(f"kprof_compare: {', '.join(failed)} failed validation against the reference", pytrace=False)
        if threshold is not None:
            from kprof.results.gate import same_run_gate

            row = same_run_gate(res, [(base, cand)], threshold).rows[0]
            bench.extra_info["kprof_verdict"] = row.verdict
            if row.verdict == "SLOWER":
                pytest.fail(f"{cand} is SLOWER than {base}: {row.ratio.text(4, 'x')} of its time (threshold "
                            f"{100 * threshold:g}%)", pytrace=False)
            if not row.ratio.has_interval:
                pytest.fail(f"kprof_compare: max_regression cannot be judged: {row.ratio.text(4, 'x')}; pass more "
                            "rounds, or precision=", pytrace=False)
            if row.verdict == "UNCERTAIN" and row.ratio.estimate > 1 + threshold:
                pytest.fail(f"{cand} may be SLOWER than {base}: {row.ratio.text(4, 'x')} of its time, above the "
                            f"{100 * threshold:g}% threshold but not resolved; pass more rounds, or precision=",
                            pytrace=False)
        return res

    def _file_name(self) -> str:
        """``<test>.json``; a second test whose name gives the same file gets its node id's hash."""
        import hashlib

        name = f"{re.sub(r'[^A-Za-z0-9._-]+', '_', self.test_name)}.json"
        saved = self.saved if self.saved is not None else {}
        if saved.get(name, self.node_id) != self.node_id:
            name = f"{name[:-5]}-{hashlib.sha1(self.node_id.encode()).hexdigest()[:8]}.json"
        saved[name] = self.node_id
        return name


@pytest.fixture
def kprof_benchmark(benchmark) -> KprofBenchmark:
    """Time one callable with the kprof protocol; its statistics go to pytest-benchmark's JSON."""
    return KprofBenchmark(benchmark)


@pytest.fixture
def kprof_compare(benchmark, request) -> KprofCompare:
    """Time a candidate against a baseline, interleaved; the speedup interval goes to pytest-benchmark's
    JSON, the Result to ``--kprof-results DIR``, a SLOWER verdict under ``max_regression`` fails the test."""
    return KprofCompare(benchmark, request.config.getoption("--kprof-results"), request.node.name,
                        request.node.nodeid, request.config.stash.setdefault(_SAVED, {}))
