"""The five SANTA++ launches against their fp64 reference pieces (Triton interpreter on CPU)."""

import math

import pytest
import torch

from kprof.core.config_space import resolve_method_config
from kprof.kernels.santa import triton_kernels
from kprof.kernels.santa.preparation import SantaSettings, build_layout, pack
from kprof.kernels.santa.reference import (
    Selection,
    attention_with_selection,
    inclusion_probability,
    routing_logits,
    sample_teams,
)
from kprof.kernels.santa.step import LAUNCH_SPACES, SantaDecode
from kprof.methods.dense_reference import dense_attention_fp64

needs_topk = pytest.mark.skipif(not triton_kernels.HAS_TOPK, reason="topk.BOUND needs tl.topk")
SMALL = {"score": {"BLOCK_M": 16}, "topk": {"BLOCK_T": 16, "BOUND": 0}, "attend": {"BLOCK_R": 16, "NUM_SPLITS": 4}}


def _setup(make_workload, target, hq=4, hkv=2, n=160, d=16, k=5, dtype=torch.float32, seed=0, fresh=False,
           parents="contiguous", suffix=0, pdl=None, overrides=None, p=8, r=2, bound=0):
    w = make_workload(hq, hkv, n + suffix, d, dtype, seed=seed, scale=2.0)
    prompt_k, prompt_v = w.k[:, :n].contiguous(), w.v[:, :n].contiguous()
    layout = build_layout(prompt_k, SantaSettings(p=p, r=r, s=8, parents=parents))
    arts = pack(prompt_k.to(target.device), prompt_v.to(target.device), layout)
    block_t = max(16, 1 << k.bit_length()) if k < 10_000 else 16  # must hold K+1 candidates
    # the block top-k (topk.BOUND=0) unless ``bound``; test_bound_select.py has the bound filter's own tests
    over = SMALL | {"topk": {"BLOCK_T": block_t, "BOUND": bound}} | (overrides or {})
    cfg = resolve_method_config(LAUNCH_SPACES, over, w.shape)
    op = SantaDecode(w.q.to(target.device), arts, k, cfg, seed=seed, fresh=fresh,
                     suffix_k=w.k[:, n:].to(target.device) if suffix else None,
                     suffix_v=w.v[:, n:].to(target.device) if suffix else None, pdl=pdl)
    return w, layout, op


def _ref_selection(w, layout, op, h, noise):
    teams = layout.teams()[h // op.group]
    phi = routing_logits(w.q[h], w.k[h // op.group], teams)
    return phi, sample_teams(phi, op.k, noise=noise[h, : len(teams)].double())


def test_score_launch_is_q_dot_representatives(make_workload, target):
    w, layout, op = _setup(make_workload, target)
    op.scores.fill_(float("nan"))
    op.launch_score()
    for h in range(op.hq):
        reps = w.k[h // op.group, layout.rep_index[h // op.group, : int(layout.num_teams[h // op.group])]]
        expected = reps.double() @ w.q[h].double()
        got = op.scores[h, : expected.numel()].cpu().double()
        assert torch.allclose(got, expected, atol=1e-5)


def test_topk_and_merge_match_the_reference_sampler_with_identical_noise(make_workload, target):
    w, layout, op = _setup(make_workload, target, seed=3)
    op.launch_score()
    op.launch_topk()
    op.sel_team.fill_(-1)
    op.launch_merge()
    noise = op.gumbel_noise().cpu()
    for h in range(op.hq):
        phi, sel = _ref_selection(w, layout, op, h, noise)
        got = op.sel_team[h, : op.k].cpu().to(torch.int64)
        assert got.tolist() == sel.teams.tolist(), f"head {h}: top-K order differs"
        c = torch.exp(op.sel_logc[h, : op.k].cpu().double())
        assert torch.allclose(c, sel.corrections, rtol=2e-4, atol=1e-7)
        # each block's candidates are that block's best K+1 perturbed scores (in any order:
        # the radix-select path writes them in team order)
        y = phi + noise[h, : phi.numel()].double()
        for b in range(op.n_blocks):
            lo, hi = b * 16, min((b + 1) * 16, phi.numel())
            want = torch.topk(y[lo:hi], min(op.k + 1, hi - lo)).indices + lo
            idx = (op.cand[h, b].cpu() & 0xFFFFFFFF).tolist()
            assert set(want.tolist()) <= set(idx), f"head {h} block {b}: a best-K+1 team is missing"


def test_union_masks_and_corrections(make_workload, target):
    w, layout, op = _setup(make_workload, target, seed=5)
    op.run()
    teams_per_head, corr = op.selections()
    for kvh in range(op.hkv):
        heads = range(kvh * op.group, (kvh + 1) * op.group)
        union = sorted({t for h in heads for t in teams_per_head[h].tolist()})
        count = int(op.u_count[kvh])
        got = op.u_team[kvh, :count].cpu().tolist()
        assert sorted(got) == union and len(got) == len(set(got)), "each team once"
        rowpre = op.u_rowpre[kvh, : count + 1].cpu().tolist()
        for u, team in enumerate(got):
            assert int(op.u_start[kvh, u]) == int(layout.start[kvh, team])
            assert rowpre[u + 1] - rowpre[u] == int(layout.length[kvh, team])
            for j, h in enumerate(heads):
                chosen = team in teams_per_head[h].tolist()
                assert bool(op.u_mask[kvh, u, j]) == chosen
                if chosen:
                    i = teams_per_head[h].tolist().index(team)
                    assert math.isclose(math.exp(float(op.u_logc[kvh, u, j])), float(corr[h][i]), rel_tol=1e-6)


def _error_against_own_selection(w, layout, op, suffix=0):
    """Poison, run the five launches, and return the max abs error against the fp64 reference
    fed with the kernels' own selected teams and corrections (plus those teams)."""
    op.out.fill_(float("nan"))
    out = op.run().cpu()
    teams, corr = op.selections()
    ref = attention_with_selection(w.q, w.k, w.v, layout.teams(), [Selection(t, c) for t, c in zip(teams, corr)],
                                   suffix=suffix)
    assert torch.isfinite(out).all()
    return float((out.double() - ref).abs().max()), teams


@pytest.mark.parametrize("bound", [0, pytest.param(32, marks=needs_topk)])
@pytest.mark.parametrize("suffix", [0, 7])
def test_whole_operator_matches_reference_with_its_own_selection(make_workload, target, suffix, bound):
    w, layout, op = _setup(make_workload, target, seed=7, suffix=suffix, bound=bound)
    err, teams = _error_against_own_selection(w, layout, op, suffix)
    assert err < 1e-5
    # and that selection is the reference sampler's under the same noise
    noise = op.gumbel_noise().cpu()
    for h in range(op.hq):
        assert teams[h].tolist() == _ref_selection(w, layout, op, h, noise)[1].teams.tolist()


@pytest.mark.parametrize("search", [0, 1, 2, 3])
@pytest.mark.parametrize("suffix_rows, single_row_teams", [(0, False), (7, False), (0, True), (5, True)])
def test_attend_row_to_entry_search_both_ways(make_workload, target, search, suffix_rows, single_row_teams):
    """attend.SEARCH 0 (compare with every entry's end), 1 (binary search of the tile's first
    entry, then a window of BLOCK_R ends), 2 (that first entry by counting every end) and 3 (as 0,
    with each entry's start and base picked from registers) map
    every union row to its team, with and without an exact suffix. Single-row teams make a tile
    span BLOCK_R entries, the window's full width."""
    over = {"attend": {"BLOCK_R": 16, "NUM_SPLITS": 4, "SEARCH": search}}
    shape = dict(p=2, r=2, k=20) if single_row_teams else dict(k=6)
    w, layout, op = _setup(make_workload, target, seed=19, suffix=suffix_rows, overrides=over, **shape)
    assert _error_against_own_selection(w, layout, op, suffix_rows)[0] < 1e-5
    if single_row_teams:  # the union really spans several tiles of single-row entries
        rows = op.u_rowpre[:, -1].cpu()
        assert int(rows.min()) > 2 * 16 and torch.equal(rows, op.u_count.cpu())


@pytest.mark.parametrize("bound", [0, pytest.param(32, marks=needs_topk)])
def test_k_equal_m_is_dense_attention(make_workload, target, bound):
    w, layout, op = _setup(make_workload, target, k=10_000, bound=bound)
    assert op.all_teams
    op.out.fill_(float("nan"))
    out = op.run().cpu().double()
    assert (out - dense_attention_fp64(w)).abs().max() < 1e-5


def test_seed_reproducible_and_fresh_mode_redraws(make_workload, target):
    _, _, a = _setup(make_workload, target, seed=11)
    _, _, b = _setup(make_workload, target, seed=11)
    a.run()
    b.run()
    assert torch.equal(a.sel_team[:, : a.k], b.sel_team[:, : b.k])
    _, _, f = _setup(make_workload, target, seed=11, fresh=True)
    f.run()
    first = f.sel_team[:, : f.k].clone()
    f.run()
    assert not torch.equal(first, f.sel_team[:, : f.k]), "fresh mode draws new noise each call"


def test_fp16_inputs_and_group_of_seven(make_workload, target):
    w, layout, op = _setup(make_workload, target, hq=7, hkv=1, n=96, d=32, k=4, dtype=torch.float16, seed=2)
    out = op.run().cpu()
    teams, corr = op.selections()
    ref = attention_with_selection(w.q, w.k, w.v, layout.teams(), [Selection(t, c) for t, c in zip(teams, corr)])
    rel = (out.double() - ref).norm() / ref.norm()
    assert rel < 1e-2


def test_inclusion_probability_kernel_helper_matches_reference(make_workload, target):
    w, layout, op = _setup(make_workload, target, seed=9)
    op.run()
    noise = op.gumbel_noise().cpu()
    phi, sel = _ref_selection(w, layout, op, 0, noise)
    y = phi + noise[0, : phi.numel()].double()
    tau = torch.topk(y, op.k + 1).values[-1]
    assert torch.allclose(sel.corrections, inclusion_probability(phi[sel.teams], tau))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_gpu_operator_on_larger_shapes(make_workload, target, dtype):
    w, layout, op = _setup(make_workload, target, hq=28, hkv=4, n=4096, d=128, k=31, dtype=dtype, seed=1)
    op.out.fill_(float("nan"))
    out = op.run().cpu()
    teams, corr = op.selections()
    ref = attention_with_selection(w.q, w.k, w.v, layout.teams(), [Selection(t, c) for t, c in zip(teams, corr)])
    assert torch.isfinite(out).all()
    assert ((out.double() - ref).norm() / ref.norm()) < 2e-2


@pytest.mark.gpu
def test_gpu_dependent_launches_match_the_plain_chain(make_workload, target):
    """Launches 2-5 under programmatic dependent launch start early and wait on the GPU: the
    selections and output must equal the plain chain's bit for bit, run after run (fresh noise
    each call, so every run depends on the previous merge's seed update), eagerly and replayed
    from a CUDA graph."""
    from kprof.kernels.common.dependent_launch import pdl_supported

    if not pdl_supported(target.device):
        pytest.skip("this GPU or Triton has no programmatic dependent launch")
    kw = dict(hq=28, hkv=4, n=4096, d=128, k=31, dtype=torch.float16, seed=5, fresh=True)
    _, _, plain = _setup(make_workload, target, pdl=False, **kw)
    _, _, chained = _setup(make_workload, target, pdl=True, **kw)
    assert chained.pdl and not plain.pdl
    for _ in range(3):
        chained.out.fill_(float("nan"))
        a, b = plain.run().clone(), chained.run().clone()
        assert torch.equal(plain.sel_team[:, : plain.k], chained.sel_team[:, : chained.k])
        assert torch.equal(a, b) and torch.isfinite(b).all()
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        chained.run()  # warm: compiled, seed advanced like the plain chain below
        with torch.cuda.graph(graph, stream=stream):
            chained.run()
    torch.cuda.current_stream().wait_stream(stream)
    plain.run()  # plain now matches the warm run above; the replay below is the captured call
    for _ in range(2):
        chained.out.fill_(float("nan"))
        graph.replay()
        expected = plain.run()
        torch.cuda.synchronize()
        assert torch.equal(plain.sel_team[:, : plain.k], chained.sel_team[:, : chained.k])
        assert torch.equal(expected, chained.out)


def test_union_bookkeeping_is_restored_between_calls(make_workload, target):
    _, _, op = _setup(make_workload, target, seed=13)
    op.run()
    first = (op.u_count.clone(), op.u_team.clone(), op.u_mask.clone())
    assert torch.all(op.owner == 2**31 - 1), "merge leaves every team slot free for the next call"
    op.run()
    count = op.u_count
    assert torch.equal(count, first[0])
    for kvh in range(op.hkv):
        c = int(count[kvh])
        assert torch.equal(op.u_team[kvh, :c], first[1][kvh, :c])
        assert torch.equal(op.u_mask[kvh, :c], first[2][kvh, :c])


@pytest.mark.parametrize("select", [0, 1, 2, 3])
def test_topk_and_sort_paths_select_identically(make_workload, target, select):
    """Every selection path (full tl.sort, tl.topk where Triton has it, radix select, 32-bit word
    threshold) must agree with the reference."""
    if select in (1, 3) and not triton_kernels.HAS_TOPK:
        pytest.skip("this Triton has no tl.topk")
    w, layout, op = _setup(make_workload, target, seed=21)
    op.cfg["topk"]["SELECT"] = select
    op.cfg["merge"]["SELECT"] = select
    op.bind()
    op.run()
    noise = op.gumbel_noise().cpu()
    for h in range(op.hq):
        got, want = op.sel_team[h, : op.k].cpu().tolist(), _ref_selection(w, layout, op, h, noise)[1].teams.tolist()
        if select == 3:  # merge by score word keeps candidate order, not rank order
            got, want = sorted(got), sorted(want)
        assert got == want


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_fp32_output_isolates_the_accumulation_error(make_workload, target, dtype):
    """out_dtype=float32 (``santa:out=fp32``): P.V in fp32, no final rounding, error far below fp16's."""
    w = make_workload(7, 1, 96, 32, dtype, seed=4, scale=2.0)
    layout = build_layout(w.k, SantaSettings(p=8, r=2, s=8))
    arts = pack(w.k.to(target.device), w.v.to(target.device), layout)
    cfg = resolve_method_config(LAUNCH_SPACES, SMALL, w.shape)
    op = SantaDecode(w.q.to(target.device), arts, 4, cfg, seed=2, out_dtype=torch.float32)
    assert op.pv_fp32 and op.out.dtype == torch.float32
    op.out.fill_(float("nan"))
    out = op.run().cpu().double()
    teams, corr = op.selections()
    ref = attention_with_selection(w.q, w.k, w.v, layout.teams(), [Selection(t, c) for t, c in zip(teams, corr)])
    assert (out - ref).abs().max() < 1e-5


@pytest.mark.parametrize("select", [2, 3])
def test_block_topk_keeps_the_int64_key_order_on_tied_scores(target, select):
    """Scores drawn from four values (heavy ties, no noise): the block's KPAD best keys are the
    best (score, team index) pairs, exactly as the int64 sort orders them."""
    from kprof.kernels.santa.triton_kernels import santa_block_topk

    if select == 3 and not triton_kernels.HAS_TOPK:
        pytest.skip("this Triton has no tl.topk")
    g = torch.Generator().manual_seed(5)
    hq, m, block, kpad = 2, 200, 64, 16
    scores = torch.tensor([-1.5, 0.25, 2.0, 3.0])[torch.randint(0, 4, (hq, m), generator=g)]
    scores[0, :150] = 0.25  # block 0 and 1 of head 0: the 16th best word is tied many times over
    lengths = torch.ones(1, m, dtype=torch.int32)
    nblk = (m + block - 1) // block
    cand = torch.full((hq, nblk, kpad), -1, dtype=torch.int64)
    dev = target.device
    cand = cand.to(dev)
    santa_block_topk[(hq, nblk)](
        scores.to(dev), lengths.to(dev), torch.tensor([m], dtype=torch.int32, device=dev),
        torch.zeros(1, dtype=torch.int64, device=dev), cand, m, 1.0,
        scores.stride(0), lengths.stride(0), cand.stride(0), cand.stride(1),
        GROUP=hq, BLOCK_T=block, KPAD=kpad, NOISE=False, SELECT=select, RADIX_BITS=2)
    for h in range(hq):
        for b in range(nblk):
            lo, hi = b * block, min((b + 1) * block, m)
            ys = [(float(scores[h, t]), t) for t in range(lo, hi)] + [(float("-inf"), t) for t in range(hi, lo + block)]
            want = sorted(ys, reverse=True)[:kpad]
            got = sorted(int(k) & 0xFFFFFFFF for k in cand[h, b].cpu())
            assert got == sorted(t for _, t in want), f"head {h} block {b}"


def _order_image(x: torch.Tensor) -> torch.Tensor:
    """fp32 -> the int32 whose signed order is the float order (the sort key's high word)."""
    bits = x.float().view(torch.int32)
    return torch.where(bits < 0, bits ^ 0x7FFFFFFF, bits).to(torch.int64)


@pytest.mark.parametrize("ties", [False, True])
def test_merge_by_score_word_equals_the_ordered_merge(make_workload, target, ties):
    """merge SELECT=3 (threshold on the 32-bit score word) against SELECT=1 and the key order,
    each with the repeated teams' union positions gathered in registers (GATHER=1) or read back
    from memory: the same K teams per head, the same tau and corrections, the same union (teams,
    member rows, per-head masks and log c) up to the order of union entries. With ``ties`` every candidate's
    score word is one of three values, so the (K+1)-th word is tied and the int64 keys decide."""
    if not triton_kernels.HAS_TOPK:
        pytest.skip("this Triton has no tl.topk")
    _, _, op = _setup(make_workload, target, hq=6, hkv=2, n=400, seed=17)
    op.run()
    cand = op.cand.clone()
    if ties:
        g = torch.Generator().manual_seed(3)
        real = (cand >> 32) > _order_image(torch.tensor(float("-inf"))).to(cand.device)
        level = torch.tensor([-0.5, 0.75, 1.25])[torch.randint(0, 3, cand.shape, generator=g)]
        cand = torch.where(real, (_order_image(level).to(cand.device) << 32) | (cand & 0xFFFFFFFF), cand)
    results = []
    for select, gather in ((1, 0), (1, 1), (3, 0), (3, 1)):
        op.cand.copy_(cand)
        op.cfg["merge"]["SELECT"] = select
        op.cfg["merge"]["GATHER"] = gather
        op.bind()
        op.sel_team.fill_(-1)
        op.sel_logc.fill_(float("nan"))
        op.launch_merge()
        count = op.u_count.cpu()
        union = []
        for kvh in range(op.hkv):
            c = int(count[kvh])
            teams = op.u_team[kvh, :c].cpu().tolist()
            ends = op.u_rowpre[kvh, 1: c + 1].cpu() - op.u_rowpre[kvh, :c].cpu()
            mask, logc = op.u_mask[kvh, :c, : op.group].cpu(), op.u_logc[kvh, :c, : op.group].cpu()
            union.append({t: (int(ends[i]), mask[i].tolist(), logc[i].tolist()) for i, t in enumerate(teams)})
            assert len(union[-1]) == c, "each team once"
        sel = {h: dict(zip(op.sel_team[h, : op.k].cpu().tolist(), op.sel_logc[h, : op.k].cpu().tolist()))
               for h in range(op.hq)}
        assert torch.all(op.owner == 2**31 - 1)
        results.append((sel, union))
    for h in range(op.hq):
        keys = sorted(cand[h].reshape(-1).cpu().tolist(), reverse=True)
        assert set(results[0][0][h]) == {k & 0xFFFFFFFF for k in keys[: op.k]}, f"head {h}"
    assert all(r == results[0] for r in results[1:])


def test_bind_refuses_parameters_that_size_buffers_and_stages_follow_a_rebind(make_workload, target):
    w, layout, op = _setup(make_workload, target, seed=4)
    before = op.launch_merge
    op.cfg["merge"]["num_warps"] = 2
    op.bind()
    assert op.launch_merge is not before and op.launch_merge.keywords["num_warps"] == 2
    stages = dict(op.stages())
    op.bind()
    calls = []
    op.launch_score = lambda: calls.append("score")  # a stage calls whatever is bound now
    stages["score"]()
    assert calls == ["score"]
    op.cfg["topk"]["BLOCK_T"] *= 2
    with pytest.raises(ValueError, match="build a new SantaDecode"):
        op.bind()
    op.cfg["topk"]["BLOCK_T"] //= 2
    op.cfg["attend"]["REDUCE"] = 1  # chooses the launches, which a prepared method holds
    with pytest.raises(ValueError, match="build a new SantaDecode"):
        op.bind()
