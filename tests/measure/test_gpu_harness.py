"""The harness on a real GPU with tiny counts (the full protocol runs in profiles/suites/h200.toml)."""

import numpy as np
import pytest
import torch

from kprof.commands.compare import run_compare
from kprof.commands.session import MeasurementSession
from kprof.measure.eviction import EvictionBuffer

pytestmark = pytest.mark.gpu

TINY = {"rounds": 3, "warmup_pairs": 5, "observations": 20}


def test_eviction_buffer_is_at_least_8x_l2():
    dev = torch.device("cuda")
    buf = EvictionBuffer(dev, mib=1)
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size
    assert buf.nbytes >= 8 * l2 - 4


def test_compare_on_gpu_records_catalog_and_positive_event_times():
    session = MeasurementSession.open("cuda", "qwen2.5-7b-l14-8k", TINY)
    result = run_compare(session, "flash", ["triton-dense"])
    by_label = {m.label: m for m in result.methods}
    dense = by_label["triton-dense"].catalog
    assert dense.launches_per_call == 2 and dense.matches_expected, dense
    assert by_label["flash"].catalog.launches_per_call >= 1
    assert result.clock == "cuda-events"
    for obs in result.observations.values():
        assert obs.shape == (4, 20) and np.all(obs > 0)  # 3 rounds: two whole 2-round cycles
    assert all(m.validation.passed for m in result.methods)


def test_graph_and_host_bound_modes_run():
    for extra in ({"graph": True}, {"host_bound": True}):
        session = MeasurementSession.open("cuda", "qwen2.5-7b-l14-8k", TINY | extra)
        result = run_compare(session, "flash", ["triton-dense"])
        assert result.mode == session.protocol.mode
        assert ("host-bound" in result.mode) == bool(extra.get("host_bound"))
