"""--strategy optuna: TPE proposals screened a round at a time, the default first, constraints
respected, nothing measured twice, a resumed tune teaching the sampler what the cache holds."""

import json

import pytest

from kprof.tuning.search import tune_launch
from tests.tuning.test_search import _request as search_request

pytest.importorskip("optuna", reason="optuna is in kprof[dev]; CI installs it")


def _request(tiny, tmp_path, **kw):
    return search_request(tiny, tmp_path, **{"strategy": "optuna", "rounds": 2, **kw,
                                             "paired": {"rounds": 10, "warmup_pairs": 0, "observations": 1,
                                                        "evict_mib": 1}})


@pytest.mark.slow
def test_optuna_screens_the_default_first_and_never_twice(tiny, tmp_path):
    messages = []
    out = tune_launch(_request(tiny, tmp_path), "combine", lambda launch, done, total, msg="": messages.append(msg))
    configs = [json.dumps(c.config, sort_keys=True) for c in out.file.candidates]
    assert out.measured_now == 3 and len(configs) == len(set(configs)) == 3
    assert out.file.candidates[0].config == out.file.default
    assert all(c.status in ("ok", "pruned") for c in out.file.candidates)
    assert all(len(c.round_medians_us) in (1, 2) for c in out.file.candidates)
    assert any(m.startswith("3/3 ") for m in messages)
    assert out.file.best is not None and out.file.finalists
    # resumed with a larger cap: the three cached ones teach the sampler and are not measured again
    again = tune_launch(_request(tiny, tmp_path, max_configs=1), "combine", lambda *a, **k: None)
    assert again.measured_now == 1 and len(again.file.candidates) == 4
    assert len({json.dumps(c.config, sort_keys=True) for c in again.file.candidates}) == 4


@pytest.mark.slow
def test_a_space_smaller_than_the_cap_ends_when_it_is_exhausted(tiny, tmp_path):
    from kprof.methods import get_method

    size = len(list(get_method("triton-dense").config_space()["combine"].candidates(tiny[1])))
    out = tune_launch(_request(tiny, tmp_path, max_configs=size + 10), "combine", lambda *a, **k: None)
    assert len(out.file.candidates) == size and out.left == 0


class _FakeWorker:
    """Round medians of 10 + A + B us (plus a little noise): bad configs are bad from round one."""

    def __init__(self):
        self.calls = 0

    def measure(self, cfg, rounds=None):
        import random

        from kprof.tuning.cache import CandidateRecord

        self.calls += 1
        median = 10.0 + cfg["A"] + cfg["B"] + random.Random(self.calls).random() * 0.01
        return CandidateRecord(cfg, "ok", median, [median], seconds=0.0)


def test_pruning_stops_bad_candidates_early_and_the_search_finds_the_fast_corner(tmp_path):
    from kprof.core.config_space import LaunchSpace, Param
    from kprof.tuning.cache import TuneFile, TuneKey
    from kprof.tuning.strategies.optuna import screen_with_optuna
    from kprof.workloads.workload import WorkloadShape

    space = LaunchSpace("main", (Param("A", tuple(range(8)), 4), Param("B", tuple(range(8)), 4)))
    shape = WorkloadShape(hq=4, hkv=2, n=64, d=16, dtype="fp32")
    tf = TuneFile(key=TuneKey("m", "main", "cpu", "b", None, None, "t", "tr", "s"), default=space.default())
    worker = _FakeWorker()
    measured, left = screen_with_optuna(tf, space, shape, worker, rounds=4, trials=40, budget_s=None, seed=0,
                                        save=lambda: None, progress=lambda *a: None)
    assert measured == 40 and left == 0 and tf.candidates[0].config == space.default()
    pruned = [c for c in tf.candidates if c.status == "pruned"]
    assert pruned and all(len(c.round_medians_us) < 4 for c in pruned)
    assert worker.calls < 40 * 4  # pruning saved rounds
    best = min(tf.ok(), key=lambda c: c.median_us)
    assert best.config["A"] + best.config["B"] <= 3  # TPE found the fast corner of 64 in 40 tries
