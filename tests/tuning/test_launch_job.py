"""The steps every strategy shares: the screening order and the finalists' paired confirmation."""

import numpy as np
import pytest

from kprof.tuning.launch_job import finalize, screening_order
from kprof.tuning.search import TuneRequest


def test_the_order_starts_with_the_default_and_samples_only_when_asked_or_capped():
    space = [{"B": b} for b in range(1, 11)]
    assert screening_order(space, {"B": 3}, None, 0, sample=False) == [{"B": 3}] + [c for c in space if c != {"B": 3}]
    sampled = screening_order(space, {"B": 3}, None, 0, sample=True)
    assert sampled[0] == {"B": 3} and sorted(c["B"] for c in sampled) == list(range(1, 11)) and sampled != space
    capped = screening_order(space, {"B": 3}, 4, 0, sample=False)
    assert capped[0] == {"B": 3} and len(capped) == 4 and capped[1:] != [{"B": 1}, {"B": 2}, {"B": 4}]
    assert screening_order(space, {"B": 3}, 1, 0, sample=True) == [{"B": 3}]


class _FakeWorker:
    """Answers a finalist's paired run with simulated observations in the design's orders."""

    def __init__(self, speedups: dict, rounds: int = 20):
        self.speedups, self.rounds = speedups, rounds

    def paired(self, config, protocol):
        from kprof.measure.design import BalancedDesign

        rng = np.random.default_rng(len(str(config)))
        d = BalancedDesign.williams(2)
        base = 10 * np.exp(0.003 * rng.standard_normal((self.rounds, 50)))
        cand = 10 / self.speedups[config["X"]] * np.exp(0.003 * rng.standard_normal((self.rounds, 50)))
        return np.stack([base, cand]), d.orders(self.rounds), d.cycle


@pytest.mark.parametrize("speedups, rounds, chosen", [
    ({1: 1.01, 2: 0.99}, 20, {"X": 1}),  # 1% faster, resolved: replaces the default
    ({1: 1.0005, 2: 0.99}, 20, {"X": 0}),  # within noise: its interval reaches 1
    ({1: 1.2, 2: 1.1}, 4, {"X": 0}),  # no interval (two pair cycles): never replaces the default
])
def test_a_finalist_replaces_the_default_only_when_its_interval_lies_above_1(speedups, rounds, chosen):
    from kprof.tuning.cache import CandidateRecord, TuneFile, TuneKey

    key = TuneKey("m", "l", "cpu", "b", None, None, "t", "t", "s")
    tf = TuneFile(key=key, default={"X": 0}, candidates=[
        CandidateRecord({"X": 0}, "ok", 10.0, [10.0]), CandidateRecord({"X": 1}, "ok", 9.0, [9.0]),
        CandidateRecord({"X": 2}, "ok", 9.5, [9.5])])
    req = TuneRequest("m", "w", None, "cpu", finalists=2)
    notes = []
    finalize(tf, _FakeWorker(speedups, rounds), req, notes.append)
    assert tf.best == chosen
    assert len(tf.finalists) == 2 and all("speedup" in f for f in tf.finalists)
    if rounds >= 10:
        assert all(f["low"] is not None and f["cycles"] == rounds // 2 for f in tf.finalists)
        assert sum("x [" in n for n in notes) == 2
    else:
        assert all(f["low"] is None and "too few rounds" in f["note"] for f in tf.finalists)


def test_finalists_0_keeps_the_choice_an_earlier_confirmation_made():
    """``--finalists 0`` asks for no confirmation: it once reset a confirmed choice to the default."""
    from kprof.tuning.cache import CandidateRecord, TuneFile, TuneKey

    key = TuneKey("m", "l", "cpu", "b", None, None, "t", "t", "s")
    tf = TuneFile(key=key, default={"X": 0}, candidates=[CandidateRecord({"X": 0}, "ok", 10.0, [10.0]),
                                                        CandidateRecord({"X": 1}, "ok", 9.0, [9.0])])
    finalize(tf, _FakeWorker({1: 1.01}), TuneRequest("m", "w", None, "cpu", finalists=1), lambda m: None)
    assert tf.best == {"X": 1} and len(tf.finalists) == 1
    notes = []
    finalize(tf, _FakeWorker({1: 1.01}), TuneRequest("m", "w", None, "cpu", finalists=0), notes.append)
    assert tf.best == {"X": 1} and len(tf.finalists) == 1, "the earlier confirmation stands"
    assert notes == ["l: --finalists 0: no finalist confirmed now; the cache keeps its choice (X=1)"]
