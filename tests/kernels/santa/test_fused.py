"""santa-fused (two launches) against the fp64 replay of its own selections, and against santa's
five launches for the same noise: same teams, same corrections."""

import dataclasses

import pytest
import torch
import triton
import triton.language as tl

from kprof.core.config_space import resolve_method_config
from kprof.kernels.santa.fused import FUSED_LAUNCH_SPACES, SantaFusedDecode, _fold_head_top
from kprof.kernels.santa.preparation import SantaSettings, build_layout, pack
from kprof.kernels.santa.reference import Selection, attention_with_selection
from kprof.kernels.santa.step import LAUNCH_SPACES, SantaDecode
from kprof.kernels.santa.triton_kernels import HAS_TOPK
from kprof.methods import get_method
from kprof.methods.dense_reference import dense_attention_fp64
from kprof.methods.validation import compare_outputs

FIVE = {"score": {"BLOCK_M": 16}, "topk": {"BLOCK_T": 32, "BOUND": 0}, "attend": {"BLOCK_R": 16, "NUM_SPLITS": 4}}
TWO = {"select": {"BLOCK_T": 32, "BLOCK_M": 16}, "attend": {"BLOCK_R": 16, "NUM_SPLITS": 8}}


def _pair(make_workload, target, hq=8, hkv=2, n=300, d=16, k=5, dtype=torch.float32, seed=0, fresh=False,
          two=None, five=None, w=None):
    """The five-launch and the two-launch operator on one workload and layout, same noise seed."""
    w = w if w is not None else make_workload(hq, hkv, n, d, dtype, seed=seed, scale=2.0)
    layout = build_layout(w.k, SantaSettings(p=8, r=2, s=8, parents="contiguous"))
    arts = pack(w.k.to(target.device), w.v.to(target.device), layout)
    q = w.q.to(target.device)
    five_op = SantaDecode(q, arts, k, resolve_method_config(LAUNCH_SPACES, five or FIVE, w.shape), seed=seed,
                          fresh=fresh)
    two_op = SantaFusedDecode(q, arts, k, resolve_method_config(FUSED_LAUNCH_SPACES, two or TWO, w.shape),
                              seed=seed, fresh=fresh)
    return w, layout, five_op, two_op


def _counters(op) -> int:
    """The sync words of both launches and launch 1's arrival counts: zero between calls."""
    return int(op.sync.abs().sum()) + int(op.arrivals.abs().sum()) + int(op.select_sync.abs().sum())


def _run_poisoned(op):
    for t in (op.out, op.m_part, op.l_part, op.acc, op.scores, op.u_logc):
        t.fill_(float("nan"))
    op.cand.fill_(-1)
    return op.run().cpu()


def _error_against_own_selection(w, layout, op):
    out = _run_poisoned(op)
    teams, corr = op.selections()
    ref = attention_with_selection(w.q, w.k, w.v, layout.teams(), [Selection(t, c) for t, c in zip(teams, corr)])
    assert torch.isfinite(out).all(), "rows left unwritten"
    return compare_outputs(out, ref, None), teams, corr


def _once(score_once: int, select: int | None = None) -> dict:
    """TWO with select.SCORE_ONCE (and a block selection) set."""
    sel = TWO["select"] | {"SCORE_ONCE": score_once} | ({} if select is None else {"SELECT": select})
    return TWO | {"select": sel}


@pytest.mark.parametrize("hq, hkv, dtype, tol, score_once, select", [
    (8, 2, torch.float32, 1e-5, 0, None),    # group 4, two KV heads
    (7, 1, torch.float16, 1e-2, 0, None),    # group 7, one KV head
    (12, 4, torch.bfloat16, 2e-2, 0, None),  # group 3, four KV heads
    (8, 2, torch.float32, 1e-5, 1, None),    # each tile scored once for the group, then waited for
    (7, 1, torch.float16, 1e-2, 1, 0),       # ... one KV head, the sort
    (12, 4, torch.bfloat16, 2e-2, 1, 2),     # ... four KV heads, the radix select
])
def test_same_selections_corrections_and_output_as_the_five_launches(make_workload, target, hq, hkv, dtype, tol,
                                                                      score_once, select):
    w, layout, five, two = _pair(make_workload, target, hq=hq, hkv=hkv, dtype=dtype, seed=3,
                                 two=_once(score_once, select))
    assert two.n_blocks > 1  # select's last program per head folds the blocks' candidates
    report, teams, corr = _error_against_own_selection(w, layout, two)
    assert report.rel_error < tol, report
    five_out = _run_poisoned(five)
    five_teams, five_corr = five.selections()
    for h in range(two.hq):
        assert sorted(teams[h].tolist()) == sorted(five_teams[h].tolist()), h
        order, five_order = torch.argsort(teams[h]), torch.argsort(five_teams[h])
        assert torch.allclose(corr[h][order], five_corr[h][five_order], rtol=1e-5, atol=0), h
    assert compare_outputs(two.out.cpu(), five_out.double(), tol).passed


@pytest.mark.slow
def test_candidate_blocks_and_merge_selects_do_not_change_the_selection(make_workload, target):
    """BLOCK_T sets how candidates are split over programs and MERGE_SELECT how the global top is
    found: the selection is the same set either way."""
    runs = []
    for block_t, merge in ((32, 0), (64, 2), (128, 3), (32, 3)):
        two = {"select": {"BLOCK_T": block_t, "BLOCK_M": 16}, "attend": TWO["attend"] | {"MERGE_SELECT": merge}}
        w, layout, _, op = _pair(make_workload, target, seed=5, two=two)
        report, teams, _ = _error_against_own_selection(w, layout, op)
        assert report.rel_error < 1e-5, (block_t, merge, report)
        runs.append([sorted(t.tolist()) for t in teams])
    assert runs[0] == runs[1] == runs[2] == runs[3]


@pytest.mark.parametrize("fold", [0, 1])  # 3, the default, runs in every other test
def test_fold_selections_keep_the_same_set(make_workload, target, fold):
    """The fold of a head's blocks by sort or by tl.topk of the keys: the same teams as santa's
    five launches (which merge every block's candidates)."""
    if fold in (1, 3) and not HAS_TOPK:
        pytest.skip("FOLD_SELECT=1 and 3 need tl.topk, which this Triton lacks")
    two = TWO | {"select": TWO["select"] | {"FOLD_SELECT": fold}}
    w, layout, five, op = _pair(make_workload, target, seed=7, two=two)
    assert op.n_blocks > 2
    report, teams, _ = _error_against_own_selection(w, layout, op)
    assert report.rel_error < 1e-5, (fold, report)
    _run_poisoned(five)
    assert [sorted(t.tolist()) for t in teams] == [sorted(t.tolist()) for t in five.selections()[0]]


@triton.jit
def _fold_blocks(Cand, Arrived, n_blocks, stride_cb, KPAD: tl.constexpr, NCP: tl.constexpr, SELECT: tl.constexpr):
    _fold_head_top(Cand, Arrived, n_blocks, stride_cb, KPAD, NCP, SELECT)


@pytest.mark.parametrize("fold", [0, 1, 3])
@pytest.mark.parametrize("words", ["tied", "negative"])
def test_fold_keeps_the_top_keys_with_a_tied_word_and_negative_keys(target, fold, words):
    """The fold on hand-made keys: 3 blocks of 8, words tied across the 8th place (the word path
    must fall back to the whole keys) or all negative (padding must still lose)."""
    if fold in (1, 3) and not HAS_TOPK:
        pytest.skip("FOLD_SELECT=1 and 3 need tl.topk, which this Triton lacks")
    gen = torch.Generator().manual_seed(11)
    if words == "tied":
        word = torch.randint(-50, 50, (24,), generator=gen)
        word[torch.randperm(24, generator=gen)[:4]] = 60  # four keys share the 5th-8th places...
        top_words = torch.sort(word, descending=True).values
        word[word == top_words[8]] = top_words[7]  # ...and the 9th word ties the 8th
        assert int((word >= top_words[7]).sum()) > 8
    else:
        word = -torch.randint(1, 1 << 30, (24,), generator=gen)
    keys = (word.to(torch.int64) << 32) | torch.randperm(24, generator=gen).to(torch.int64)
    # each block keeps its 8 best keys, as the block top does
    blocks = torch.stack([torch.sort(b, descending=True).values for b in keys.view(3, 8)])
    cand = blocks.clone().to(target.device)
    arrived = torch.zeros(32, dtype=torch.int32, device=target.device)
    _fold_blocks[(3,)](cand, arrived, 3, cand.stride(0), KPAD=8, NCP=32, SELECT=fold)
    want = set(torch.sort(keys, descending=True).values[:8].tolist())
    assert set(cand[0].cpu().tolist()) == want
    assert int(arrived[0]) == 0


def test_the_fold_pads_below_keys_of_negative_scores(make_workload, target):
    """Every routing logit below zero makes every key negative: the fold's padding (slots past the
    blocks' keys) must still lose to all of them, or a padding slot would be selected."""
    w = make_workload(8, 2, 300, 16, torch.float32, seed=6)
    k = w.k.clone()
    k[..., 0] += 4.0
    q = 0.5 * w.q
    q[:, 0] = -40.0
    w = dataclasses.replace(w, q=q, k=k)
    w, layout, five, two = _pair(make_workload, target, w=w, seed=6)
    assert two.n_blocks > 1 and two.n_blocks * two.kpad < two.ncp  # the fold has padding slots
    report, teams, _ = _error_against_own_selection(w, layout, two)
    assert report.rel_error < 1e-5, report
    assert int(two.cand[:, 0].max()) < 0  # the head's kept keys are all negative: no padding slot won
    _run_poisoned(five)
    assert [sorted(t.tolist()) for t in teams] == [sorted(t.tolist()) for t in five.selections()[0]]


@pytest.mark.slow
def test_calls_in_a_row_reset_the_counters_and_fresh_noise_follows_santa(make_workload, target):
    """The default select (SCORE_ONCE=1) resets its tickets and block lines, both launches their
    arrivals and sync words; SCORE_ONCE=0 shares the arrivals' reset."""
    w, layout, five, two = _pair(make_workload, target, seed=9, fresh=True)
    for call in range(3):
        report, teams, _ = _error_against_own_selection(w, layout, two)
        assert report.rel_error < 1e-5, (call, report)
        _run_poisoned(five)
        assert [sorted(t.tolist()) for t in teams] == [sorted(t.tolist()) for t in five.selections()[0]], call
        assert _counters(two) == 0, ("counters not reset", call, two.sync.tolist(), two.arrivals.tolist())
    assert two.faults() == []


@pytest.mark.parametrize("score_once", [0, 1])
def test_k_equal_m_is_dense_attention(make_workload, target, score_once):
    w, _, _, two = _pair(make_workload, target, k=10_000, seed=4, two=_once(score_once))
    assert two.all_teams
    out = _run_poisoned(two).double()
    assert (out - dense_attention_fp64(w)).abs().max() < 1e-5
    assert _counters(two) == 0


def test_the_check_would_catch_a_wrong_output(make_workload, target):
    w, layout, _, two = _pair(make_workload, target, seed=8)
    _run_poisoned(two)
    teams, corr = two.selections()
    wrong = [Selection(t[:-1], c[:-1]) for t, c in zip(teams, corr)]  # one selected team left out
    ref = attention_with_selection(w.q, w.k, w.v, layout.teams(), wrong)
    assert not compare_outputs(two.out.cpu(), ref, 1e-5).passed


def test_method_runs_through_prepare_and_validates(make_workload, target):
    w = make_workload(8, 2, 400, 16, torch.float32, seed=1, scale=2.0)
    method = get_method("santa-fused:p=8,r=2,s=8,parents=contiguous")
    prepared = method.prepare(w, target, {"select": {"BLOCK_T": 32, "BLOCK_M": 16},
                                          "attend": {"BLOCK_R": 16, "NUM_SPLITS": 8}})
    assert [name for name, _ in prepared.handle.stages()] == ["select", "attend"]
    prepared.output.fill_(float("nan"))
    out = prepared.run()
    assert compare_outputs(out.cpu(), method.reference_for(w, prepared), 1e-5).passed
    assert prepared.faults() == []


def _poison_state(op):
    """NaN in every partial, score and correction, -1 candidates: a launch that skipped a phase, or
    read a union that was not there yet, cannot pass on the previous call's equal values."""
    for t in (op.out, op.m_part, op.l_part, op.acc, op.scores, op.u_logc):
        t.fill_(float("nan"))
    op.cand.fill_(-1)


@pytest.mark.gpu
@pytest.mark.parametrize("score_once", [0, 1])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_gpu_many_calls_and_graph_replays(make_workload, target, dtype, score_once):
    """The ticketed launch on real SMs: merges, waiting splits and waiting combiners. 30 eager
    calls with fresh noise, each against santa's selections and the fp64 replay; then 10 graph
    replays on fresh queries, each against santa's five launches on the same query and noise."""
    w, layout, five, two = _pair(make_workload, target, hq=28, hkv=4, n=8192, d=128, k=31, dtype=dtype, seed=2,
                                 fresh=True, two={"select": {"SCORE_ONCE": score_once}}, five={})
    tol = 1e-2 if dtype == torch.float16 else 2e-2
    for call in range(30):
        report, teams, _ = _error_against_own_selection(w, layout, two)
        assert report.rel_error < tol, (call, report)
        _run_poisoned(five)
        assert [sorted(t.tolist()) for t in teams] == [sorted(t.tolist()) for t in five.selections()[0]], call
    w, layout, five, two = _pair(make_workload, target, hq=28, hkv=4, n=8192, d=128, k=31, dtype=dtype, seed=5,
                                 two={"select": {"SCORE_ONCE": score_once}}, five={})
    assert two.q is five.q  # one query buffer: refilled in place, read by both
    two.run()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        two.run()
    for replay in range(10):
        two.q.copy_(torch.randn_like(two.q) * 2.0)
        _poison_state(two)
        graph.replay()
        want = _run_poisoned(five)
        assert compare_outputs(two.out.cpu(), want.double(), tol).passed, replay
    assert _counters(two) == 0 and two.faults() == []


@pytest.mark.gpu
@pytest.mark.parametrize("score_once", [0, 1])
@pytest.mark.parametrize("pdl", [False, True])
@pytest.mark.parametrize("k", [31, 100_000])
def test_gpu_grid_beyond_resident_capacity(make_workload, target, pdl, k, score_once):
    """8 KV heads x 129 programs of 8 warps: more than fit on the SMs at once, so programs start
    after others finished and waits really wait; with and without PDL, sampled and K = M, for
    each select form."""
    two_cfg = {"select": {"SCORE_ONCE": score_once}, "attend": {"NUM_SPLITS": 128, "num_warps": 8}}
    w = make_workload(32, 8, 16384, 128, torch.bfloat16, seed=4, scale=2.0)
    layout = build_layout(w.k, SantaSettings(p=16, r=4, s=124, parents="contiguous"))
    arts = pack(w.k.to(target.device), w.v.to(target.device), layout)
    op = SantaFusedDecode(w.q.to(target.device), arts, k, resolve_method_config(FUSED_LAUNCH_SPACES, two_cfg,
                                                                                w.shape), pdl=pdl)
    # the same noise every call, so the same selection: one fp64 reference (K = M: dense attention)
    first, ref = None, None
    for call in range(8):
        _poison_state(op)
        out = op.run().cpu()
        teams, corr = op.selections()
        if first is None:
            first = [sorted(t.tolist()) for t in teams]
            chosen = [Selection(t, c) for t, c in zip(teams, corr)]
            ref = dense_attention_fp64(w) if op.all_teams else attention_with_selection(w.q, w.k, w.v,
                                                                                         layout.teams(), chosen)
        assert [sorted(t.tolist()) for t in teams] == first, call
        assert compare_outputs(out, ref, 2e-2).passed, call
    assert _counters(op) == 0 and op.faults() == []
