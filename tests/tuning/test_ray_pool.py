"""The Ray backend on a local Ray instance: one actor per (fake) device, the driver writes the cache."""

import json

import pytest

from kprof.tuning.cache import load_tune_file
from kprof.tuning.search import tune_launch
from tests.tuning.test_search import _request

ray = pytest.importorskip("ray", reason="the Ray backend is optional: pip install 'kprof[ray]'")


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.mark.slow
def test_a_small_tune_on_a_local_ray_instance(local_ray, tiny, tmp_path):
    messages = []
    req = _request(tiny, tmp_path, strategy="exhaustive", max_configs=3, backend="ray", devices=("0", "1"))
    out = tune_launch(req, "combine", lambda launch, done, total, msg="": messages.append(msg))
    configs = [json.dumps(c.config, sort_keys=True) for c in out.file.candidates]
    assert out.measured_now == 3 and len(set(configs)) == 3
    assert all(c.status == "ok" for c in out.file.candidates)
    assert any("screening on 2 devices" in m for m in messages)
    saved = load_tune_file(out.path)  # written by the driver, atomically, and complete
    assert [json.dumps(c.config, sort_keys=True) for c in saved.candidates] == configs
    assert saved.finalists and saved.best is not None
