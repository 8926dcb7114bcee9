"""A Measurement becomes a Result in one function: intervals, speedups, notes and the design."""

import numpy as np
import pytest

from kprof.measure.design import BalancedDesign
from kprof.measure.harness import Measurement
from kprof.results.summarise import RunContext, build_result, pair_speedup, summarise_row


def _measurement(base_us=50.0, cand_us=40.0, rounds=12, obs=20, seed=0, trend=0.0) -> Measurement:
    rng = np.random.default_rng(seed)
    design = BalancedDesign.williams(2)
    slope = np.exp(trend * np.arange(rounds))[:, None]  # a row slowing down round after round
    o = np.stack([base_us * np.exp(0.005 * rng.standard_normal((rounds, obs))),
                  cand_us * slope * np.exp(0.005 * rng.standard_normal((rounds, obs)))])
    return Measurement(["base", "cand"], o, design.orders(rounds), design.cycle, wall_s=1.5)


def _context() -> RunContext:
    return RunContext(environment={"execution": "cpu"}, workload={"name": "w"}, protocol={"observations": 20},
                      clock="host-clock", mode="test", phases_s={"preparation": 0.25})


def test_build_result_summarises_every_row_and_pair_once():
    m = _measurement()
    res = build_result("compare", m, [], _context(), 0.95, [(0, 1)], notes=["from the session"])
    assert list(res.summaries) == ["base", "cand"] and res.protocol["rounds"] == 12
    assert res.summaries["cand"].median_us.estimate == pytest.approx(40, rel=0.01)
    (sp,) = res.speedups
    assert (sp.candidate, sp.baseline) == ("cand", "base")
    assert sp.interval.low < 1.25 < sp.interval.high
    assert sp.interval.estimate == pair_speedup(m, 0, 1, 0.95).interval.estimate
    assert res.summaries["base"].median_us.estimate == summarise_row(m.observations[0], 0.95, m.table, 0, 2
                                                                     ).median_us.estimate
    assert res.notes[0] == "from the session" and res.design["kind"] == "williams"
    assert res.phases_s == {"preparation": 0.25, "timing": 1.5} and res.partial is None


def test_drift_is_noted_and_an_interrupted_run_is_partial():
    m = _measurement(trend=0.02)
    m.interrupted = True
    res = build_result("compare", m, [], _context(), 0.95, [(0, 1)])
    assert res.summaries["cand"].drift.flagged
    assert any(n.startswith("cand: ") and "stay in its intervals" in n for n in res.notes)
    assert res.partial == "stopped by Ctrl-C after 12 round(s)"


def test_a_bad_round_is_named_as_progress_and_plots_count_it():
    m = _measurement()
    m.observations[1, 9] *= 1.3  # the tenth round of cand: index 9 in the Result, "round 10" to a reader
    res = build_result("compare", m, [], _context(), 0.95, [(0, 1)])
    assert res.summaries["cand"].bad_rounds == [9]
    assert any(n.startswith("cand: round 10 of 12 left out of its intervals") for n in res.notes), res.notes


def test_a_note_names_a_dozen_rounds_at_most():
    from kprof.results.summarise import _round_numbers

    assert _round_numbers([0, 4]) == "1, 5"
    assert _round_numbers(list(range(1000))) == "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 and 988 more"
