"""The split-softmax combine against softmax attention over all keys at once (fp64 on the CPU):
partials of random key ranges, some of them empty, combined over column blocks."""

import pytest
import torch
import triton
import triton.language as tl

from kprof.kernels.common.split_kv_combine import bound_combine, combine_head


def _ranges(rng, heads, splits, d, keys_per_split=6):
    """Random scores (log2 units) and values in ``splits`` key ranges per head, at least one of
    them empty and one not; their partials (m, l, acc) in fp32, and the fp64 softmax over all keys."""
    m = torch.full((heads, splits), float("-inf"))
    mass = torch.zeros(heads, splits)
    acc = torch.zeros(heads, splits, d)
    want = torch.empty(heads, d, dtype=torch.float64)
    for h in range(heads):
        counts = torch.randint(0, keys_per_split + 1, (splits,), generator=rng)
        counts[0], counts[-1] = 0, keys_per_split  # an empty range and a full one in every head
        counts = counts[torch.randperm(splits, generator=rng)]
        s = torch.randn(int(counts.sum()), generator=rng, dtype=torch.float64) * 4
        v = torch.randn(int(counts.sum()), d, generator=rng, dtype=torch.float64)
        p = torch.exp2(s - s.max())
        want[h] = (p[:, None] * v).sum(0) / p.sum()
        first = 0
        for j, c in enumerate(counts.tolist()):
            if c:
                sj, vj = s[first:first + c], v[first:first + c]
                pj = torch.exp2(sj - sj.max())
                m[h, j], mass[h, j], acc[h, j] = sj.max(), pj.sum(), (pj[:, None] * vj).sum(0)
            first += c
    return m, mass, acc, want


@pytest.mark.parametrize("d, block_d", [(32, 16), (32, 32), (64, 16), (32, 128)])
@pytest.mark.parametrize("splits", [5, 37])
@pytest.mark.parametrize("skip_empty", [0, 1])
def test_column_blocks_combine_to_the_softmax_over_all_keys(target, rng, d, block_d, splits, skip_empty):
    """Every column block of every head is written (poisoned output) and right; a BLOCK_D above d is d."""
    m, mass, acc, want = _ranges(rng, 3, splits, d)
    dev = target.device
    m, mass, acc = m.to(dev), mass.to(dev), acc.to(dev)
    out = torch.full((3, d), float("nan"), device=dev)
    bound_combine(m, mass, acc, out, splits, block_d, num_warps=2, skip_empty=skip_empty)()
    assert (out.cpu().double() - want).abs().max() < 1e-5


@pytest.mark.parametrize("skip_empty", [0, 1])
def test_skip_empty_reads_no_value_of_an_empty_range(target, rng, skip_empty):
    """NaN in the values of the empty ranges: with SKIP_EMPTY they are never read, without it they
    are (0 x NaN), so the flag really changes which bytes the combine reads."""
    m, mass, acc, want = _ranges(rng, 4, 9, 32)
    acc[m == float("-inf")] = float("nan")
    dev = target.device
    out = torch.full((4, 32), float("nan"), device=dev)
    bound_combine(m.to(dev), mass.to(dev), acc.to(dev), out, 9, 16, num_warps=2, skip_empty=skip_empty)()
    if skip_empty:
        assert (out.cpu().double() - want).abs().max() < 1e-5
    else:
        assert torch.isnan(out).all()


@triton.jit
def _combine_in_chunks(M, L, Acc, Out, num_splits, stride_mh, stride_ah, stride_as, stride_oh,
                       BLOCK_S: tl.constexpr, HEAD_D: tl.constexpr, CHUNK_S: tl.constexpr, SKIP_EMPTY: tl.constexpr):
    """``combine_head`` as a kernel inlines it (one program per head), split by split in chunks."""
    combine_head(M, L, Acc, Out, tl.program_id(0), num_splits, stride_mh, stride_ah, stride_as, stride_oh,
                 BLOCK_S, HEAD_D, CHUNK_S, SKIP_EMPTY=SKIP_EMPTY)


@pytest.mark.parametrize("splits, chunk", [(37, 4), (64, 32), (9, 16)])
@pytest.mark.parametrize("skip_empty", [0, 1])
def test_chunked_combine_reads_every_chunk(target, rng, splits, chunk, skip_empty):
    """The chunked form (santa's attend.REDUCE and the one-launch decodes inline it) over several
    chunks, the last one ragged, equals the softmax over all keys; with SKIP_EMPTY the empty
    ranges' values are NaN and never read."""
    m, mass, acc, want = _ranges(rng, 3, splits, 32)
    if skip_empty:
        acc[m == float("-inf")] = float("nan")
    dev = target.device
    m, mass, acc = m.to(dev), mass.to(dev), acc.to(dev)
    out = torch.full((3, 32), float("nan"), device=dev)
    _combine_in_chunks[(3,)](m, mass, acc, out, splits, m.stride(0), acc.stride(0), acc.stride(1), out.stride(0),
                             BLOCK_S=triton.next_power_of_2(splits), HEAD_D=32, CHUNK_S=chunk, SKIP_EMPTY=skip_empty)
    assert (out.cpu().double() - want).abs().max() < 1e-5


def test_column_blocks_that_do_not_divide_d_are_refused(target):
    z = torch.zeros(2, 3, device=target.device)
    with pytest.raises(ValueError, match="unwritten"):
        bound_combine(z, z, torch.zeros(2, 3, 96, device=target.device), torch.empty(2, 96, device=target.device),
                      3, 64, num_warps=2)
