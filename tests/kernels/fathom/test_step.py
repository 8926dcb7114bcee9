"""The Fathom decode step: top-k with forced tokens, union, row fetch, exact attention."""

import math

import pytest
import torch

from kprof.core.config_space import resolve_method_config
from kprof.kernels.fathom.reference import approximate_scores
from kprof.kernels.fathom.scan import water
from kprof.kernels.fathom.step import LAUNCH_SPACES, RECENT_TOKENS, SINK_TOKENS, FathomDecode
from kprof.methods import get_method


def _decode(make_workload, target, k_top=48, n=256, seed=0, prune=2, attend=None, fetch=None, union=1, lists=0,
            **kw):
    w = make_workload(4, 2, n, 32, seed=seed, scale=2.0)
    cfg = resolve_method_config(LAUNCH_SPACES, {"gather": {"CHUNK": 256}, "topk": {"PRUNE": prune, "UNION": union},
                                                "union": {"GATHER": lists}, "attend": attend or {},
                                                "fetch": fetch or {}}, w.shape)
    return w, FathomDecode(w.q, w.k, w.v, water(40), k_top, cfg, target.device, **kw)


@pytest.mark.parametrize("n,prune,used", [(256, 2, 0), (4100, 0, 0), (4100, 1, 1), (4100, 2, 2)])
def test_winners_are_the_top_k_of_the_approximate_scores_with_forced_tokens(make_workload, target, n, prune, used):
    """One top-k over each row, and the chunk-pruned top-k as torch launches or as one Triton
    launch (4,100 tokens: 129 chunks of 32, the last one partial; at 256 tokens 8 chunks cannot
    hold k = 48 winners, so pruning is not used) give the exact top-k, each head's ascending."""
    w, op = _decode(make_workload, target, n=n, prune=prune)
    assert op.prune == used
    op.top_idx.fill_(-3)
    op.run()
    win = op.winners()
    assert torch.all(win[:, 1:] > win[:, :-1]), "ascending: the union merges sorted lists"
    forced = set(range(SINK_TOKENS)) | set(range(n - RECENT_TOKENS, n))
    for h in range(4):
        kvh = h // 2
        depths = op.scan.depth[kvh].cpu()
        s = approximate_scores(w.q[h : h + 1], op.store.planes[kvh].cpu(), op.store.scales[kvh].cpu(), depths, n)[0]
        s[list(forced)] = float("inf")
        expected = set(torch.topk(s, 48).indices.tolist())
        assert set(win[h].tolist()) == expected
        assert forced <= set(win[h].tolist())


@pytest.mark.parametrize("n,prune,gather,paired", [(256, 2, "copy", 1), (4100, 2, "fused", 1), (4100, 1, "copy", 0),
                                                    (256, 2, "fused", 0)])
def test_union_fetches_each_distinct_row_once_and_heads_see_their_own_rows(make_workload, target, n, prune, gather,
                                                                           paired):
    """Each distinct row is copied once, K and V (as one 2d run, or as two d-wide ones)."""
    w, op = _decode(make_workload, target, n=n, seed=2, prune=prune, gather=gather, fetch={"PAIRED": paired})
    op.union_k.fill_(float("nan"))
    op.union_v.fill_(float("nan"))
    op.head_slots.fill_(-1)
    op.run()
    win = op.winners()
    for kvh in range(2):
        rows = win[2 * kvh : 2 * kvh + 2].flatten()
        assert int(op.first[kvh].sum()) == len(set(rows.tolist()))
        for h in (2 * kvh, 2 * kvh + 1):
            slots = op.head_slots[h].cpu()
            assert torch.equal(op.union_k[kvh, slots].cpu(), w.k[kvh, win[h]])
            assert torch.equal(op.union_v[kvh, slots].cpu(), w.v[kvh, win[h]])


@pytest.mark.slow
def test_the_union_built_inside_the_top_k_equals_the_union_launch(make_workload, target):
    """topk.UNION=1: the last top-k program of each KV head merges the group's lists; its sorted
    rows, first flags, slots and head slots equal the union launch's (poisoned before each run),
    and its arrival count is back at zero after every run. union.GATHER=1 (the searches in a
    register copy of the lists), in either place, gives the same."""
    runs = {}
    for union, lists in ((0, 0), (1, 0), (1, 1), (0, 1)):
        w, op = _decode(make_workload, target, n=4100, seed=4, union=union, lists=lists)
        assert op.union_in_topk == bool(union)
        assert [name for name, _ in op.stages()] == ["plan", "scan", "topk", *(["union"] if not union else []),
                                                     "fetch", "attend"]
        for _ in range(2):
            op.sorted_rows.fill_(-9)
            op.first.fill_(True)
            op.slot.fill_(-9)
            op.head_slots.fill_(-9)
            op.run()
            assert op.arrived.tolist() == [0, 0]
        runs[union, lists] = [t.cpu() for t in (op.sorted_rows, op.first, op.slot, op.head_slots, op.out)]
    for other in ((1, 0), (1, 1), (0, 1)):
        for a, b in zip(runs[0, 0], runs[other]):
            assert torch.equal(a, b), other


@pytest.mark.parametrize("gather,block_r", [("copy", 32), ("fused", 32), ("copy", 16), ("copy", 128)])
def test_output_is_exact_attention_over_each_heads_winners(make_workload, target, gather, block_r):
    """k = 48 winners in tiles of 32 (a partial second tile), 16 (three) or 128 (one, mostly dead)."""
    w, op = _decode(make_workload, target, seed=4, gather=gather, attend={"BLOCK_R": block_r})
    op.part_acc.fill_(float("nan"))
    op.out.fill_(float("nan"))
    out = op.run().cpu().double()
    win = op.winners()
    for h in range(4):
        kk, vv = w.k[h // 2, win[h]].double(), w.v[h // 2, win[h]].double()
        p = torch.softmax(kk @ w.q[h].double() / math.sqrt(32), 0)
        assert torch.allclose(out[h], p @ vv, atol=1e-5)


def test_k_must_hold_the_forced_tokens(make_workload, target):
    w = make_workload(4, 2, 256, 32)
    cfg = resolve_method_config(LAUNCH_SPACES, {}, w.shape)
    with pytest.raises(ValueError, match="sink"):
        FathomDecode(w.q, w.k, w.v, water(40), 16, cfg, target.device)


@pytest.mark.parametrize("name, bits", [("scan32", 136.0), ("sparq16", 68.0), ("scan-full", 544.0)])
def test_baseline_byte_accounting(make_workload, target, name, bits):
    w = make_workload(4, 2, 128, 128, seed=1)
    p = get_method(f"{name}:k=40,gather.CHUNK=256").prepare(w, target)
    assert p.details["scan_bits_per_token"] == [bits, bits]


def test_fathom_budget_bounds_the_bits(make_workload, target):
    w = make_workload(4, 2, 128, 128, seed=1)
    w.k *= torch.linspace(0.05, 3.0, 128)
    p = get_method("fathom:budget=48,k=40,gather.CHUNK=256").prepare(w, target)
    for b in p.details["scan_bits_per_token"]:
        assert 40 <= b <= 48 + 0.25 * 48


def test_gather_option_picks_the_fused_scan_and_rejects_unknown_values(make_workload, target):
    from kprof.core.errors import ConfigError

    w = make_workload(4, 2, 128, 128, seed=1)
    p = get_method("scan32:gather=fused,k=40").prepare(w, target)
    assert p.details["gather"] == "fused"
    # 128 tokens cannot hold k = 40 chunks: the torch top-k runs, and the union launches on its own
    assert [s.name for s in p.stages] == ["plan", "scan", "topk", "union", "fetch", "attend"]
    assert p.details["scan_bits_per_token"] == [136.0, 136.0], "the same bytes as the staged gather"
    with pytest.raises(ConfigError, match="gather='stream': choose fused or copy"):
        get_method("fathom:gather=stream")


def test_pieces_option_takes_range_sizes_that_must_cover_the_kv_heads(make_workload, target):
    from kprof.core.errors import ConfigError

    w = make_workload(4, 2, 128, 32, seed=1)
    assert get_method("fathom:pieces=1+1").pieces == (1, 1)
    with pytest.raises(ConfigError, match=r"pieces=2\+1: the range sizes must add up to the workload's 2 KV heads"):
        get_method("fathom:pieces=2+1,gather.CHUNK=256").prepare(w, target)
    with pytest.raises(ConfigError, match="every range needs at least one KV head"):
        get_method("fathom:pieces=2+0")
    with pytest.raises(ConfigError, match=r"give a count \(4\) or range sizes"):
        get_method("fathom:pieces=2+x")


def test_methods_on_one_workload_share_one_residency_while_a_step_holds_it(make_workload, target):
    import gc

    from kprof.kernels.fathom.step import FathomResidency

    w = make_workload(4, 2, 128, 32, seed=3).to(target.device)  # as a comparison loads it: once
    a = get_method("fathom:k=40").prepare(w, target).handle
    b = get_method("scan32:k=40").prepare(w, target).handle
    c = get_method("scan32:k=40,rows=hbm").prepare(w, target).handle
    assert a.store is b.store and a.k_rows is b.k_rows, "one index and one row copy for both methods"
    assert c.store is not a.store, "another placement is another residency"
    other = get_method("scan32:k=40").prepare(make_workload(4, 2, 128, 32, seed=4).to(target.device), target).handle
    assert other.store is not a.store
    w.v.add_(1.0)  # the cache changed in place: its residency is stale
    d = get_method("scan32:k=40").prepare(w, target).handle
    assert d.store is not a.store and torch.equal(d.v_rows.cpu(), w.v.cpu())
    before = len(FathomResidency._shared)
    del a, b, c, d
    gc.collect()
    assert len(FathomResidency._shared) == before - 2, "entries go with the last step holding them"
    assert other.residency in FathomResidency._shared.values()


def test_rows_longer_than_the_triton_top_k_holds_take_the_torch_launches(make_workload, target, monkeypatch):
    import kprof.kernels.fathom.step as decode

    monkeypatch.setattr(decode, "MAX_TRITON_TOPK_ROW", 64)  # 4,100 tokens: 129 chunks > 64
    w, op = _decode(make_workload, target, n=4100, prune=2)
    assert op.prune == 1
    op.run()
    win = op.winners()
    forced = set(range(SINK_TOKENS)) | set(range(4100 - RECENT_TOKENS, 4100))
    for h in range(4):
        s = approximate_scores(w.q[h : h + 1], op.store.planes[h // 2].cpu(), op.store.scales[h // 2].cpu(),
                               op.scan.depth[h // 2].cpu(), 4100)[0]
        s[list(forced)] = float("inf")
        assert set(win[h].tolist()) == set(torch.topk(s, 48).indices.tolist())


@pytest.mark.slow
@pytest.mark.parametrize("gather", ["fused", "copy"])
def test_a_step_pipelined_over_head_ranges_equals_the_unpipelined_step(make_workload, target, gather):
    """Each piece's selection launches over views of its heads' buffers (on a GPU, on a second
    stream beside the scan, its top-k waiting for the scan's count of its heads): winners, union
    rows and output must equal one piece's bit for bit, for an even count of ranges over 5 KV heads
    (sizes 2 and 3), more pieces than heads, and ranges of given sizes."""
    w = make_workload(10, 5, 4100, 32, seed=9, scale=2.0)
    cfg = resolve_method_config(LAUNCH_SPACES, {"gather": {"CHUNK": 256}}, w.shape)
    results = []
    for pieces in (1, 2, 8, (3, 1, 1)):
        op = FathomDecode(w.q, w.k, w.v, water(40), 48, cfg, target.device, gather=gather, pieces=pieces)
        sizes = [p.n_kv for p in op.pieces]
        assert [p.kv0 for p in op.pieces] == [sum(sizes[:i]) for i in range(len(sizes))] and sum(sizes) == 5
        assert op.prune == 2 and min(sizes) >= 1, "contiguous, non-empty"
        if isinstance(pieces, tuple):
            assert tuple(sizes) == pieces
        else:
            assert len(sizes) == min(pieces, 5) and max(sizes) - min(sizes) <= 1, "even"
        op.out.fill_(float("nan"))
        op.top_idx.fill_(-1)
        op.union_k.fill_(float("nan"))
        out = op.run().cpu()
        assert op.wait_expiries() == 0 and op.faults() == []
        results.append((out, op.winners(), op.first.cpu(), op.union_k.cpu()))
    # a wait that gave up (the count the top-k adds to) is a fault of the step's runs
    op.scan.wait_expiries.fill_(2)
    assert len(op.faults()) == 1 and op.faults()[0].startswith("2 pipelined top-k wait(s) gave up")
    assert torch.isfinite(results[0][0]).all()
    for out, win, first, union_k in results[1:]:
        assert torch.equal(out, results[0][0])
        assert torch.equal(win, results[0][1])
        assert torch.equal(first, results[0][2])
        for kvh in range(5):  # the distinct rows fill union slots 0..count-1
            count = int(first[kvh].sum())
            assert torch.equal(union_k[kvh, :count], results[0][3][kvh, :count])


@pytest.mark.gpu
@pytest.mark.parametrize("pieces", [4, (3, 3, 1, 1)])
def test_the_pipelined_step_replays_from_a_graph_and_under_another_stream(make_workload, pieces):
    """The two-stream step captured in a CUDA graph (as ``--graph`` times it) and replayed twice,
    and run back to back under a non-default stream, gives the unpipelined step's output exactly."""
    from kprof.measure.harness import capture_graph as capture

    device = torch.device("cuda")
    w = make_workload(16, 8, 20000, 64, seed=13, scale=2.0).to(device)
    cfg = resolve_method_config(LAUNCH_SPACES, {}, w.shape)
    ref = FathomDecode(w.q, w.k, w.v, water(40), 256, cfg, device, pieces=1).run().clone()
    op = FathomDecode(w.q, w.k, w.v, water(40), 256, cfg, device, pieces=pieces)
    assert op.side is not None and len(op.pieces) == 4 and op.scan.reserve > 0
    op.out.fill_(float("nan"))
    assert torch.equal(op.run(), ref)
    # every tile counted once (the scan's scalar atomics run once per program), queue emptied,
    # no top-k gave up waiting
    assert op.scan.scanned.tolist() == [op.scan.tiles_per_head] * 8 and op.scan.work[:2].tolist() == [0, 0]
    replay = capture(op.run, device)
    for _ in range(2):
        op.out.fill_(float("nan"))
        replay()
        assert torch.equal(op.out, ref)
    stream = torch.cuda.Stream(device)
    with torch.cuda.stream(stream):
        for _ in range(2):
            op.out.fill_(float("nan"))
            out = op.run().clone()
    torch.cuda.synchronize()
    assert torch.equal(out, ref)
    assert op.wait_expiries() == 0


def test_declared_bytes_are_the_scan_plus_each_kv_heads_distinct_winners(make_workload, target):
    w = make_workload(4, 2, 128, 128, seed=1)
    s, item = w.shape, w.dtype.itemsize
    qo = 2 * s.hq * s.d * item
    every = get_method("scan32:k=128,gather.CHUNK=256")
    p = every.prepare(w, target)
    p.run()
    scan = int(p.details["scan_bytes_per_step"])
    assert every.bytes_per_call(w, p) == scan + s.kv_bytes + qo  # k = N: every token wins
    some = get_method("scan32:k=40,gather.CHUNK=256")
    p = some.prepare(w, target)
    p.run()
    rows = (some.bytes_per_call(w, p) - scan - qo) // (2 * s.d * item)
    assert 2 * 40 <= rows <= 2 * 2 * 40  # per KV head: one head's 40 winners up to both heads' 80
    assert some.bytes_from_host(p) == ("host" in (p.details["index"], p.details["rows"]))
