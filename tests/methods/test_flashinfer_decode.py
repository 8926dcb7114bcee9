"""The FlashInfer baseline: listed everywhere, refused in one line where it cannot run, and its
paged copy of K/V is exactly the workload's keys and values."""

import importlib.util
from types import SimpleNamespace

import pytest
import torch

from kprof.core.errors import ConfigError, MethodUnavailable
from kprof.methods import get_method, registered
from kprof.methods.flashinfer_decode import INSTALL, paged


def test_it_is_registered_with_a_page_option():
    assert "flashinfer" in registered()
    assert get_method("flashinfer:page=64").page == 64
    with pytest.raises(ConfigError, match="not a power of two"):
        get_method("flashinfer:page=12")
    with pytest.raises(ConfigError, match="page=N"):
        get_method("flashinfer:pages=4")


def test_without_flashinfer_it_says_how_to_install_it(make_workload, monkeypatch):
    w = make_workload(8, 2, 64, 16, dtype=torch.float16)
    gpu = SimpleNamespace(is_gpu=True, device=torch.device("cpu"))
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "flashinfer" else real(name, *a))
    with pytest.raises(MethodUnavailable) as err:
        get_method("flashinfer").check_available(w, gpu)
    assert str(err.value) == INSTALL and "pip install 'kprof[flashinfer]'" in INSTALL


def test_on_the_cpu_it_needs_a_gpu(make_workload, cpu_target):
    with pytest.raises(MethodUnavailable, match="needs a CUDA GPU"):
        get_method("flashinfer").prepare(make_workload(8, 2, 64, 16, dtype=torch.float16), cpu_target)


@pytest.mark.parametrize("n, page", [(64, 16), (70, 16), (5, 8), (33, 1)])
def test_pages_hold_every_key_in_order_and_zeros_after_the_last(n, page):
    g = torch.Generator().manual_seed(n)
    x = torch.randn(3, n, 8, generator=g)
    p = paged(x, page)
    pages = -(-n // page)
    assert p.shape == (pages, 3, page, 8) and p.is_contiguous()
    flat = p.permute(1, 0, 2, 3).reshape(3, pages * page, 8)
    assert torch.equal(flat[:, :n], x) and not flat[:, n:].any()
