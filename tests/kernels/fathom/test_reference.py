"""Fathom reference: prefix exactness, the Appendix A worked example, water-filling, byte accounting."""

import numpy as np
import pytest
import torch

from kprof.kernels.fathom.reference import (
    approximate_scores,
    depths_at,
    dequantize_prefix,
    importance,
    pack_planes,
    quantize,
    scan_bits,
    unpack_planes,
    water_fill,
)

# Appendix A: six keys, four channels, two query heads sharing the KV head
K = torch.tensor([[1.8, 0.4, -0.2, 0.05], [-1.1, 0.9, 0.3, -0.02], [0.3, -1.2, 0.1, 0.04],
                  [1.2, 0.7, 0.4, 0.01], [-0.6, -0.3, -0.5, 0.03], [0.9, 1.1, -0.3, -0.05]], dtype=torch.float64)
Q = torch.tensor([[3.0, 1.0, 2.0, 0.1], [1.0, 2.0, -1.0, 0.2]], dtype=torch.float64)  # heads A, B


def test_worked_example_importances_and_variances():
    var = K.var(dim=0)  # unbiased, as the example's 1.222, 0.755, 0.127, 0.001
    assert torch.allclose(var, torch.tensor([1.222, 0.755, 0.127, 0.001], dtype=torch.float64), atol=6e-4)
    g = importance(Q, var)
    assert torch.allclose(g[:3], torch.tensor([12.22, 3.77, 0.63], dtype=torch.float64), atol=0.01)
    assert g[3] < 1e-3


@pytest.mark.parametrize("budget, theta, depths", [(8, 0.079, [4, 3, 1, 0]), (6, 0.118, [3, 2, 1, 0])])
def test_worked_example_water_line(budget, theta, depths):
    g = importance(Q, K.var(dim=0))
    t, th = water_fill(g, budget, steps=30, lo=0.001, hi=10.0)
    assert t.tolist() == depths
    assert th == pytest.approx(theta, abs=0.0015)
    assert int(depths_at(g, th * 0.97).sum()) > budget, "just below the water line the budget overflows"


def test_worked_example_channel_two_codes_and_one_plane():
    codes, scales = quantize(K)
    assert codes[:, 2].tolist() == [4, 12, 9, 14, 0, 3]
    assert float(scales[2, 0]) == 0.5
    one = dequantize_prefix(codes, scales, torch.tensor([4, 4, 1, 4]))[:, 2]
    assert one.tolist() == [-0.25, 0.25, 0.25, 0.25, -0.25, -0.25]


def test_worked_example_approximate_scores_and_top2():
    codes, scales = quantize(K)
    planes = pack_planes(codes)
    s = approximate_scores(Q, planes, scales, torch.tensor([4, 3, 1, 0]), n=6)
    # the paper prints two decimals
    assert torch.allclose(s[1], torch.tensor([2.84, 0.24, -2.01, 2.49, -0.61, 3.36], dtype=torch.float64), atol=0.006)
    assert torch.allclose(s[0], torch.tensor([5.01, -1.79, 0.46, 4.96, -2.34, 3.59], dtype=torch.float64), atol=0.006)
    assert set(torch.topk(s[0], 2).indices.tolist()) == {0, 3}
    assert set(torch.topk(s[1], 2).indices.tolist()) == {5, 0}
    exact = Q @ K.T
    assert set(torch.topk(exact[1], 2).indices.tolist()) == {5, 0}


@pytest.mark.parametrize("t", [1, 2, 3, 4])
def test_prefix_is_the_t_bit_midrise_quantiser_bit_for_bit(t):
    g = torch.Generator().manual_seed(t)
    k = torch.randn(300, 16, generator=g, dtype=torch.float64) * torch.linspace(0.1, 3, 16, dtype=torch.float64)
    codes, scales = quantize(k)
    planes = pack_planes(codes)
    depths = torch.full((16,), t)
    from_planes = dequantize_prefix(planes, scales, depths, n=300)
    # independent t-bit mid-rise quantiser over [-a, a): cell width a / 2^(t-1)
    a = scales.to(torch.float64).T.repeat_interleave(64, 0)[:300]
    width = a / 2 ** (t - 1)
    c4 = torch.floor(k / (a / 8)).clamp(-8, 7)
    cell = torch.floor(c4 / 2 ** (4 - t))  # the t-bit signed cell index
    expected = (cell + 0.5) * width
    assert torch.equal(from_planes, expected)
    assert torch.equal(dequantize_prefix(codes, scales, depths), expected)


def test_planes_round_trip_and_layout_is_channel_major():
    g = torch.Generator().manual_seed(0)
    codes = torch.randint(0, 16, (200, 8), generator=g, dtype=torch.uint8)
    planes = pack_planes(codes)
    assert planes.shape == (8, 4, 4) and planes.dtype == torch.int64
    assert torch.equal(unpack_planes(planes, 200), codes.to(torch.int64))
    # bit i of plane p of block b is bit (3-p) of token 64b+i's code
    p = planes.numpy().view(np.uint64)
    assert (int(p[3, 0, 1]) >> 5) & 1 == (int(codes[64 + 5, 3]) >> 3) & 1
    assert planes[2, :2].is_contiguous() and planes[2, :2].numel() * 8 == 2 * 256 // 8  # t n/8 bytes


def test_zero_blocks_and_padding():
    k = torch.zeros(70, 3, dtype=torch.float64)
    k[65:, 1] = 1.0
    codes, scales = quantize(k)
    assert torch.all(codes[:, 0] == 8) and float(scales[0, 0]) == 0.0
    v = dequantize_prefix(codes, scales, torch.tensor([4, 4, 4]))
    assert torch.all(v[:, 0] == 0) and torch.allclose(v[65:, 1], torch.full((5,), 0.9375, dtype=torch.float64))


def test_water_filling_respects_budget_and_is_monotone():
    g = torch.rand(128, generator=torch.Generator().manual_seed(3), dtype=torch.float64) ** 4
    previous = -1
    for budget in range(0, 520, 8):
        t, _ = water_fill(g, budget)
        assert int(t.sum()) <= budget
        assert int(t.sum()) >= previous
        assert t.min() >= 0 and t.max() <= 4
        previous = int(t.sum())
    full, _ = water_fill(g, 10_000)
    assert torch.all(full == 4)


def test_byte_accounting_figures():
    d = 128
    assert scan_bits(torch.tensor([4] * 32 + [0] * (d - 32))) == 136
    assert scan_bits(torch.tensor([4] * 16 + [0] * (d - 16))) == 68
    assert scan_bits(torch.full((d,), 2)) == 288
    assert scan_bits(torch.full((d,), 4)) == 544
    assert scan_bits(torch.tensor([4, 3, 1, 0])) == 8 + 0.75
