"""The radix select behind SELECT=2 against a plain sort, including heavy ties on the score word."""

import pytest
import torch
import triton
import triton.language as tl

from kprof.kernels.santa.radix_select import select_top


@triton.jit
def _select_rows(Keys, Out, k, ROWS: tl.constexpr, COLS: tl.constexpr, DIGIT: tl.constexpr):
    offs = tl.arange(0, ROWS)[:, None] * COLS + tl.arange(0, COLS)[None, :]
    keep = select_top(tl.load(Keys + offs), k, tl.arange(0, ROWS) < ROWS, DIGIT)
    tl.store(Out + offs, keep.to(tl.int8))


def _keys(hi: torch.Tensor) -> torch.Tensor:
    """int64 sort keys from int32 high words, low word = column (unique within a row)."""
    cols = torch.arange(hi.shape[1], dtype=torch.int64).expand_as(hi)
    return (hi.to(torch.int64) << 32) | cols


def _run(keys: torch.Tensor, k: int, device, digit: int = 2) -> torch.Tensor:
    out = torch.full(keys.shape, 7, dtype=torch.int8, device=device)  # poisoned
    _select_rows[(1,)](keys.to(device), out, k, ROWS=keys.shape[0], COLS=keys.shape[1], DIGIT=digit)
    return out.cpu().bool()


def _expected(keys: torch.Tensor, k: int) -> torch.Tensor:
    want = torch.zeros(keys.shape, dtype=torch.bool)
    want.scatter_(1, torch.sort(keys, dim=1, descending=True).indices[:, :k], True)
    return want


@pytest.mark.parametrize("digit", [1, 2, 4])
@pytest.mark.parametrize("k", [1, 5, 32, 63])
def test_random_scores_of_both_signs(target, rng, k, digit):
    hi = torch.randint(-(2**31), 2**31 - 1, (4, 64), generator=rng, dtype=torch.int64).to(torch.int32)
    hi[0, :3] = torch.tensor([-(2**31), 2**31 - 1, 0], dtype=torch.int32)  # the extremes
    keys = _keys(hi)
    assert torch.equal(_run(keys, k, target.device, digit), _expected(keys, k))


@pytest.mark.parametrize("digit", [1, 4])
@pytest.mark.parametrize("k", [3, 17])
def test_ties_on_the_score_word_break_by_index(target, rng, k, digit):
    hi = torch.randint(-3, 3, (4, 32), generator=rng, dtype=torch.int32)  # few distinct scores
    hi[1] = 5  # a row that is one big tie
    keys = _keys(hi)
    got = _run(keys, k, target.device, digit)
    assert torch.equal(got, _expected(keys, k))
    assert torch.all(got.sum(dim=1) == k)


def test_low_words_with_the_top_bit_set_order_as_unsigned(target):
    """Ties on the high word are broken by the full unsigned low word (bit 31 included)."""
    keys = torch.tensor([[0x80000000, 0, 5 << 32, -(1 << 32)]], dtype=torch.int64)
    assert _run(keys, 2, target.device).tolist() == [[True, False, True, False]]

