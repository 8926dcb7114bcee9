"""A job that records what a strategy asks of it, so each strategy's choice is tested alone."""

import pytest

from kprof.core.config_space import LaunchSpace, Param
from kprof.tuning.cache import TuneFile, TuneKey
from kprof.tuning.launch_job import LaunchJob
from kprof.tuning.search import TuneRequest
from kprof.workloads.workload import WorkloadShape

SHAPE = WorkloadShape(hq=4, hkv=2, n=64, d=16, dtype="fp32")
SPACE = LaunchSpace("main", (Param("A", tuple(range(6)), 3), Param("B", (1, 2, 4), 2)))


class RecordingJob(LaunchJob):
    def screen(self, order, refine=None):
        self.screened = (order, refine)
        return "outcome"


@pytest.fixture
def job(tmp_path):
    def make(**request):
        req = TuneRequest("m", "w", SHAPE, "cpu", out_dir=tmp_path, **request)
        tf = TuneFile(key=TuneKey("m", "main", "cpu", "b", None, None, "t", "tr", "s"), default=SPACE.default())
        return RecordingJob(req, "main", SPACE, tf, tmp_path / "f.json", lambda *a, **k: None)

    return make
