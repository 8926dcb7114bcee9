"""Benchmarks need a GPU: each is marked ``gpu`` and skipped without one."""

import pytest
import torch

from kprof.core.target import resolve_target


def pytest_collection_modifyitems(config, items):
    if not torch.cuda.is_available():
        skip = pytest.mark.skip(reason="a benchmark: needs a CUDA device")
        for item in items:
            item.add_marker(skip)


@pytest.fixture
def target():
    return resolve_target("auto")
