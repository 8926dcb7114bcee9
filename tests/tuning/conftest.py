"""A tiny workload file every tuning test tunes on (a worker process loads it by path)."""

import pytest

from kprof.workloads import save


@pytest.fixture
def tiny(tmp_path, make_workload):
    """``(path, shape)`` of a 4-head, 64-token workload with sharpened attention."""
    path = tmp_path / "tiny.safetensors"
    w = make_workload(4, 2, 64, 16, seed=1, scale=2.0)
    save(w, path)
    return str(path), w.shape
