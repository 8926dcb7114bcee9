"""Fathom's selection launches against torch: the chunk-pruned top-k and the union of winners."""

import pytest
import torch
import triton

from kprof.kernels.fathom.scan import CHUNK
from kprof.kernels.fathom.selection import fathom_topk, fathom_union
from kprof.kernels.fathom.step import RECENT_TOKENS, SINK_TOKENS


def _topk(scores: torch.Tensor, k: int, device, **kw) -> torch.Tensor:
    return _run_topk(scores, k, device, **kw)[0]


def _run_topk(scores: torch.Tensor, k: int, device, tile: int = 4096, num_warps: int = 4, radix_bits: int = 0,
              search: int = 0, wait: bool = False, scanned: list[int] | None = None, group: int = 1,
              max_polls: int = 1000) -> tuple[torch.Tensor, int]:
    """Run the Triton top-k over ``scores [H, n]`` the way the decode step lays its buffers out:
    the winners and the count of waits that gave up. ``wait``: each head first waits for
    ``scanned[h // group]`` to reach 5 tiles."""
    hq, n = scores.shape
    n_chunks = triton.cdiv(n, CHUNK)
    padded = torch.full((hq, n_chunks * CHUNK), float("-inf"))
    padded[:, :n] = scores
    chunk_max = padded.view(hq, n_chunks, CHUNK).amax(dim=2)
    padded, chunk_max = padded.to(device), chunk_max.to(device)
    sel = torch.full((hq, k), -7, dtype=torch.int32, device=device)
    out = torch.full((hq, k), -7, dtype=torch.int64, device=device)  # poisoned: every slot must be written
    block_c, block_t = triton.next_power_of_2(n_chunks), triton.next_power_of_2(k * CHUNK)
    counts = torch.tensor(scanned if scanned is not None else [5] * hq, dtype=torch.int32, device=device)
    expired = torch.zeros(1, dtype=torch.int32, device=device)
    unused = torch.empty(1, dtype=torch.int64, device=device)  # the union's buffers (UNION off)
    fathom_topk[(hq,)](padded, chunk_max, sel, out, counts, expired, unused, unused, unused, unused, counts, n,
                       n_chunks, k, padded.stride(0), chunk_max.stride(0), out.stride(0), 5, max_polls, 0, 0,
                       CHUNK=CHUNK, SINK=SINK_TOKENS, RECENT=RECENT_TOKENS, BLOCK_C=block_c, BLOCK_T=block_t,
                       TILE=min(tile, block_c, block_t), RADIX_BITS=radix_bits, SEARCH=search, WAIT=wait,
                       GROUP=group, UNION=False, BLOCK_E=1, SEARCH_STEPS=1, num_warps=num_warps)
    return out.cpu(), int(expired)


def _forced(n: int) -> list[int]:
    return list(range(SINK_TOKENS)) + list(range(n - RECENT_TOKENS, n))


def _check_top_k(scores: torch.Tensor, got: torch.Tensor, k: int) -> None:
    """Ascending, distinct, forced tokens in, and the kept scores are the k largest (as a multiset:
    with ties any of the equal tokens may be kept)."""
    n = scores.shape[1]
    for h in range(scores.shape[0]):
        row = got[h]
        assert torch.all(row[1:] > row[:-1]), "ascending and distinct"
        assert row.min() >= 0 and row.max() < n
        assert set(_forced(n)) <= set(row.tolist())
        s = scores[h].clone()
        s[_forced(n)] = float("inf")
        expected = torch.sort(torch.topk(s, k).values).values
        assert torch.equal(torch.sort(s[row]).values, expected)


@pytest.mark.parametrize("n,k,tile,radix_bits,search", [(4100, 48, 4096, 0, 0), (4100, 48, 64, 4, 0),
                                                        (9000, 100, 128, 8, 0), (1300, 40, 32, 2, 0),
                                                        (4100, 48, 4096, 0, 1), (9000, 100, 128, 0, 1)])
def test_topk_is_exact_on_random_scores(target, n, k, tile, radix_bits, search):
    """4,100 tokens: a partial last chunk; small tiles carry the ranks across many prefix sums;
    bisection over the whole range or bracketed with an early stop, and radix select with 2-,
    4- and 8-bit digits."""
    g = torch.Generator().manual_seed(n + k)
    scores = torch.randn(3, n, generator=g) * 3
    got = _topk(scores, k, target.device, tile=tile, radix_bits=radix_bits, search=search)
    _check_top_k(scores, got, k)
    for h in range(3):  # with distinct scores the set itself is determined
        s = scores[h].clone()
        s[_forced(n)] = float("inf")
        assert set(got[h].tolist()) == set(torch.topk(s, k).indices.tolist())


@pytest.mark.parametrize("radix_bits,search", [(0, 0), (4, 0), (0, 1)])
def test_topk_with_heavy_ties_keeps_exactly_k_of_the_best_values(target, radix_bits, search):
    """Five distinct values over 12,000 tokens: the k-th score is tied many times at both levels
    (chunk maxima and tokens). Exactly k distinct tokens are kept, and their scores are the k best."""
    g = torch.Generator().manual_seed(3)
    scores = torch.randint(0, 5, (2, 12000), generator=g).float() - 10.0  # negative: sign handling
    k = 300
    got = _topk(scores, k, target.device, tile=256, radix_bits=radix_bits, search=search)
    _check_top_k(scores, got, k)


@pytest.mark.parametrize("radix_bits,search", [(0, 0), (2, 0), (8, 0), (0, 1)])
def test_topk_ranks_negative_and_infinite_scores(target, radix_bits, search):
    g = torch.Generator().manual_seed(9)
    scores = -torch.rand(2, 2000, generator=g) * 1e30
    scores[0, 700] = float("-inf")
    scores[0, 900] = -0.0
    scores[1, 1000:1040] = 0.0
    got = _topk(scores, 40, target.device, radix_bits=radix_bits, search=search)
    _check_top_k(scores, got, 40)
    assert 900 in got[0].tolist() and 700 not in got[0].tolist()
    assert set(range(1000, 1004)) <= set(got[1].tolist())


def _union(top_idx: torch.Tensor, group: int, device, lists: int = 0):
    hq, k = top_idx.shape
    hkv, e = hq // group, group * k
    poison = dict(dtype=torch.int64, device=device)
    rows, slot = torch.full((hkv, e), -5, **poison), torch.full((hkv, e), -5, **poison)
    first = torch.zeros(hkv, e, dtype=torch.bool, device=device)
    head_slots = torch.full((hq, k), -5, **poison)
    top = top_idx.to(device)
    fathom_union[(hkv,)](top, rows, first, slot, head_slots, k, e, top.stride(0), head_slots.stride(0),
                         GROUP=group, BLOCK_E=triton.next_power_of_2(e), SEARCH_STEPS=k.bit_length(), GATHER=lists,
                         num_warps=4)
    return rows.cpu(), first.cpu(), slot.cpu(), head_slots.cpu()


@pytest.mark.parametrize("lists", [0, 1])
@pytest.mark.parametrize("group,k,universe", [(3, 37, 60), (4, 64, 1000), (1, 40, 100), (8, 20, 25), (7, 9, 12)])
def test_union_merges_sorted_lists_and_numbers_distinct_rows(group, k, universe, lists, target):
    """G = 3 and k = 37: no power of two anywhere; a small universe forces many shared rows.
    ``lists=1`` searches a register copy of the lists (``union.GATHER``): the same union."""
    g = torch.Generator().manual_seed(group * k)
    hkv = 2
    top = torch.stack([torch.sort(torch.randperm(universe, generator=g)[:k]).values for _ in range(hkv * group)])
    rows, first, slot, head_slots = _union(top, group, target.device, lists)
    for kvh in range(hkv):
        mine = top[kvh * group : (kvh + 1) * group]
        assert torch.equal(rows[kvh], torch.sort(mine.flatten()).values)
        distinct = torch.unique(mine)
        assert int(first[kvh].sum()) == distinct.numel()
        assert torch.equal(rows[kvh][first[kvh]], distinct), "one first flag per distinct row, at its first entry"
        assert torch.equal(slot[kvh], torch.searchsorted(distinct, rows[kvh])), "slot = rank among distinct rows"
        for a in range(group):
            assert torch.equal(distinct[head_slots[kvh * group + a]], mine[a]), "each head finds its own rows"


@pytest.mark.parametrize("lists", [0, 1])
def test_union_of_lists_that_follow_one_another(lists, target):
    """Each list's rows all above the previous list's: every search of a later row runs off the end
    of an earlier list (lower bound k), where the next list's first row lies; it must not count as
    found there."""
    group, k = 3, 5
    top = torch.arange(2 * group * k).view(2 * group, k)
    rows, first, slot, head_slots = _union(top, group, target.device, lists)
    for kvh in range(2):
        mine = top[kvh * group : (kvh + 1) * group].flatten()
        assert torch.equal(rows[kvh], mine) and bool(first[kvh].all())
        assert torch.equal(slot[kvh], torch.arange(group * k))
        assert torch.equal(head_slots[kvh * group : (kvh + 1) * group].flatten(), torch.arange(group * k))


@pytest.mark.parametrize("search", [0, 1])
def test_topk_of_exactly_the_forced_tokens(target, search):
    """k = 36: the 4 sink and 32 recent tokens fill the top k (every kept score is +inf), which
    the bracketed search must reach above the largest finite score."""
    g = torch.Generator().manual_seed(5)
    scores = torch.randn(2, 2000, generator=g) * 5
    got = _topk(scores, 36, target.device, search=search)
    for h in range(2):
        assert got[h].tolist() == _forced(2000)


@pytest.mark.parametrize("search", [0, 1])
def test_topk_with_more_infinite_scores_than_k(target, search):
    """50 real +inf scores besides the 36 forced tokens, k = 40: the threshold is +inf itself, and
    the 40 kept are +inf ties taken lowest position first (a real +inf outranks no forced token,
    so the last recent tokens can lose their place: forcing is by +inf)."""
    g = torch.Generator().manual_seed(6)
    scores = torch.randn(2, 3000, generator=g)
    scores[:, 1000:1050] = float("inf")
    got = _topk(scores, 40, target.device, search=search)
    for h in range(2):
        assert got[h].tolist() == [0, 1, 2, 3] + list(range(1000, 1036))


@pytest.mark.parametrize("search", [0, 1])
def test_topk_with_one_spike_per_chunk(target, search):
    """Each 32-token chunk holds one high token: the k-th best score equals the k-th best chunk
    max, so pass 2's floor (that chunk threshold) is tight, not merely below."""
    g = torch.Generator().manual_seed(8)
    scores = -10.0 - torch.rand(2, 4096, generator=g)
    spikes = torch.randint(0, 32, (2, 128), generator=g) + 32 * torch.arange(128)
    scores.scatter_(1, spikes, torch.rand(2, 128, generator=g) * 5)
    got = _topk(scores, 64, target.device, search=search)
    _check_top_k(scores, got, 64)


def test_topk_waits_for_the_scan_count(target):
    """WAIT: a head whose KV head is fully scanned runs as without the wait; a head whose count
    stays short gives up after max_polls reads and counts one expiry (a correct step never does)."""
    g = torch.Generator().manual_seed(11)
    scores = torch.randn(4, 4100, generator=g)
    plain = _topk(scores, 48, target.device)
    waited, expired = _run_topk(scores, 48, target.device, wait=True, scanned=[5, 5], group=2)
    assert torch.equal(waited, plain) and expired == 0
    _, expired = _run_topk(scores, 48, target.device, wait=True, scanned=[5, 4], group=2, max_polls=3)
    assert expired == 2  # the two heads of KV head 1
