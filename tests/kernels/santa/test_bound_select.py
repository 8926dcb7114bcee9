"""``topk.BOUND`` (four launches) against the five launches for the same noise, and against the
fp64 replay of its own selection (Triton interpreter on CPU; the last test on a GPU)."""

import pytest
import torch

from kprof.core.config_space import resolve_method_config
from kprof.core.errors import ConfigError
from kprof.kernels.santa import triton_kernels
from kprof.kernels.santa.preparation import SantaSettings, build_layout, pack
from kprof.kernels.santa.reference import Selection, attention_with_selection
from kprof.kernels.santa.step import LAUNCH_SPACES, SantaDecode

pytestmark = pytest.mark.skipif(not triton_kernels.HAS_TOPK, reason="topk.BOUND needs tl.topk")

SMALL = {"score": {"BLOCK_M": 16}, "topk": {"BLOCK_T": 32}, "attend": {"BLOCK_R": 16, "NUM_SPLITS": 4}}


def _pair(make_workload, target, hq=4, hkv=2, n=300, d=16, k=5, bound=64, dtype=torch.float32, seed=0,
          fresh=False, pdl=None):
    """The five launches and the four of ``topk.BOUND=bound`` on one workload, same noise seed."""
    w = make_workload(hq, hkv, n, d, dtype, seed=seed, scale=2.0)
    layout = build_layout(w.k, SantaSettings(p=8, r=2, s=8, parents="contiguous"))
    arts = pack(w.k.to(target.device), w.v.to(target.device), layout)
    q = w.q.to(target.device)
    ops = []
    for cap in (0, bound):
        over = SMALL | {"topk": {"BLOCK_T": 32, "BOUND": cap}}
        cfg = resolve_method_config(LAUNCH_SPACES, over, w.shape)
        ops.append(SantaDecode(q, arts, k, cfg, seed=seed, fresh=fresh, pdl=pdl))
    return w, layout, *ops


def _kept_at_first(op) -> torch.Tensor:
    """Per head, how many real teams clear the (K+1)-th largest tile maximum (host replay)."""
    y, tmax = op.y.cpu(), op.tile_max.cpu()
    n_tiles = -(-op.m_max // op.cfg["score"]["BLOCK_M"])
    top = torch.sort(tmax[:, :n_tiles], dim=1, descending=True).values
    kth = top[:, op.k] if n_tiles > op.k else torch.full((op.hq,), float("-inf"))
    return ((y >= kth[:, None]) & (y > float("-inf"))).sum(dim=1)


def _poison(op):
    for t in (op.y, op.tile_max, op.out):
        t.fill_(float("nan"))
    op.bound_keys.fill_(123)
    op.bound_count.fill_(-7)
    op.sel_team.fill_(-1)


@pytest.mark.parametrize("hq, hkv, n, k, bound", [
    (4, 2, 300, 5, 64),   # fewer tiles than K+1: the bound is -inf, every team is a candidate
    (7, 1, 1201, 6, 32),  # a group of seven, an odd length
    (8, 4, 811, 3, 16),
    (6, 2, 1200, 7, 8),   # CAP = K+1: the bisection runs wherever more than K+1 clear the bound
])
def test_bound_selects_what_the_five_launches_select(make_workload, target, hq, hkv, n, k, bound):
    w, layout, five, four = _pair(make_workload, target, hq=hq, hkv=hkv, n=n, k=k, bound=bound, seed=n)
    assert four.launch_names == ("score", "merge", "attend", "reduce")
    five.run()
    _poison(four)
    four.run()
    for h in range(four.hq):
        assert four.sel_team[h, : four.k].tolist() == five.sel_team[h, : five.k].tolist(), f"head {h}"
        assert torch.allclose(four.sel_logc[h, : four.k], five.sel_logc[h, : five.k], rtol=1e-6, atol=1e-7)
    for kvh in range(four.hkv):
        c = int(five.u_count[kvh])
        assert int(four.u_count[kvh]) == c
        assert torch.equal(four.u_team[kvh, :c], five.u_team[kvh, :c])
        assert torch.equal(four.u_rowpre[kvh, : c + 1], five.u_rowpre[kvh, : c + 1])
    # the perturbed logits the score launch stored are those the top-k launch would have used
    noise = four.gumbel_noise().cpu()
    m = layout.num_teams
    for h in range(four.hq):
        mh = int(m[h // four.group])
        log_n = torch.log(layout.length[h // four.group, :mh].float())
        want = four.scores[h, :mh].cpu() * four.inv_sqrt_d + log_n + noise[h, :mh]
        assert torch.allclose(four.y[h, :mh].cpu(), want, rtol=1e-6, atol=1e-5)
        assert torch.all(four.y[h, mh:] == float("-inf"))
    kept = _kept_at_first(four)
    if bound == 8:
        assert int(kept.max()) > bound, "the bisection path was not exercised"
    if n > 1000:
        assert int(kept.max()) < layout.num_teams.max() // 2, "the bound keeps too many to be tested"
    assert int(four.bound_count.max()) <= bound
    assert torch.all(four.owner == 2**31 - 1)
    out = four.out.cpu().double()
    teams, corr = four.selections()
    ref = attention_with_selection(w.q, w.k, w.v, layout.teams(), [Selection(t, c) for t, c in zip(teams, corr)])
    assert (out - ref).abs().max() < 1e-5


def test_fresh_noise_advances_the_same_way(make_workload, target):
    _, _, five, four = _pair(make_workload, target, hq=6, hkv=2, n=300, seed=3, fresh=True)
    firsts = []
    for _ in range(3):
        five.run()
        four.run()
        assert torch.equal(four.sel_team[:, : four.k], five.sel_team[:, : five.k])
        assert torch.equal(four.seed, five.seed)
        firsts.append(four.sel_team[:, : four.k].clone())
    assert not torch.equal(firsts[0], firsts[1])


def test_tied_logits_fall_back_to_the_key_order(make_workload, target):
    """Every team of head 0 ties at one logit: all clear the bound, more than CAP, and the
    bisection over (logit, team) keys must leave exactly the K+1 highest team indices."""
    _, _, _, four = _pair(make_workload, target, hq=4, hkv=2, n=300, k=5, bound=16, seed=8)
    four.launch_score()
    mh = int(four.arts.num_teams[0])
    four.y[0, :mh] = 0.5
    four.tile_max[0] = torch.where(four.tile_max[0] > float("-inf"), 0.5, float("-inf"))
    four.launch_merge()
    assert four.sel_team[0, : four.k].tolist() == list(range(mh - 1, mh - 1 - four.k, -1))
    assert int(four.bound_count[0]) <= 16


def test_bound_must_hold_k_plus_one(make_workload, target):
    w = make_workload(4, 2, 300, 16, torch.float32, seed=0, scale=2.0)
    layout = build_layout(w.k, SantaSettings(p=8, r=2, s=8, parents="contiguous"))
    arts = pack(w.k.to(target.device), w.v.to(target.device), layout)
    cfg = resolve_method_config(LAUNCH_SPACES, SMALL | {"topk": {"BLOCK_T": 32, "BOUND": 8}}, w.shape)
    with pytest.raises(ConfigError, match="topk.BOUND=8 cannot hold"):
        SantaDecode(w.q.to(target.device), arts, 9, cfg)


@pytest.mark.gpu
def test_gpu_bound_matches_the_five_launches_eager_and_replayed(make_workload, target):
    """At the 32K workload's shape family (G = 7, K = 31, d = 128) with fresh noise: the same
    selection as the five launches call after call, with and without PDL, and from a CUDA graph."""
    kw = dict(hq=28, hkv=4, n=8192, d=128, k=31, bound=128, dtype=torch.float16, seed=5, fresh=True)
    for pdl in (False, True):
        w, layout, five, four = _pair(make_workload, target, pdl=pdl, **kw)
        for _ in range(3):
            four.out.fill_(float("nan"))
            a, b = five.run().clone(), four.run().clone()
            assert torch.equal(five.sel_team[:, : five.k], four.sel_team[:, : four.k])
            assert torch.isfinite(b).all() and (a.double() - b.double()).abs().max() < 2e-3
        teams, corr = four.selections()
        ref = attention_with_selection(w.q, w.k, w.v, layout.teams(), [Selection(t, c) for t, c in zip(teams, corr)])
        assert ((b.cpu().double() - ref).norm() / ref.norm()) < 2e-2
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        four.run()
        with torch.cuda.graph(graph, stream=stream):
            four.run()
    torch.cuda.current_stream().wait_stream(stream)
    five.run()
    for _ in range(2):
        four.out.fill_(float("nan"))
        graph.replay()
        five.run()
        torch.cuda.synchronize()
        assert torch.equal(five.sel_team[:, : five.k], four.sel_team[:, : four.k])
        assert torch.isfinite(four.out).all()
