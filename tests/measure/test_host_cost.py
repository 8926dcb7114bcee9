"""host_us_per_call: the host's issue time per call, measured in bursts without synchronising."""

import time

import pytest
import torch

from kprof.measure.host_cost import host_us_per_call
from kprof.results.rows import rows
from kprof.results.tables import compare_table


def test_off_a_gpu_there_is_no_separate_host_time():
    assert host_us_per_call(lambda: None, torch.device("cpu")) is None


def test_a_call_that_keeps_the_host_busy_is_counted(monkeypatch):
    """On a (pretended) GPU with synchronisation stubbed, 2 ms of host work per call shows."""
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    calls = []

    def slow():
        calls.append(1)
        t = time.perf_counter()
        while time.perf_counter() - t < 0.002:
            pass

    us = host_us_per_call(slow, torch.device("cuda"), calls=3, bursts=3)
    assert len(calls) == 9 and us >= 2000


def test_the_table_shows_host_time_only_where_measured(real_result):
    import copy

    from rich.console import Console

    def render(res):
        console = Console(width=250, record=True)
        console.print(compare_table(res))
        return console.export_text()

    assert "host us" not in render(real_result)  # CPU interpreter: nothing to separate
    res = copy.deepcopy(real_result)
    res.methods[0].host_us = 123.456
    text = render(res)
    assert "host us" in text and "123.46" in text and "host-bound" in text
    assert rows(res)[0]["host_us"] == pytest.approx(123.456)
