"""Screening over several devices (interpreter worker processes stand in for GPUs on the CPU)."""

import json

import pytest

from kprof.core.errors import KprofError
from kprof.tuning.cache import load_tune_file
from kprof.tuning.pool import WorkerPool
from kprof.tuning.search import tune_launch
from tests.tuning.test_search import PLUGIN, _request


@pytest.mark.slow
def test_two_workers_screen_every_candidate_once_into_one_cache(tiny, tmp_path):
    messages = []
    out = tune_launch(_request(tiny, tmp_path, strategy="exhaustive", max_configs=4, devices=("0", "1")), "combine",
                      lambda launch, done, total, msg="": messages.append(msg))
    configs = [json.dumps(c.config, sort_keys=True) for c in out.file.candidates]
    assert out.measured_now == 4 and len(configs) == len(set(configs)) == 4
    assert all(c.status == "ok" for c in out.file.candidates)
    assert any("screening on 2 devices" in m and "confirmed on device 0 alone" in m for m in messages)
    again = tune_launch(_request(tiny, tmp_path, strategy="exhaustive", max_configs=4, devices=("0", "1")), "combine",
                        lambda *a, **k: None)
    assert again.measured_now == 0, "the merged cache is complete: a rerun measures nothing"
    assert [json.dumps(c.config, sort_keys=True) for c in load_tune_file(again.path).candidates] == configs


@pytest.mark.slow
def test_a_crash_restarts_only_that_worker_and_the_tune_goes_on(tiny, tmp_path, monkeypatch):
    (tmp_path / "faulty_plugin.py").write_text(PLUGIN)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("KPROF_PLUGINS", "faulty_plugin")
    monkeypatch.syspath_prepend(str(tmp_path))
    req = _request(tiny, tmp_path, method="test-faulty", strategy="exhaustive", max_configs=None, timeout_s=8,
                   devices=("0", "1"))
    out = tune_launch(req, "main", lambda *a, **k: None)
    status = {c.config["MODE"]: (c.status, c.reason) for c in out.file.candidates}
    assert sorted(status) == [0, 1, 2, 3, 4], "every candidate recorded once"
    assert status[3][0] == "failed" and "died" in status[3][1]
    assert status[4][0] == "failed" and "timeout" in status[4][1]
    assert status[0][0] == "ok" and out.file.best == {"MODE": 0}


def test_gpus_of_different_models_are_refused(tiny, tmp_path, monkeypatch):
    from kprof.tuning import worker

    names = iter(["NVIDIA H200", "NVIDIA H100 80GB HBM3"])
    monkeypatch.setattr(worker.CandidateWorker, "start", lambda self: setattr(self, "device_name", next(names)))
    from kprof.tuning.worker import WorkerSpec

    pool = WorkerPool(WorkerSpec("triton-dense", tiny[0], "cpu", "combine", 1, 1, 0, 1), ("0", "1"), 10)
    with pytest.raises(KprofError, match="mixes GPU models"):
        pool.start()


def test_tune_cli_takes_devices_and_says_what_is_wrong_with_them(tiny, tmp_path):
    from click.testing import CliRunner

    from kprof.cli.main import cli

    args = ["tune", "--method", "triton-dense", "--launch", "combine", "--workload", tiny[0], "--device", "cpu",
            "--max-configs", "2", "--rounds", "1", "--observations", "1", "--finalists", "0",
            "--out-dir", str(tmp_path / "tuned")]
    r = CliRunner().invoke(cli, [*args, "--devices", "0,0"])
    assert r.exit_code == 2 and "distinct" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(cli, [*args, "--devices", "0,1"])
    assert r.exit_code == 0, r.output
    assert "screening on 2 devices" in r.output


class FakeWorker:
    """Stands in for a CandidateWorker: measures in a few milliseconds, or fails to (re)start."""

    def __init__(self, name, broken=False):
        self.name, self.broken, self.seen, self.closed = name, broken, [], False

    def measure(self, cfg, rounds=None):
        import time

        from kprof.tuning.cache import CandidateRecord

        if self.broken:
            raise RuntimeError("tuning worker did not start in time")
        time.sleep(0.01)
        self.seen.append(cfg["X"])
        return CandidateRecord(cfg, "ok", 1.0, [1.0])

    def close(self):
        self.closed = True


def _pool(*workers):
    from kprof.tuning.worker import WorkerSpec

    pool = WorkerPool(WorkerSpec("triton-dense", "w", "cpu", "combine", 1, 1, 0, 1), ("0", "1"), 10, pin=False)
    pool.workers = list(workers)
    return pool


def test_measure_spreads_work_over_every_worker_and_hands_each_result_over_once():
    a, b = FakeWorker("a"), FakeWorker("b")
    got = []
    _pool(a, b).measure([{"X": i} for i in range(20)], lambda rec: got.append(rec.config["X"]))
    assert sorted(got) == list(range(20)) and a.seen and b.seen
    assert sorted(a.seen + b.seen) == list(range(20))


def test_a_worker_that_cannot_restart_is_retired_and_the_rest_finish():
    good = FakeWorker("good")
    got = []
    _pool(good, FakeWorker("broken", broken=True)).measure([{"X": i} for i in range(5)],
                                                           lambda rec: got.append(rec.config["X"]))
    assert sorted(got) == list(range(5))
    with pytest.raises(RuntimeError, match="did not start"):
        _pool(FakeWorker("x", True), FakeWorker("y", True)).measure([{"X": 1}], lambda rec: None)


def test_a_failing_callback_or_budget_stops_the_pool_without_hanging():
    seen = []

    def stop_at_third(rec):
        seen.append(rec)
        if len(seen) == 3:
            raise KeyboardInterrupt

    a, b = FakeWorker("a"), FakeWorker("b")
    with pytest.raises(KeyboardInterrupt):
        _pool(a, b).measure([{"X": i} for i in range(50)], stop_at_third)
    assert len(a.seen) + len(b.seen) < 50, "nothing new is handed out after the failure"

    def broken_budget():
        raise ValueError("budget clock broke")

    with pytest.raises(ValueError, match="budget clock"):
        _pool(FakeWorker("a"), FakeWorker("b")).measure([{"X": 1}], lambda rec: None, more=broken_budget)
