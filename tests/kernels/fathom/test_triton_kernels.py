"""Fathom plan/gather/scan launches against the reference (Triton interpreter on CPU)."""

import pytest
import torch

from kprof.core.config_space import resolve_method_config
from kprof.kernels.fathom.reference import approximate_scores, importance, water_fill
from kprof.kernels.fathom.scan import LAUNCH_SPACES, FathomScan
from kprof.kernels.fathom.store import FathomStore


def _host_store(k, target):
    """The index where the host-index regime keeps it: pinned host memory on a GPU (the gather
    reads it over PCIe), plain CPU memory in the interpreter."""
    store = FathomStore.build(k)
    return store.pinned() if target.is_gpu else store


def _scan(make_workload, target, budget, hq=4, hkv=2, n=200, d=32, seed=0, scan=None, fused=False):
    w = make_workload(hq, hkv, n, d, seed=seed)
    w.k *= torch.linspace(0.1, 3.0, d)  # uneven channel variances: water-filling has work to do
    store = _host_store(w.k, target)
    cfg = resolve_method_config(LAUNCH_SPACES, {"gather": {"CHUNK": 256}, "scan": scan or {}}, w.shape)
    op = FathomScan(w.q, store, budget, cfg, target.device, fused=fused)
    return w, store, op


def test_plan_matches_reference_water_filling(make_workload, target):
    w, store, op = _scan(make_workload, target, budget=40)
    op.launch_plan()
    for kvh in range(2):
        g = importance(w.q[2 * kvh : 2 * kvh + 2], store.var[kvh])
        depths, theta = water_fill(g, 40)
        assert op.depth[kvh].cpu().tolist() == depths.tolist()
        assert int(op.depth[kvh].sum()) <= 40
        assert abs(float(op.theta[kvh]) / theta - 1) < 1e-3
        t = op.depth[kvh].cpu()
        assert op.dst[kvh].cpu().tolist() == ((torch.cumsum(t, 0) - t) * store.n_blocks).tolist()
        active = torch.nonzero(t).flatten().tolist()
        assert int(op.n_active[kvh]) == len(active) and op.active[kvh, : len(active)].cpu().tolist() == active


@pytest.mark.parametrize("n", [200, 16500])
def test_gather_is_bit_exact_including_zero_length_runs(make_workload, target, n):
    """n=16500: 258 blocks, so each run spans several 256-word chunks and so do the scales."""
    w, store, op = _scan(make_workload, target, budget=24, n=n)
    op.launch_plan()
    op.staged.fill_(-1)
    op.launch_gather()
    nb = store.n_blocks
    for kvh in range(2):
        t = op.depth[kvh].cpu()
        assert (t == 0).any(), "some channels inactive (zero-length runs)"
        flat = store.planes[kvh].reshape(store.planes.shape[1], -1)
        expected = torch.cat([flat[j, : int(t[j]) * nb] for j in range(t.numel())])
        assert torch.equal(op.staged[kvh, : expected.numel()].cpu(), expected)
        assert torch.all(op.staged[kvh, expected.numel():] == -1), "nothing written past the runs"
        active = t > 0
        assert torch.equal(op.staged_scales[kvh, active].cpu(), store.scales[kvh, active])


@pytest.mark.parametrize("scan,fused", [({}, False), ({"BLOCKS": 4}, False), ({"BLOCKS": 8, "num_warps": 1}, False),
                                        ({"BLOCKS": 4, "num_warps": 8}, False), ({}, True), ({"BLOCKS": 4}, True),
                                        ({"AHEAD": 1}, True), ({"BLOCKS": 4, "AHEAD": 1}, False)])
def test_scan_scores_match_the_dequantised_reference(make_workload, target, scan, fused):
    """333 tokens: a partial last block; budget 48: channels at every depth. Fused: the scan reads
    the store's planes (host memory on a GPU) instead of the staged copy."""
    w, store, op = _scan(make_workload, target, budget=48, n=333, seed=3, scan=scan, fused=fused)
    op.scores.fill_(float("nan"))
    scores = op.run().cpu().double()
    for kvh in range(2):
        depths = op.depth[kvh].cpu()
        ref = approximate_scores(w.q[2 * kvh : 2 * kvh + 2], store.planes[kvh], store.scales[kvh], depths, n=333)
        assert torch.allclose(scores[2 * kvh : 2 * kvh + 2], ref, atol=1e-4, rtol=1e-5)


@pytest.mark.parametrize("scan,fused", [({"BLOCKS": 16}, False), ({"BLOCKS": 4, "num_warps": 2}, False),
                                        ({"BLOCKS": 16}, True), ({"BLOCKS": 16, "AHEAD": 1}, True)])
def test_scan_over_many_programs_and_a_partial_last_one_with_chunk_maxima(make_workload, target, scan, fused):
    """4,133 tokens: 65 blocks, so several programs each carry their next-channel loads through
    the loop and the last program holds a partial block past the end of the planes. Each 32-token
    chunk's max is the max of its scores that exist (the last chunk has 5)."""
    w, store, op = _scan(make_workload, target, budget=40, n=4133, seed=7, scan=scan, fused=fused)
    op.scores.fill_(float("nan"))
    op.chunk_max.fill_(float("nan"))
    scores = op.run().cpu().double()
    for kvh in range(2):
        ref = approximate_scores(w.q[2 * kvh : 2 * kvh + 2], store.planes[kvh], store.scales[kvh],
                                 op.depth[kvh].cpu(), n=4133)
        assert torch.allclose(scores[2 * kvh : 2 * kvh + 2], ref, atol=1e-4, rtol=1e-5)
    padded = torch.nn.functional.pad(op.scores.cpu(), (0, 130 * 32 - 4133), value=float("-inf"))
    assert op.chunk_max.shape == (4, 130)
    assert torch.equal(op.chunk_max.cpu(), padded.view(4, 130, 32).amax(dim=2))
    assert [name for name, _ in op.stages()] == ["plan", "scan"] if fused else ["plan", "gather", "scan"]


@pytest.mark.slow
def test_scan_counts_tiles_per_head_and_empties_its_queue(make_workload, target):
    """The persistent scan's work queue: after a scan every KV head's count is its tile count (the
    pipelined top-k waits on it) and the queue is empty again, so a second scan without a plan
    (``kprof stages`` times the scan alone) scans every tile again; the plan zeroes the counts."""
    w, store, op = _scan(make_workload, target, budget=40, n=4133, seed=7, scan={"BLOCKS": 4}, fused=True)
    assert op.tiles_per_head == 17  # 65 blocks
    op.scores.fill_(float("nan"))
    first = op.run().clone()
    assert op.scanned.tolist() == [17, 17] and op.work[:2].tolist() == [0, 0]
    assert int(op.wait_expiries) == 0
    op.scores.fill_(float("nan"))
    dict(op.stages())["scan"]()
    assert torch.equal(op.scores, first) and op.scanned.tolist() == [34, 34]
    op.launch_plan()
    assert op.scanned.tolist() == [0, 0]


@pytest.mark.parametrize("budget", [1, 2, 3])
@pytest.mark.parametrize("ahead", [1, 2])
def test_scan_with_as_few_active_channels_as_its_prefetch_depth(make_workload, target, budget, ahead):
    """One to three planes in all: the prefetch runs past the end of the channel list from the
    start (its loads must read nothing there, and no channel may be added twice or skipped)."""
    w, store, op = _scan(make_workload, target, budget=budget, n=300, seed=5, scan={"AHEAD": ahead}, fused=True)
    op.scores.fill_(float("nan"))
    scores = op.run().cpu().double()
    assert 1 <= int(op.n_active.max()) <= budget
    for kvh in range(2):
        ref = approximate_scores(w.q[2 * kvh : 2 * kvh + 2], store.planes[kvh], store.scales[kvh],
                                 op.depth[kvh].cpu(), n=300)
        assert torch.allclose(scores[2 * kvh : 2 * kvh + 2], ref, atol=1e-4, rtol=1e-5)


def test_fused_scan_gives_the_staged_scans_scores_bit_for_bit(make_workload, target):
    """Same words, same arithmetic: only where the planes are read from differs (and no staging)."""
    w, store, staged = _scan(make_workload, target, budget=44, n=1000, seed=12)
    fused = FathomScan(w.q, store, 44, staged.cfg, target.device, fused=True)
    assert fused.staged.numel() == 0, "the fused scan allocates no staging buffer"
    with pytest.raises(RuntimeError, match="no gather"):
        fused.launch_gather()
    staged.scores.fill_(float("nan"))
    fused.scores.fill_(float("nan"))
    assert torch.equal(staged.run().cpu(), fused.run().cpu())
    assert torch.equal(staged.chunk_max.cpu(), fused.chunk_max.cpu())


def test_scan_writes_only_its_groups_heads_and_chunks(make_workload, target):
    """G = 3 (a 4-wide head tile with one dead lane) and 980 tokens (the last block holds 20, so
    its second half-block is past the end): the dead lane and the missing chunk write nothing
    (a guard row after the buffers stays NaN) and the real tail tokens, made to score far below
    the zero padding, still set the last chunk's max."""
    w, store, op = _scan(make_workload, target, budget=40, hq=3, hkv=1, n=980, seed=11)
    w.k[0, 960:] = -4.0 * w.q.float().sum(0)
    store = _host_store(w.k, target)
    op = FathomScan(w.q, store, 40, op.cfg, target.device)
    nan = float("nan")
    scores = torch.full((4, op.scores_padded.shape[1]), nan, device=target.device)
    chunks = torch.full((4, op.n_chunks), nan, device=target.device)
    scores[:3] = float("-inf")  # the padding the operator keeps past n
    op.scores_padded, op.scores, op.chunk_max = scores[:3], scores[:3, :980], chunks[:3]
    op.bind()  # launches are bound to their buffers once
    op.run()
    assert torch.isnan(scores[3]).all() and torch.isnan(chunks[3]).all(), "a dead head lane or chunk was written"
    ref = approximate_scores(w.q, store.planes[0], store.scales[0], op.depth[0].cpu(), n=980)
    assert torch.allclose(op.scores.cpu().double(), ref, atol=1e-4, rtol=1e-5)
    assert float(ref[:, 960:].max()) < 0, "the tail tokens score below the padding"
    assert torch.equal(chunks[:3].cpu(), scores[:3].cpu().view(3, -1, 32).amax(dim=2))


def test_full_budget_scan_approaches_exact_scores(make_workload, target):
    w, store, op = _scan(make_workload, target, budget=4 * 32, n=128, seed=5)
    scores = op.run().cpu().double()
    assert torch.all(op.depth == 4)
    exact = torch.einsum("hd,hnd->hn", w.q.double(), w.k.double().repeat_interleave(2, 0))
    # 4-bit codes with 64-token absmax scales: about 9% rms score error per key is expected
    assert ((scores - exact).norm() / exact.norm()) < 0.15


def test_fixed_channel_policies_pick_top_summed_abs_q(make_workload, target):
    from kprof.kernels.fathom.reference import scan_bits
    from kprof.kernels.fathom.scan import ALL_CHANNELS, top_q

    w = make_workload(4, 2, 128, 32, seed=7)
    w.q[0, 5] = w.q[1, 5] = 50.0  # channel 5 dominates the first group's |q|
    store = _host_store(w.k, target)
    cfg = resolve_method_config(LAUNCH_SPACES, {"gather": {"CHUNK": 256}}, w.shape)
    op = FathomScan(w.q, store, top_q(8), cfg, target.device)
    op.launch_plan()
    for kvh in range(2):
        mag = w.q[2 * kvh : 2 * kvh + 2].abs().sum(0)
        expected = set(torch.topk(mag, 8).indices.tolist())
        got = set(torch.nonzero(op.depth[kvh].cpu()).flatten().tolist())
        assert got == expected and set(op.depth[kvh].cpu().tolist()) == {0, 4}
    assert 5 in set(torch.nonzero(op.depth[0].cpu()).flatten().tolist())
    assert scan_bits(op.depth[0].cpu()) == 8 * 4 + 8 * 0.25
    full = FathomScan(w.q, store, ALL_CHANNELS, cfg, target.device)
    scores = full.run().cpu().double()
    assert torch.all(full.depth == 4)
    ref = approximate_scores(w.q[:2], store.planes[0], store.scales[0], torch.full((32,), 4), n=128)
    assert torch.allclose(scores[:2], ref, atol=1e-4, rtol=1e-5)


def test_sparq_tie_goes_to_the_lower_channel(target):
    from kprof.kernels.fathom.scan import top_q
    from kprof.workloads import Workload

    # the worked example's grouped |q| = (4, 3, 3, 0.3): r = 2 keeps channels 0 and 1
    q = torch.tensor([[3.0, 1.0, 2.0, 0.1], [1.0, 2.0, -1.0, 0.2]])
    q = torch.cat([q, torch.zeros(2, 12)], dim=1)
    k = torch.randn(1, 64, 16, generator=torch.Generator().manual_seed(0))
    w = Workload(q=q, k=k, v=k.clone(), positions=torch.arange(64), query_position=63)
    store = _host_store(w.k, target)
    cfg = resolve_method_config(LAUNCH_SPACES, {}, w.shape)
    op = FathomScan(w.q, store, top_q(2), cfg, target.device)
    op.launch_plan()
    assert torch.nonzero(op.depth[0].cpu()).flatten().tolist() == [0, 1]
