"""Pinned host buffers: every kind holds what was copied in, and the GPU reads it back exactly."""

import gc

import pytest
import torch

from kprof.host_memory import PAGE_KINDS, pinned_empty, pinned_like


def test_default_copy_keeps_values_shape_and_dtype():
    x = torch.randn(3, 5, 7).to(torch.float16)
    y = pinned_like(x)
    assert y.device.type == "cpu" and y.dtype == x.dtype and torch.equal(y, x)
    assert y.data_ptr() != x.data_ptr(), "a copy, not a view"
    assert pinned_empty(7, torch.int64).shape == (7,)


def test_unknown_page_kind_is_rejected_with_the_choices():
    with pytest.raises(ValueError, match="default, huge, wc"):
        pinned_empty((2, 2), torch.float32, pages="giant")


@pytest.mark.gpu
@pytest.mark.parametrize("pages", PAGE_KINDS)
def test_each_kind_is_pinned_and_read_exactly_by_the_gpu(pages):
    """Odd sizes (not whole pages); a view outliving the tensor keeps the memory registered."""
    x = torch.randn(1001, 33, device="cuda")
    y = pinned_like(x, pages)
    assert y.is_pinned()
    view = y[17:]
    del y
    gc.collect()
    assert torch.equal(view.to("cuda", non_blocking=True), x[17:])
    view.mul_(2)  # host writes land where the GPU reads
    assert torch.equal(view.cuda(), 2 * x[17:])
