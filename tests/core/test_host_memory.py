"""Pinned host buffers: every kind holds what was copied in, and the GPU reads it back exactly."""

import gc

import pytest
import torch
import triton
import triton.language as tl

from kprof.core.host_memory import PAGE_KINDS, pinned_empty, pinned_like


def test_default_copy_keeps_values_shape_and_dtype():
    x = torch.randn(3, 5, 7).to(torch.float16)
    y = pinned_like(x)
    assert y.device.type == "cpu" and y.dtype == x.dtype and torch.equal(y, x)
    assert y.data_ptr() != x.data_ptr(), "a copy, not a view"
    assert pinned_empty(7, torch.int64).shape == (7,)


def test_unknown_page_kind_is_rejected_with_the_choices():
    with pytest.raises(ValueError, match="default, huge, wc"):
        pinned_empty((2, 2), torch.float32, pages="giant")


@triton.jit
def _copy(Src, Dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Dst + offs, tl.load(Src + offs, mask=offs < n), mask=offs < n)


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
    # a kernel dereferencing the host pointer itself, as Fathom's scan and fetch do
    flat, out = view.reshape(-1), torch.full((view.numel(),), float("nan"), device="cuda")
    _copy[(triton.cdiv(flat.numel(), 1024),)](flat, out, flat.numel(), BLOCK=1024)
    assert torch.equal(out.view_as(view), 2 * x[17:])
