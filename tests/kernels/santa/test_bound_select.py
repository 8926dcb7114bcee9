"""``topk.BOUND`` (a filter by a bound in place of the block top-k) against the block top-k for the
same noise, and against the fp64 replay of its own selection (Triton interpreter on CPU; the last
test on a GPU)."""

import pytest
import torch
import triton

from kprof.core.config_space import resolve_method_config
from kprof.core.errors import ConfigError
from kprof.kernels.santa import bound_select, step, triton_kernels
from kprof.kernels.santa.bound_select import part_size
from kprof.kernels.santa.preparation import SantaSettings, build_layout, pack
from kprof.kernels.santa.reference import Selection, attention_with_selection
from kprof.kernels.santa.step import LAUNCH_SPACES, SantaDecode
from kprof.measure.harness import capture_graph

pytestmark = pytest.mark.skipif(not triton_kernels.HAS_TOPK, reason="topk.BOUND needs tl.topk")

# the union form, whose tables the tests below compare entry by entry (merge.PER_HEAD has tests of its own)
SMALL = {"score": {"BLOCK_M": 16}, "topk": {"BLOCK_T": 32}, "merge": {"PER_HEAD": 0},
         "attend": {"BLOCK_R": 16, "NUM_SPLITS": 4}}


def _ops(make_workload, target, overs, hq=4, hkv=2, n=300, d=16, k=5, dtype=torch.float32, seed=0, fresh=False,
         pdl=None, parents="contiguous", suffix=0):
    """One SantaDecode per launch-parameter override in ``overs`` on one workload, same noise seed
    (k-means parents: KV heads with different numbers of teams; ``suffix``: the workload's last rows
    attended exactly, after the teams of the first ``n``)."""
    w = make_workload(hq, hkv, n + suffix, d, dtype, seed=seed, scale=2.0)
    dev = target.device
    layout = build_layout(w.k[:, :n], SantaSettings(p=8, r=2, s=8, parents=parents))
    arts = pack(w.k[:, :n].contiguous().to(dev), w.v[:, :n].contiguous().to(dev), layout)
    tail = {"suffix_k": w.k[:, n:].contiguous().to(dev), "suffix_v": w.v[:, n:].contiguous().to(dev)} if suffix else {}
    q = w.q.to(dev)
    ops = []
    for over in overs:
        cfg = resolve_method_config(LAUNCH_SPACES, {launch: SMALL.get(launch, {}) | over.get(launch, {})
                                                    for launch in SMALL.keys() | over.keys()}, w.shape)
        ops.append(SantaDecode(q, arts, k, cfg, seed=seed, fresh=fresh, pdl=pdl, **tail))
    return w, layout, ops


def _pair(make_workload, target, bound=64, **kw):
    """The block top-k's launches and those of ``topk.BOUND=bound`` on one workload, same noise seed."""
    w, layout, ops = _ops(make_workload, target, [{"topk": {"BLOCK_T": 32, "BOUND": cap}} for cap in (0, bound)], **kw)
    return w, layout, *ops


def _assert_same_selection(by_topk, by_bound):
    """Selections, corrections and GQA unions of two runs agree (union order included)."""
    for h in range(by_bound.hq):
        assert by_bound.sel_team[h, : by_bound.k].tolist() == by_topk.sel_team[h, : by_topk.k].tolist(), f"head {h}"
        got, want = by_bound.sel_logc[h, : by_bound.k], by_topk.sel_logc[h, : by_topk.k]
        assert torch.allclose(got, want, rtol=1e-6, atol=1e-7)
    for kvh in range(by_bound.hkv):
        c = int(by_topk.u_count[kvh])
        assert int(by_bound.u_count[kvh]) == c
        for table in ("u_team", "u_start"):
            assert torch.equal(getattr(by_bound, table)[kvh, :c], getattr(by_topk, table)[kvh, :c]), table
        assert torch.equal(by_bound.u_rowpre[kvh, : c + 1], by_topk.u_rowpre[kvh, : c + 1])


def _replay(w, layout, op, suffix=0):
    """The fp64 attention over the teams and corrections ``op`` selected in its last call."""
    teams, corr = op.selections()
    return attention_with_selection(w.q, w.k, w.v, layout.teams(), [Selection(t, c) for t, c in zip(teams, corr)],
                                    suffix=suffix)


def _kept_at_first(op) -> torch.Tensor:
    """Per head, how many real teams clear the (K+1)-th largest part maximum (host replay)."""
    y = op.y.cpu()
    kth = torch.sort(op.part_max[:, : op.n_parts].cpu(), dim=1, descending=True).values[:, op.k]
    return ((y >= kth[:, None]) & (y > float("-inf"))).sum(dim=1)


def _poison(op):
    for t in (op.y, op.part_max, op.out):
        t.fill_(float("nan"))
    op.bound_keys.fill_(123)
    op.sel_team.fill_(-1)


@pytest.mark.parametrize("hq, hkv, n, k, bound, parents", [
    (4, 2, 300, 5, 64, "contiguous"),   # few teams: parts of 4 teams, not BLOCK_M
    (7, 1, 1201, 6, 32, "contiguous"),  # a group of seven, an odd length
    (8, 4, 811, 3, 16, "kmeans"),       # KV heads with different numbers of teams
    (6, 2, 1200, 7, 8, "contiguous"),   # CAP = K+1: the bisection runs wherever more than K+1 clear the bound
])
def test_bound_selects_what_the_block_topk_selects(make_workload, target, hq, hkv, n, k, bound, parents):
    w, layout, by_topk, by_bound = _pair(make_workload, target, hq=hq, hkv=hkv, n=n, k=k, bound=bound, seed=n,
                                         parents=parents)
    if parents == "kmeans":
        assert len(set(layout.num_teams.tolist())) > 1, "the KV heads should differ in teams"
    assert by_bound.kernel_names[:3] == ("santa_score_bound", "santa_filter_bound", "santa_merge_bound")
    by_topk.run()
    _poison(by_bound)
    by_bound.run()
    _assert_same_selection(by_topk, by_bound)
    # the perturbed logits the score launch stored are those the top-k launch would have used,
    # and the part maxima their maxima over every SUB teams
    noise = by_bound.gumbel_noise().cpu()
    m = layout.num_teams
    sub = by_bound.part
    assert by_bound.m_min // sub >= 2 * by_bound.kpad and (sub == 16 or by_bound.m_min // (2 * sub) < 2 * by_bound.kpad)
    for h in range(by_bound.hq):
        mh = int(m[h // by_bound.group])
        log_n = torch.log(layout.length[h // by_bound.group, :mh].float())
        want = by_bound.scores[h, :mh].cpu() * by_bound.inv_sqrt_d + log_n + noise[h, :mh]
        y = by_bound.y[h].cpu()
        assert torch.allclose(y[:mh], want, rtol=1e-6, atol=1e-5)
        assert torch.all(y[mh:] == float("-inf"))
        padded = torch.full((by_bound.n_parts * sub,), float("-inf"))
        padded[: y.numel()] = y
        assert torch.equal(by_bound.part_max[h, : by_bound.n_parts].cpu(), padded.view(-1, sub).amax(dim=1))
    kept = _kept_at_first(by_bound)
    if bound == 8:
        assert int(kept.max()) > bound, "the bisection path was not exercised"
    if n > 1000:
        assert int(kept.max()) < layout.num_teams.max() // 2, "the bound keeps too many to be tested"
    assert torch.all(by_bound.owner == 2**31 - 1)
    out = by_bound.out.cpu().double()
    ref = _replay(w, layout, by_bound)
    assert (out - ref).abs().max() < 1e-5


@pytest.mark.parametrize("hq, hkv, n, k, bound, narrow, fresh, carry, suffix", [
    (4, 2, 300, 5, 64, 1, False, 0, 0),    # few teams, the half-row branch
    (7, 1, 1201, 6, 32, 0, True, 0, 0),    # a group of seven, fresh noise: the seed advances once per call
    (6, 2, 1200, 7, 8, 0, False, 0, 0),    # CAP = K+1: heads bisect
    (6, 2, 700, 6, 16, 0, True, 1, 0),     # the corrections' inputs carried from the filter
    (4, 2, 500, 5, 32, 1, False, 0, 7),    # an exact suffix after each head's rows
])
def test_per_head_lists_select_and_attend_what_the_union_does(make_workload, target, hq, hkv, n, k, bound, narrow,
                                                              fresh, carry, suffix):
    """merge.PER_HEAD: one merge program and one row list per query head, attended by programs of
    their own; the same selection and corrections as the union form for the same noise, an output
    equal to the fp64 replay of that selection, and a list per head of its own teams' rows."""
    overs = [{"topk": {"BLOCK_T": 32, "BOUND": bound, "CARRY": carry},
              "merge": {"NARROW": narrow, "PER_HEAD": per_head},
              "attend": {"BLOCK_R": 16, "NUM_SPLITS": splits}} for per_head, splits in ((0, 4), (1, 2))]
    w, layout, (by_union, by_head) = _ops(make_workload, target, overs, hq=hq, hkv=hkv, n=n, k=k, seed=n,
                                          fresh=fresh, suffix=suffix)
    assert by_head.per_head and not by_union.per_head
    for call in range(2):
        a = by_union.run().clone()
        _poison(by_head)
        for table in (by_head.u_rowpre, by_head.u_start, by_head.u_team):
            table.fill_(-7)
        by_head.u_logc.fill_(float("nan"))
        b = by_head.run().clone()
        assert int(by_head.seed[0]) == int(by_union.seed[0]) == n + (call + 1 if fresh else 0)
        for h in range(hq):
            assert by_head.sel_team[h, :k].tolist() == by_union.sel_team[h, :k].tolist(), (call, h)
            assert torch.allclose(by_head.sel_logc[h, :k], by_union.sel_logc[h, :k], rtol=1e-6, atol=1e-7)
            teams = by_head.sel_team[h, :k].long().cpu()
            kvh = h // (hq // hkv)
            assert int(by_head.u_count[h]) == k
            assert by_head.u_team[h, :k].cpu().tolist() == teams.tolist()
            assert by_head.u_start[h, :k].cpu().tolist() == layout.start[kvh, teams].tolist()
            ends = torch.cumsum(layout.length[kvh, teams], 0)
            assert by_head.u_rowpre[h, 1 : k + 1].cpu().tolist() == ends.tolist()
            assert int(by_head.u_rowpre[h, 0]) == 0 and set(by_head.u_rowpre[h, k + 1 :].tolist()) <= {int(ends[-1])}
        ref = _replay(w, layout, by_head, suffix=suffix)
        assert (b.cpu().double() - ref).abs().max() < 1e-5
        assert (a.double() - b.double()).abs().max() < 1e-5


def test_per_head_is_off_without_the_filter_and_said_so(make_workload, target):
    from kprof.methods import get_method

    w = make_workload(4, 2, 300, 16, seed=3, scale=2.0)
    for bound, want in ((0, False), (64, True)):
        prepared = get_method("santa").prepare(w, target, SMALL | {"topk": {"BLOCK_T": 32, "BOUND": bound},
                                                                   "merge": {"PER_HEAD": 1},
                                                                   "attend": {"BLOCK_R": 16, "NUM_SPLITS": 2}})
        assert prepared.details["merge_per_head"] is want
        op = prepared.handle
        assert op.u_start.shape[0] == (w.shape.hq if want else w.shape.hkv)  # one list per query or KV head
        op.out.fill_(float("nan"))
        assert torch.isfinite(prepared.run()).all()
        op.cfg["merge"]["PER_HEAD"] = 1 - op.cfg["merge"]["PER_HEAD"]
        with pytest.raises(ValueError, match="merge.PER_HEAD and attend.REDUCE size"):
            op.bind()  # the lists are sized for one form
    # with K = M attend streams whole KV heads: once per KV head, so the union form stays
    _, _, (every,) = _ops(make_workload, target, [{"topk": {"BOUND": 64}, "merge": {"PER_HEAD": 1}}], k=10**6)
    assert every.all_teams and not every.per_head


@pytest.mark.parametrize("per_head, suffix, hq, k", [(1, 0, 4, 4), (1, 7, 4, 3), (0, 0, 4, 3), (0, 5, 2, 3)])
def test_search_3_picks_from_registers_what_search_2_loads(make_workload, target, per_head, suffix, hq, k):
    """attend.SEARCH=3 (each row's entry start, base and, one head a list, log c picked from
    registers) gives the same bits as SEARCH=2's loads: partials and output, with an exact suffix,
    per head, in the union form, and in the union form with one head a list (hq = hkv: its log c
    table is strided by the padded group), and entries past each list's count poisoned with NaN
    log c and out-of-range rows (the pick must leave them out, not multiply them by zero)."""
    overs = [{"topk": {"BLOCK_T": 32, "BOUND": 32}, "merge": {"PER_HEAD": per_head},
              "attend": {"BLOCK_R": 16, "NUM_SPLITS": 4, "SEARCH": search}} for search in (2, 3)]
    _, _, (loads, picks) = _ops(make_workload, target, overs, hq=hq, hkv=2, n=500, d=32, k=k, seed=13, suffix=suffix)
    a = loads.run().clone()
    for name, launch in picks.stages():
        if name == "attend":  # past each list's count: junk the pick must leave out
            counts = picks.u_count.tolist()
            assert min(counts) < picks.umax, "nothing past the count to poison"
            for h, c in enumerate(counts):
                picks.u_start[h, c:] = 2**30
                picks.u_logc[h, c:] = float("nan")
        launch()
    assert torch.equal(picks.m_part, loads.m_part) and torch.equal(picks.acc, loads.acc)
    assert torch.equal(picks.out, a)


@pytest.mark.parametrize("per_head, splits", [(1, 16), (0, 4), (1, 1)])
def test_attend_reduce_combines_in_the_last_range_program(make_workload, target, per_head, splits):
    """attend.REDUCE: the last of a list's range programs combines its heads (two in the union
    form) and no reduce launch is made; over three calls with partials and output poisoned before
    each, the output equals the reduce launch's for the same noise and the fp64 replay, and every
    counter is back at zero for the next call."""
    base = {"topk": {"BLOCK_T": 32, "BOUND": 32}, "merge": {"PER_HEAD": per_head},
            "attend": {"BLOCK_R": 16, "NUM_SPLITS": splits}}
    in_attend = base | {"attend": base["attend"] | {"REDUCE": 1}}
    w, layout, (plain, fused) = _ops(make_workload, target, [base, in_attend], hq=4, hkv=2, n=500, d=32, k=4,
                                     seed=5)
    assert fused.per_head == bool(per_head)
    assert [name for name, _ in fused.stages()] == ["score", "topk", "merge", "attend"]
    assert "split_kv_combine" not in fused.kernel_names and "split_kv_combine" in plain.kernel_names
    for call in range(3):
        a = plain.run().clone()
        for t in (fused.out, fused.m_part, fused.l_part, fused.acc):
            t.fill_(float("nan"))
        b = fused.run().clone()
        assert int(fused.attend_done.count_nonzero()) == 0, call
        ref = _replay(w, layout, fused)
        assert (b.cpu().double() - ref).abs().max() < 1e-5, call
        assert (a.double() - b.double()).abs().max() < 1e-5, call


@pytest.mark.parametrize("block_d, skip_empty, search", [(16, 1, 2), (32, 0, 0)])
def test_reduce_by_column_blocks_and_only_the_ranges_with_rows(make_workload, target, block_d, skip_empty, search):
    """reduce.BLOCK_D and reduce.SKIP_EMPTY over per-head lists whose ranges are partly empty: the
    output equals the fp64 replay of the selection; with SKIP_EMPTY the empty ranges' values are
    poisoned between attend and reduce and never read (and attend.SEARCH=0 maps the per-head lists'
    rows as SEARCH=2 does)."""
    over = {"topk": {"BLOCK_T": 32, "BOUND": 32}, "merge": {"PER_HEAD": 1},
            "attend": {"BLOCK_R": 16, "NUM_SPLITS": 16, "SEARCH": search},
            "reduce": {"BLOCK_D": block_d, "SKIP_EMPTY": skip_empty}}
    w, layout, (op,) = _ops(make_workload, target, [over], hq=4, hkv=2, n=500, d=32, k=4, seed=11)
    op.out.fill_(float("nan"))
    for name, launch in op.stages():
        if name == "reduce":
            empty = op.m_part == float("-inf")
            assert 0 < int(empty.sum()) < empty.numel() and not empty.all(dim=1).any()
            if skip_empty:
                op.acc[empty] = float("nan")
        launch()
    ref = _replay(w, layout, op)
    assert (op.out.cpu().double() - ref).abs().max() < 1e-5


@pytest.mark.skipif(not triton_kernels.HAS_GATHER, reason="topk.CARRY needs tl.gather")
@pytest.mark.parametrize("hq, hkv, n, k, bound, select", [
    (7, 1, 1201, 6, 32, 1),
    (6, 2, 1200, 7, 8, 2),   # the bisection rewrites the rows: the merge reads the tables instead
    pytest.param(7, 1, 1201, 6, 32, 2, marks=pytest.mark.slow),
    pytest.param(6, 2, 1200, 7, 8, 1, marks=pytest.mark.slow),
])
def test_carried_values_give_the_tables_corrections(make_workload, target, hq, hkv, n, k, bound, select):
    """``topk.CARRY``: phi, lengths and first rows carried beside the keys (and the column carried
    in the key for a ranked selection) give the selection, corrections and union of the tables."""
    overs = [{"topk": {"BLOCK_T": 32, "BOUND": bound, "CARRY": carry}, "merge": {"SELECT": select}} for carry in (0, 1)]
    w, layout, (by_tables, by_bound) = _ops(make_workload, target, overs, hq=hq, hkv=hkv, n=n, k=k, seed=n + 1)
    assert by_bound.carry and not by_tables.carry
    by_tables.run()
    _poison(by_bound)
    for t in (by_bound.bound_phi, by_bound.bound_len, by_bound.bound_start):
        t.fill_(-7)
    by_bound.run()
    _assert_same_selection(by_tables, by_bound)
    if bound == 8:
        assert int(_kept_at_first(by_bound).max()) > bound, "the bisection path was not exercised"
    else:  # the filter's rows hold what the tables hold for every kept team
        for h in range(by_bound.hq):
            c = int(min(_kept_at_first(by_bound)[h], by_bound.bound))
            team = (by_bound.bound_keys[h, :c] & 0xFFFFFFFF).long().cpu()
            kvh = h // by_bound.group
            assert torch.equal(by_bound.bound_len[h, :c].cpu(), by_bound.arts.team_len[kvh].cpu()[team])
            assert torch.equal(by_bound.bound_start[h, :c].cpu(), by_bound.arts.team_start[kvh].cpu()[team])
            n = by_bound.arts.team_len[kvh].cpu()[team].float()
            phi = by_bound.scores[h].cpu()[team] * by_bound.inv_sqrt_d + torch.log(n)
            assert torch.allclose(by_bound.bound_phi[h, :c].cpu(), phi, rtol=1e-6, atol=1e-6)
    out = by_bound.out.cpu().double()
    ref = _replay(w, layout, by_bound)
    assert (out - ref).abs().max() < 1e-5


@pytest.mark.slow
def test_the_merge_cut_after_its_selection_selects_what_the_whole_merge_does(make_workload, target):
    """``PHASES`` (scripts/probe_merge_phases.py): every cut compiles and runs, and the cut after
    the selection stores the selection the whole merge stores."""
    _, _, (op,) = _ops(make_workload, target, [{"topk": {"BLOCK_T": 32, "BOUND": 32}}], hq=7, hkv=1, n=1201, k=6)
    op.run()
    want = op.sel_team[:, : op.k].clone()
    for phases in (1, 3, 2):
        op.sel_team.fill_(-1)
        op.launch_score()
        op.launch_topk()
        op.launch_merge.replaced(PHASES=phases)()
    assert torch.equal(op.sel_team[:, : op.k], want)


def test_noise_drawn_ahead_is_the_noise_the_score_launch_draws(make_workload, target):
    """``score.AHEAD``: the table drawn when the operator is built gives the perturbed logits, bit
    for bit, the score launch's own draws give; the launch reads it (a zeroed table changes them)
    only while it holds the running seed (a table of another seed is drawn again)."""
    overs = [{"topk": {"BLOCK_T": 32, "BOUND": 32}, "score": {"BLOCK_M": 16, "AHEAD": ahead}} for ahead in (0, 1)]
    w, layout, (drawn, ahead) = _ops(make_workload, target, overs, hq=7, hkv=1, n=1201, k=6, seed=4)
    drawn.run()
    _poison(ahead)
    ahead.run()
    m = int(layout.num_teams.max())
    assert torch.equal(ahead.y[:, :m], drawn.y[:, :m])
    _assert_same_selection(drawn, ahead)
    assert torch.equal(ahead.out, drawn.out)
    ahead.noise_table.zero_()
    ahead.launch_score()
    assert not torch.equal(ahead.y[:, :m], drawn.y[:, :m]), "the score launch did not read the table"
    ahead.noise_seeds[0] = -1
    ahead.launch_score()
    assert torch.equal(ahead.y[:, :m], drawn.y[:, :m]), "a table of another seed was used"


@pytest.mark.parametrize("philox", [4, pytest.param(1, marks=pytest.mark.slow)])
def test_fresh_noise_drawn_ahead_by_the_merge_follows_the_seed(make_workload, target, monkeypatch, philox):
    """With fresh noise the merge's extra programs draw the next call's table (here 16 teams at a
    time, so each drawer loops over several steps): call after call the score launch finds the
    table of its seed and selects what the block top-k selects, across a bind() too."""
    monkeypatch.setattr(step, "_DRAW_TEAMS", 16)
    overs = [{"topk": {"BLOCK_T": 32, "BOUND": cap}, "score": {"BLOCK_M": 16} | ({"AHEAD": 1, "PHILOX": philox}
                                                                                  if cap else {})} for cap in (0, 64)]
    _, layout, (by_topk, ahead) = _ops(make_workload, target, overs, hq=6, hkv=1, n=300, seed=3, fresh=True)
    m = int(layout.num_teams.max())
    drawers = ahead.launch_merge._given_grid[1] - 1
    assert 1 < drawers < triton.cdiv(m, 16), "the drawers should loop over several steps each"
    for call in range(3):
        if call == 2:
            ahead.bind()
        by_topk.run()
        ahead.run()
        assert torch.equal(ahead.sel_team[:, : ahead.k], by_topk.sel_team[:, : by_topk.k])
        assert torch.equal(ahead.seed, by_topk.seed) and int(ahead.noise_seeds[0]) == int(ahead.seed[0])
        assert torch.equal(ahead.noise_table[:, :m], ahead.gumbel_noise()[:, :m])


def test_one_philox_call_per_team_draws_the_same_noise(make_workload, target):
    """``score.PHILOX=1`` (each team its own Philox call) stores the perturbed logits of PHILOX=4."""
    overs = [{"topk": {"BLOCK_T": 32, "BOUND": 32}, "score": {"BLOCK_M": 16, "PHILOX": p}} for p in (4, 1)]
    _, _, (joined, own) = _ops(make_workload, target, overs, hq=7, hkv=1, n=1201, k=6, seed=4)
    for op in (joined, own):
        op.y.fill_(float("nan"))
        op.launch_score()
    assert torch.isfinite(own.y[:, : int(own.arts.num_teams.max())]).all()
    assert torch.equal(own.y, joined.y)
    assert torch.equal(own.part_max[:, : own.n_parts], joined.part_max[:, : joined.n_parts])


@pytest.mark.slow
def test_a_filter_run_without_its_merge_leaves_the_next_call_exact(make_workload, target):
    """Stage timings run launches 1-2 without the merge: the next call must not see their appends."""
    _, _, by_topk, by_bound = _pair(make_workload, target, hq=7, hkv=1, n=1201, k=6, bound=256, seed=12)
    by_topk.run()
    for _ in range(2):
        by_bound.launch_score()
        by_bound.launch_topk()
    by_bound.run()
    _assert_same_selection(by_topk, by_bound)


@pytest.mark.parametrize("over, fix", [
    ({"merge": {"SELECT": 3}}, "merge.SELECT=1"),
    ({"score": {"BLOCK_M": 16, "PHILOX": 1}, "topk": {"BLOCK_T": 32, "BOUND": 0}}, "set topk.BOUND"),
    ({"topk": {"BLOCK_T": 32, "BOUND": 64, "SELECT": 2}}, "set topk.BOUND=0"),
])
def test_forms_the_filter_cannot_run_are_refused(make_workload, target, over, fix):
    """merge.SELECT=3 would union in the filter's atomic append order (not fixed from call to call);
    score.PHILOX has no noise to draw without the filter; the block top-k's selection does not run
    with it (a tune would time one form once per unused value)."""
    with pytest.raises(ConfigError, match=fix):
        _ops(make_workload, target, [{"topk": {"BLOCK_T": 32, "BOUND": 64}} | over])


def test_fresh_noise_advances_the_same_way(make_workload, target):
    _, _, by_topk, by_bound = _pair(make_workload, target, hq=6, hkv=2, n=300, seed=3, fresh=True)
    firsts = []
    for _ in range(3):
        by_topk.run()
        by_bound.run()
        assert torch.equal(by_bound.sel_team[:, : by_bound.k], by_topk.sel_team[:, : by_topk.k])
        assert torch.equal(by_bound.seed, by_topk.seed)
        firsts.append(by_bound.sel_team[:, : by_bound.k].clone())
    assert not torch.equal(firsts[0], firsts[1])


@pytest.mark.parametrize("hq, hkv, n, k, bound, seed, paths, select", [
    (7, 1, 1201, 6, 32, 1201, ["half"], 1),             # at most 9 kept: every group under CAP/2 = 16
    (6, 2, 1200, 7, 16, 11, ["whole", "whole"], 1),     # 15 and 12 kept, over CAP/2 = 8
    (6, 2, 1200, 3, 8, 1200, ["half", "whole"], 1),     # 4 and 6 kept around CAP/2 = 4: one group each way
    (6, 2, 1200, 3, 8, 1200, ["half", "whole"], 0),     # the same by full sorts
    (6, 2, 1200, 3, 8, 1200, ["half", "whole"], 2),     # and by radix select
    (6, 2, 1200, 3, 8, 7, ["whole", "whole"], 1),       # 5 and 5 kept: one over CAP/2
])
def test_narrow_selects_what_the_whole_row_selects(make_workload, target, monkeypatch, hq, hkv, n, k, bound, seed,
                                                   paths, select):
    """``merge.NARROW``: a group that kept at most CAP/2 teams selects from half its rows, another
    from the whole rows; both give the selection and union of a merge that always reads the whole.
    Through the interpreter the branch each group took is seen in the width the selection got."""
    overs = [{"topk": {"BLOCK_T": 32, "BOUND": bound}, "merge": {"NARROW": narrow, "SELECT": select}}
             for narrow in (0, 1)]
    w, layout, (by_rows, by_half) = _ops(make_workload, target, overs, hq=hq, hkv=hkv, n=n, k=k, seed=seed)
    assert by_half.narrow and not by_rows.narrow
    by_rows.run()
    _poison(by_half)
    widths = []
    if target.device.type == "cpu":  # the interpreter calls the merge's helpers as Python functions
        select_keys = bound_select.select_keys

        def recorded(cand, *args):
            widths.append(int(cand.shape[1]))
            return select_keys(cand, *args)

        monkeypatch.setattr(bound_select, "select_keys", recorded)
    by_half.run()
    _assert_same_selection(by_rows, by_half)
    group_max = _kept_at_first(by_half).view(hkv, -1).max(dim=1).values
    assert ["half" if int(c) <= by_half.bound // 2 else "whole" for c in group_max] == paths
    if target.device.type == "cpu":
        assert widths == [by_half.bound // 2 if path == "half" else by_half.bound for path in paths]
    ref = _replay(w, layout, by_half)
    assert (by_half.out.cpu().double() - ref).abs().max() < 1e-5


def test_narrow_is_off_with_carry_and_where_half_a_row_is_too_short(make_workload, target):
    """The default NARROW=1 gives way to topk.CARRY (its values sit in the rows' columns) and to a
    cap under 2 x KPAD, so neither needs merge.NARROW=0 spelled out."""
    _, _, (op,) = _ops(make_workload, target, [{"topk": {"BLOCK_T": 32, "BOUND": 64, "CARRY": 1}}])
    assert op.carry and not op.narrow
    _, _, (op,) = _ops(make_workload, target, [{"topk": {"BLOCK_T": 32, "BOUND": 8}}], k=5)
    assert op.bound == op.kpad == 8 and not op.narrow
    _, _, (op,) = _ops(make_workload, target, [{"topk": {"BLOCK_T": 32, "BOUND": 16}}], k=5)
    assert op.narrow


def test_bind_follows_ahead_and_narrow(make_workload, target):
    """Both are launch parameters that size no buffer: a bind after changing them applies them."""
    _, _, (op,) = _ops(make_workload, target, [{"topk": {"BLOCK_T": 32, "BOUND": 16}}], k=5)
    assert op.ahead and op.narrow
    op.cfg["score"]["AHEAD"], op.cfg["merge"]["NARROW"] = 0, 0
    op.bind()
    assert not op.ahead and not op.narrow


@pytest.mark.parametrize("ahead", [0, 1])
def test_without_the_filter_ahead_and_narrow_are_ignored_and_said_so(make_workload, target, ahead):
    """The block top-k draws its own noise and runs its own merge: score.AHEAD and merge.NARROW,
    whatever their values, do nothing there, and the operator reports them off."""
    overs = [{"topk": {"BLOCK_T": 32, "BOUND": 0}, "score": {"AHEAD": ahead}, "merge": {"NARROW": 1}}]
    _, _, (op,) = _ops(make_workload, target, overs)
    assert not op.ahead and not op.narrow


@pytest.mark.parametrize("narrow", [0, 1])
def test_tied_logits_fall_back_to_the_key_order(make_workload, target, narrow):
    """Every team of head 0 ties at one logit: all clear the bound, more than CAP, and the
    bisection over (logit, team) keys must leave exactly the K+1 highest team indices (with
    ``merge.NARROW``, through its branch for groups that kept more than CAP/2)."""
    overs = [{"topk": {"BLOCK_T": 32, "BOUND": 16}, "merge": {"NARROW": narrow}}]
    _, _, (by_bound,) = _ops(make_workload, target, overs, hq=4, hkv=2, n=300, k=5, seed=8)
    assert by_bound.narrow == bool(narrow)
    by_bound.launch_score()
    mh = int(by_bound.arts.num_teams[0])
    by_bound.y[0, :mh] = 0.5
    by_bound.part_max[0] = torch.where(by_bound.part_max[0] > float("-inf"), 0.5, float("-inf"))
    by_bound.launch_topk()
    assert int(by_bound.bound_count[0]) == mh > 16
    by_bound.launch_merge()
    assert by_bound.sel_team[0, : by_bound.k].tolist() == list(range(mh - 1, mh - 1 - by_bound.k, -1))


def test_the_cap_rises_to_the_k_plus_one_working_set(make_workload, target):
    _, _, _, by_bound = _pair(make_workload, target, hq=4, hkv=2, n=300, k=9, bound=8, seed=2)
    assert by_bound.kpad == 16 and by_bound.bound == 16 and by_bound.bound_keys.shape[1] == 16


def test_part_size_leaves_twice_the_working_set_of_parts():
    assert part_size(64, 5474, 32) == 64      # the 32K workload: 85 parts of 64
    assert part_size(64, 1370, 32) == 16      # 8K: 64-team parts would leave 21 < K+1
    assert part_size(64, 40, 32) == 1         # too few teams for any part: single teams
    assert part_size(16, 10_000, 8) == 16     # never above BLOCK_M


@pytest.mark.gpu
@pytest.mark.parametrize("carry, block_m, ahead, narrow, per_head, reduce", [
    (0, 16, 0, 0, 0, 0), (1, 16, 0, 0, 0, 0), (0, 64, 0, 0, 0, 0), (0, 64, 1, 0, 0, 0), (0, 64, 1, 1, 0, 0),
    (0, 16, 0, 1, 0, 0), (0, 64, 1, 1, 1, 0), (0, 16, 0, 0, 1, 0), (0, 64, 1, 1, 1, 1), (0, 16, 0, 0, 0, 1)])
def test_gpu_bound_matches_the_block_topk_eager_and_replayed(make_workload, target, carry, block_m, ahead, narrow,
                                                             per_head, reduce):
    """At the 32K workload's shape family (G = 7, K = 31, d = 128) with fresh noise: the same
    selection as the block top-k call after call, with and without PDL, and from a CUDA graph.
    BLOCK_M = 64 at this length takes parts of 32 teams, two per score tile (8K's default form);
    ``score.AHEAD`` reads the noise the merge of the call before drew; ``merge.NARROW`` selects
    from half the rows where a group kept at most 64; ``merge.PER_HEAD`` merges and attends each
    query head on its own (its noise drawers draw per head); ``attend.REDUCE`` combines in attend."""
    kw = dict(hq=28, hkv=4, n=8192, d=128, k=31, dtype=torch.float16, seed=5, fresh=True)
    for pdl in (False, True):
        overs = [{"topk": {"BLOCK_T": 32, "BOUND": bound} | ({"CARRY": carry} if bound else {}),
                  "score": {"BLOCK_M": block_m} | ({"AHEAD": ahead} if bound else {}),
                  "merge": {"NARROW": narrow if bound else 0, "PER_HEAD": per_head if bound else 0},
                  "attend": {"REDUCE": reduce if bound else 0}}
                 for bound in (0, 128)]
        w, layout, (by_topk, by_bound) = _ops(make_workload, target, overs, pdl=pdl, **kw)
        assert by_bound.part == (32 if block_m == 64 else block_m)
        for call in range(3):
            if call == 1:  # as stage timings do: launches 1-2 alone before a call
                by_bound.launch_score()
                by_bound.launch_topk()
            by_bound.out.fill_(float("nan"))
            a, b = by_topk.run().clone(), by_bound.run().clone()
            assert torch.equal(by_topk.sel_team[:, : by_topk.k], by_bound.sel_team[:, : by_bound.k])
            if ahead:  # the merge drew the table the next call's score launch reads
                assert int(by_bound.noise_seeds[0]) == int(by_bound.seed[0])
                m = int(layout.num_teams.max())
                assert torch.equal(by_bound.noise_table[:, :m], by_bound.gumbel_noise()[:, :m])
            assert torch.isfinite(b).all() and (a.double() - b.double()).abs().max() < 2e-3
        ref = _replay(w, layout, by_bound)
        assert ((b.cpu().double() - ref).norm() / ref.norm()) < 2e-2
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        by_bound.run()
        with torch.cuda.graph(graph, stream=stream):
            by_bound.run()
    torch.cuda.current_stream().wait_stream(stream)
    by_topk.run()
    for _ in range(2):
        by_bound.out.fill_(float("nan"))
        graph.replay()
        by_topk.run()
        torch.cuda.synchronize()
        assert torch.equal(by_topk.sel_team[:, : by_topk.k], by_bound.sel_team[:, : by_bound.k])
        assert torch.isfinite(by_bound.out).all()


@pytest.mark.gpu
@pytest.mark.parametrize("per_head", [1, 0])
def test_gpu_attend_reduce_gives_the_same_bits_in_every_call(make_workload, target, per_head):
    """A last-arrival combine that read a partial before its program stored it, or a counter left
    non-zero, shows as a wrong or unwritten row in some call: 200 eager calls and 50 graph replays
    at the 32K shape family, partials and output poisoned before each, close to the reduce launch's
    output and bit-equal to the first call's. On a GPU only (the interpreter runs programs in grid
    order, so its last to arrive is always the last range); it finds a missing barrier or a relaxed
    atomic when they go wrong often, not a race that is rare."""
    base = {"topk": {"BLOCK_T": 32, "BOUND": 128}, "merge": {"PER_HEAD": per_head},
            "attend": {"BLOCK_R": 32, "NUM_SPLITS": 64}}
    overs = [base, base | {"attend": base["attend"] | {"REDUCE": 1}}]
    _, _, (plain, fused) = _ops(make_workload, target, overs, hq=28, hkv=4, n=8192, d=128, k=31,
                                dtype=torch.float16, seed=9, pdl=True)
    want = fused.run().clone()  # then every call and replay must give these same bits
    assert torch.isfinite(want).all() and (want.double() - plain.run().double()).abs().max() < 2e-3
    poisoned = (fused.out, fused.m_part, fused.l_part, fused.acc)
    for call in range(200):
        for t in poisoned:
            t.fill_(float("nan"))
        got = fused.run()
        assert torch.equal(got, want), f"call {call}"
    assert int(fused.attend_done.count_nonzero()) == 0
    replay_graph = capture_graph(fused.run, target.device)
    for replay in range(50):
        for t in poisoned:
            t.fill_(float("nan"))
        replay_graph()
        torch.cuda.synchronize()
        assert torch.equal(fused.out, want), f"replay {replay}"
