"""santa with its merge folded into the topk launch and its reduce into the attend launch
(``topk.MERGE=1``, ``attend.COMBINE=1``): the same selections, corrections and output as the five
launches for the same noise, through the fp64 replay, with every buffer poisoned first."""

import pytest
import torch

from kprof.core.config_space import resolve_method_config
from kprof.kernels.santa.preparation import SantaSettings, build_layout, pack
from kprof.kernels.santa.reference import Selection, attention_with_selection
from kprof.kernels.santa.step import LAUNCH_SPACES, SantaDecode
from kprof.methods import get_method
from kprof.methods.dense_reference import dense_attention_fp64
from kprof.methods.validation import compare_outputs

FIVE = {"score": {"BLOCK_M": 16}, "topk": {"BLOCK_T": 32}, "attend": {"BLOCK_R": 16, "NUM_SPLITS": 8}}


def _folded(merge: int, combine: int, five=FIVE) -> dict:
    return five | {"topk": five["topk"] | {"MERGE": merge}, "attend": five["attend"] | {"COMBINE": combine}}


def _ops(make_workload, target, folded, hq=8, hkv=2, n=300, d=16, k=5, dtype=torch.float32, seed=0, fresh=False,
         five=FIVE, w=None, pdl=None):
    """The five-launch operator and a folded one on one workload and layout, same noise seed."""
    w = w if w is not None else make_workload(hq, hkv, n, d, dtype, seed=seed, scale=2.0)
    layout = build_layout(w.k, SantaSettings(p=8, r=2, s=8, parents="contiguous"))
    arts = pack(w.k.to(target.device), w.v.to(target.device), layout)
    q = w.q.to(target.device)
    ops = [SantaDecode(q, arts, k, resolve_method_config(LAUNCH_SPACES, cfg, w.shape), seed=seed, fresh=fresh,
                       pdl=pdl) for cfg in (five, folded)]
    return w, layout, *ops


def _run_poisoned(op):
    for t in (op.out, op.m_part, op.l_part, op.acc, op.scores, op.u_logc):
        t.fill_(float("nan"))
    op.cand.fill_(-1)
    op.u_rowpre.fill_(-1)
    return op.run().cpu()


def _same_as_five(w, layout, five, op, tol):
    out = _run_poisoned(op)
    teams, corr = op.selections()
    ref = attention_with_selection(w.q, w.k, w.v, layout.teams(), [Selection(t, c) for t, c in zip(teams, corr)])
    assert torch.isfinite(out).all(), "rows left unwritten"
    report = compare_outputs(out, ref, None)
    assert report.rel_error < tol, report
    five_out = _run_poisoned(five)
    five_teams, five_corr = five.selections()
    for h in range(op.hq):
        assert sorted(teams[h].tolist()) == sorted(five_teams[h].tolist()), h
        order, five_order = torch.argsort(teams[h]), torch.argsort(five_teams[h])
        assert torch.allclose(corr[h][order], five_corr[h][five_order], rtol=1e-5, atol=0), h
    assert compare_outputs(out, five_out.double(), tol).passed
    assert int(op.sync.abs().sum()) == 0, ("counts not reset", op.sync.nonzero().tolist())


@pytest.mark.parametrize("merge, combine, hq, hkv, n, dtype, tol", [
    (1, 1, 8, 2, 300, torch.float32, 1e-5),    # group 4, two KV heads
    (1, 1, 7, 1, 333, torch.float16, 1e-2),    # group 7, one KV head, an odd length
    (1, 1, 12, 4, 259, torch.bfloat16, 2e-2),  # group 3, four KV heads
    (1, 0, 7, 1, 333, torch.float16, 1e-2),    # each fold on its own
    (0, 1, 8, 2, 300, torch.float32, 1e-5),
    pytest.param(1, 0, 12, 4, 259, torch.bfloat16, 2e-2, marks=pytest.mark.slow),
    pytest.param(0, 1, 12, 4, 259, torch.bfloat16, 2e-2, marks=pytest.mark.slow),
])
def test_same_selections_corrections_and_output_as_five_launches(make_workload, target, merge, combine, hq, hkv, n,
                                                                  dtype, tol):
    w, layout, five, op = _ops(make_workload, target, _folded(merge, combine), hq=hq, hkv=hkv, n=n, dtype=dtype,
                               seed=3)
    assert op.n_blocks > 1  # several topk programs per head arrive before the merge
    assert len(op.launch_names) == 5 - merge - combine
    _same_as_five(w, layout, five, op, tol)


@pytest.mark.slow
def test_calls_in_a_row_reset_the_counts_and_fresh_noise_follows_five_launches(make_workload, target):
    w, layout, five, op = _ops(make_workload, target, _folded(1, 1), seed=9, fresh=True)
    for call in range(3):
        _same_as_five(w, layout, five, op, 1e-5)
        assert int(op.seed) == int(five.seed) == 9 + call + 1, call
    assert op.faults() == []


def test_a_merge_that_skipped_a_block_would_be_caught(make_workload, target):
    """The check above fails if the folded merge reads only some blocks' candidates."""
    w, layout, five, op = _ops(make_workload, target, _folded(1, 0), seed=3)
    _run_poisoned(five)
    op.ncand = op.kpad  # a merge that reads block 0's keys only
    op.bind()
    _run_poisoned(op)
    assert [sorted(t.tolist()) for t in op.selections()[0]] != [sorted(t.tolist()) for t in five.selections()[0]]


def test_k_equal_m_is_dense_attention(make_workload, target):
    w, _, _, op = _ops(make_workload, target, _folded(1, 1), k=10_000, seed=4)
    assert op.all_teams
    out = _run_poisoned(op).double()
    assert (out - dense_attention_fp64(w)).abs().max() < 1e-5
    assert int(op.sync.abs().sum()) == 0


def test_method_stages_and_kernels_follow_the_folds(make_workload, target):
    w = make_workload(8, 2, 400, 16, torch.float32, seed=1, scale=2.0)
    method = get_method("santa:p=8,r=2,s=8,parents=contiguous")
    prepared = method.prepare(w, target, _folded(1, 1))
    assert [name for name, _ in prepared.handle.stages()] == ["score", "topk", "attend"]
    assert prepared.expected_kernels == ("santa_score", "santa_topk_merge", "santa_attend")
    prepared.output.fill_(float("nan"))
    out = prepared.run()
    assert compare_outputs(out.cpu(), method.reference_for(w, prepared), 1e-5).passed
    assert prepared.faults() == []


@pytest.mark.gpu
@pytest.mark.parametrize("pdl", [False, True])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_gpu_many_calls_graph_replays_and_a_grid_beyond_residency(make_workload, target, dtype, pdl):
    """Real SMs: 20 eager calls with fresh noise against the five launches' selections and the fp64
    replay; graph replays on fresh queries; then 8 KV heads x 128 splits of 8 warps, more programs
    than fit at once, so the combiners' waits really wait."""
    tol = 1e-2 if dtype == torch.float16 else 2e-2
    gpu = {"topk": {"MERGE": 1}, "attend": {"COMBINE": 1}}
    w, layout, five, op = _ops(make_workload, target, gpu, hq=28, hkv=4, n=8192, d=128, k=31, dtype=dtype,
                               seed=2, fresh=True, five={}, pdl=pdl)
    assert op.q is five.q  # one query buffer: refilled in place, read by both
    for _ in range(20):
        _same_as_five(w, layout, five, op, tol)
    op.run()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        op.run()
    for replay in range(5):
        op.q.copy_(torch.randn_like(op.q) * 2.0)
        for t in (op.out, op.m_part, op.acc):
            t.fill_(float("nan"))
        graph.replay()
        five.seed.copy_(op.seed - 1)
        want = _run_poisoned(five)
        assert compare_outputs(op.out.cpu(), want.double(), tol).passed, replay
    big = {"topk": {"MERGE": 1}, "attend": {"COMBINE": 1, "NUM_SPLITS": 128, "num_warps": 8}}
    w = make_workload(32, 8, 16384, 128, dtype, seed=4, scale=2.0)
    w, layout, five, op = _ops(make_workload, target, big, k=31, w=w, five={"attend": {"NUM_SPLITS": 128}}, pdl=pdl)
    for _ in range(4):
        _same_as_five(w, layout, five, op, tol)
    assert op.faults() == []
