"""triton-dense against the independent fp64 reference (interpreter on CPU, compiled on GPU)."""

import pytest
import torch

from kprof.methods import get_method
from kprof.methods.dense_reference import dense_attention_fp64
from kprof.methods.validation import compare_outputs
from kprof.workloads import synthesize


def _check(workload, target, overrides=None, tol=None):
    method = get_method("triton-dense")
    prepared = method.prepare(workload, target, overrides)
    prepared.output.fill_(float("nan"))  # poison: every row must be written by the kernel
    out = prepared.run()
    report = compare_outputs(out, dense_attention_fp64(workload), tol)
    assert report.non_finite == 0, "kernel left rows unwritten"
    assert report.passed, report
    return prepared, report


@pytest.mark.parametrize(
    "hq, hkv, n, d, block_n, splits",
    [
        (14, 2, 1000, 64, 64, 4),     # group 7, N not a multiple of BLOCK_N
        (16, 4, 333, 128, 32, 8),     # group 4, d 128, ragged last split
        (7, 1, 130, 64, 16, 256),     # more requested splits than blocks: clamped
        (4, 4, 77, 64, 128, 1),       # MHA, one split, one partial tile
    ],
)
def test_matches_fp64_reference_fp32(target, make_workload, hq, hkv, n, d, block_n, splits):
    w = make_workload(hq, hkv, n, d, seed=hq * n + d, scale=2.0)
    prepared, report = _check(w, target, {"partial": {"BLOCK_N": block_n, "NUM_SPLITS": splits,
                                                           "PROGRAMS_PER_SM": 0}}, tol=1e-5)
    assert prepared.details["num_splits"] * prepared.details["split_len"] >= n


@pytest.mark.parametrize("hq, hkv, per_sm, splits", [(14, 2, 2, 4), (8, 4, 2, 2), (8, 4, 4, 4), (4, 1, 4, 16)])
def test_splits_from_the_device(target, make_workload, hq, hkv, per_sm, splits):
    """PROGRAMS_PER_SM sizes the grid from the SM count (the interpreter counts as 4 SMs):
    splits per KV head = ceil(SMs x per_sm / Hkv), in whole tiles; NUM_SPLITS then may not be set."""
    import triton

    from kprof.core.errors import ConfigError
    from kprof.kernels.common.grid_sync import sm_count

    w = make_workload(hq, hkv, 1024, 64, seed=hq + per_sm, scale=2.0)
    prepared, _ = _check(w, target, {"partial": {"BLOCK_N": 32, "PROGRAMS_PER_SM": per_sm}}, tol=1e-5)
    wanted = min(triton.cdiv(sm_count(target.device) * per_sm, hkv), 32)
    assert prepared.details["num_splits"] == triton.cdiv(1024, triton.cdiv(32, wanted) * 32)
    if target.device.type == "cpu":
        assert prepared.details["num_splits"] == splits
    with pytest.raises(ConfigError, match="NUM_SPLITS applies only with partial.PROGRAMS_PER_SM=0"):
        get_method("triton-dense").prepare(w, target, {"partial": {"PROGRAMS_PER_SM": per_sm, "NUM_SPLITS": 8}})


@pytest.mark.parametrize("hq, hkv, n, d, block_n, splits", [(14, 2, 1000, 64, 64, 4), (16, 4, 333, 128, 32, 8),
                                                        (4, 4, 77, 64, 128, 1), (8, 2, 64, 64, 64, 1)])
def test_prefetch_loop_matches_fp64(target, make_workload, monkeypatch, hq, hkv, n, d, block_n, splits):
    """partial.PREFETCH loads tile i + 1 while tile i is reduced: ragged last tiles, one tile per
    split and a one-tile range (the prefetch past the end reads nothing) stay exact; EVICT too.
    Through the interpreter the loads are counted: one tile more per program than without."""
    from kprof.kernels.dense import key_range

    w = make_workload(hq, hkv, n, d, seed=hq * n + block_n, scale=2.0)
    loads = []
    if target.device.type == "cpu":  # the interpreter calls the loop's helpers as Python functions
        load_tile = key_range._load_tile

        def counted(*args):
            loads.append(1)
            return load_tile(*args)

        monkeypatch.setattr(key_range, "_load_tile", counted)
    counts = []
    for prefetch in (0, 1):
        loads.clear()
        prepared, _ = _check(w, target, {"partial": {"BLOCK_N": block_n, "NUM_SPLITS": splits, "PROGRAMS_PER_SM": 0,
                                                     "PREFETCH": prefetch, "num_stages": 1, "EVICT": 1}}, tol=1e-5)
        counts.append(len(loads))
    if target.device.type == "cpu":
        programs = hkv * prepared.details["num_splits"]
        assert counts[1] == counts[0] + programs > programs, counts


def test_prefetch_needs_one_stage(target, make_workload):
    from kprof.core.errors import ConfigError

    w = make_workload(4, 1, 64, 64, seed=1)
    with pytest.raises(ConfigError, match="PREFETCH=1 replaces the shared-memory pipeline"):
        get_method("triton-dense").prepare(w, target, {"partial": {"PREFETCH": 1, "num_stages": 3}})


@pytest.mark.parametrize("d, block_d", [(64, 16), (128, 32), (64, 128)])
def test_combine_by_column_blocks_matches_fp64(target, make_workload, d, block_d):
    """Every column block of every head is written (poisoned output) and right; a BLOCK_D above d is d."""
    w = make_workload(14, 2, 700, d, seed=d + block_d, scale=2.0)
    _check(w, target, {"partial": {"BLOCK_N": 32, "PROGRAMS_PER_SM": 1}, "combine": {"BLOCK_D": block_d}}, tol=1e-5)


def test_peaked_synthetic_workload(target):
    _check(synthesize("cpu-smoke"), target, tol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_inputs(target, make_workload, dtype):
    w = make_workload(14, 2, 257, 64, dtype, seed=11, scale=2.0)
    _check(w, target, tol=1e-2 if dtype == torch.float16 else 2e-2)


def test_a_wrong_kernel_would_be_caught(target, make_workload):
    """The check itself can fail: dropping the last key changes the output beyond tolerance."""
    w = make_workload(14, 2, 200, 64, seed=2, scale=3.0)
    method = get_method("triton-dense")
    truncated = type(w)(q=w.q, k=w.k[:, :-1], v=w.v[:, :-1], positions=w.positions[:-1],
                        query_position=w.query_position)
    out = method.prepare(truncated, target).run()
    assert not compare_outputs(out, dense_attention_fp64(w), 1e-5).passed


def test_stages_in_order_reproduce_run(target, make_workload):
    w = make_workload(8, 2, 300, 64, seed=4)
    prepared = get_method("triton-dense").prepare(w, target)
    expected = prepared.run().clone()
    prepared.output.fill_(float("nan"))
    for stage in prepared.stages:
        stage.launch()
    assert torch.equal(prepared.output, expected)
    assert [s.name for s in prepared.stages] == ["partial", "combine"]


@pytest.mark.gpu
def test_qwen_32k_fp16_on_gpu(target):
    _check(synthesize("qwen2.5-7b-l14-32k"), target, tol=1e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("hq, hkv, d", [(28, 4, 128), (32, 8, 128), (14, 2, 64)])
def test_gpu_shapes_and_dtypes(target, make_workload, hq, hkv, d, dtype):
    w = make_workload(hq, hkv, 5000, d, dtype, seed=hq + d, scale=2.0)
    _check(w, target, tol=1e-2 if dtype == torch.float16 else 2e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("per_sm", [2, 4])
def test_prefetch_on_gpu(target, make_workload, per_sm):
    w = make_workload(28, 4, 5000, 128, torch.float16, seed=per_sm, scale=2.0)
    _check(w, target, {"partial": {"PREFETCH": 1, "num_stages": 1, "EVICT": 1, "PROGRAMS_PER_SM": per_sm}}, tol=1e-2)


def test_pdl_option_is_checked(target, make_workload):
    from kprof.core.errors import ConfigError
    from kprof.kernels.common.dependent_launch import pdl_supported

    w = make_workload(8, 2, 100, 64, seed=5)
    for bad, message in (("pdl=2", "pdl=2: use pdl=1"), ("pdl=x", "pdl='x': use"), ("splits=4", "unknown")):
        with pytest.raises(ConfigError, match=message):
            get_method(f"triton-dense:{bad}")
    assert get_method("triton-dense:pdl=0").prepare(w, target).details["pdl"] is False
    if not pdl_supported(target.device):
        with pytest.raises(ConfigError, match="pdl=1 needs"):
            get_method("triton-dense:pdl=1").prepare(w, target)


@pytest.mark.gpu
@pytest.mark.parametrize("pdl", [0, 1])
def test_many_calls_and_graph_replays_on_gpu(target, make_workload, pdl):
    """A combine that read partials before its predecessor finished shows as a wrong row in some
    call: 200 eager calls and 50 graph replays, each on fresh queries and poisoned partials, then
    20 calls queued back to back."""
    from kprof.kernels.common.dependent_launch import pdl_supported

    if pdl and not pdl_supported(target.device):
        pytest.skip("programmatic dependent launch needs sm_90+ and Triton >= 3.4")
    w = make_workload(28, 4, 8192, 128, torch.float16, seed=9, scale=2.0).to(target.device)
    prepared = get_method(f"triton-dense:pdl={pdl}").prepare(w, target)
    assert prepared.details["pdl"] is bool(pdl)
    assert get_method("triton-dense").prepare(w, target).details["pdl"] is pdl_supported(target.device)
    op = prepared.handle

    def poison():
        for t in op.workspace:
            t.fill_(float("nan"))
        op.out.fill_(float("nan"))

    graph = None
    for i in range(250):
        w.q.copy_(torch.randn_like(w.q) * 2.0)
        poison()
        if i < 200:
            prepared.run()
        else:
            if graph is None:
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    prepared.run()
                w.q.copy_(torch.randn_like(w.q) * 2.0)
                poison()
            graph.replay()
        report = compare_outputs(op.out, dense_attention_fp64(w), 1e-2)
        assert report.passed and report.non_finite == 0, (i, report)
    # back to back, no host sync between calls: each output copied on the stream as it is made
    qs = torch.randn(20, *w.q.shape, device=w.q.device, dtype=w.q.dtype) * 2.0
    outs = torch.empty(20, *op.out.shape, device=op.out.device, dtype=op.out.dtype)
    for i in range(20):
        w.q.copy_(qs[i])
        prepared.run()
        outs[i].copy_(op.out)
    for i in range(20):
        w.q.copy_(qs[i])
        report = compare_outputs(outs[i], dense_attention_fp64(w), 1e-2)
        assert report.passed and report.non_finite == 0, ("back to back", i, report)


def test_window_option_is_checked(target, make_workload):
    from kprof.core.errors import ConfigError

    w = make_workload(8, 2, 256, 64, seed=3, scale=1.0)
    for bad, message in (("window=2", "window=2: use window=1"), ("window=on", "window='on': use")):
        with pytest.raises(ConfigError, match=message):
            get_method(f"triton-dense:{bad}")
    assert get_method("triton-dense:window=0").prepare(w, target).details["l2_window"] is False
    if target.device.type != "cuda":
        with pytest.raises(ConfigError, match="window=1 needs a CUDA device"):
            get_method("triton-dense:window=1").prepare(w, target)


@pytest.mark.gpu
def test_window_matches_fp64_eager_and_in_graphs(target, make_workload):
    """K and V copied side by side under the window: the same output, every call and every replay."""
    w = make_workload(28, 4, 4096 + 37, 128, torch.float16, seed=11, scale=2.0)
    prepared = get_method("triton-dense:window=1").prepare(w, target)
    assert prepared.details["l2_window"] is True
    reference = dense_attention_fp64(w)
    for _ in range(3):
        prepared.output.fill_(float("nan"))
        assert compare_outputs(prepared.run(), reference, 1e-2).passed
    graph = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        prepared.run()
    torch.cuda.current_stream().wait_stream(side)
    with torch.cuda.graph(graph):
        prepared.run()
    prepared.output.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    assert compare_outputs(prepared.output, reference, 1e-2).passed



@pytest.mark.parametrize("prefetch", [0, 1])
@pytest.mark.parametrize("hq, hkv, n, d, block_n, splits", [(14, 2, 1000, 64, 64, 4), (8, 4, 77, 64, 32, 2)])
def test_probe_body_is_the_two_dots(target, make_workload, hq, hkv, n, d, block_n, splits, prefetch):
    """The loop probe's body (``body=1``: not attention) against fp64: the two dots without the
    softmax, so a split holds sum_j (q . k_j * scale) v_j over its rows, in either loop (the
    pipelined one and PREFETCH's). Ragged last tiles must add nothing (masked rows load as zeros)."""
    from kprof.core.config_space import resolve_method_config
    from kprof.kernels.dense.split_kv import LAUNCH_SPACES, SplitKVDecode

    w = make_workload(hq, hkv, n, d, seed=n + d, scale=2.0).to(target.device)
    config = resolve_method_config(LAUNCH_SPACES, {"partial": {"BLOCK_N": block_n, "NUM_SPLITS": splits,
                                                               "PROGRAMS_PER_SM": 0, "PREFETCH": prefetch,
                                                               "num_stages": 1 if prefetch else 3}}, w.shape)
    k, v, q = w.k.double().cpu(), w.v.double().cpu(), w.q.double().cpu()
    op = SplitKVDecode(w.q, w.k, w.v, config, body=1)
    acc = op.workspace[2]
    acc.fill_(float("nan"))
    op.launch_partial()
    acc = acc.double().cpu()
    for h in range(hq):
        kvh = h // (hq // hkv)
        for s in range(op.num_splits):
            rows = slice(s * op.split_len, min((s + 1) * op.split_len, n))
            scores = k[kvh, rows] @ q[h] / d**0.5 * 1.4426950408889634
            torch.testing.assert_close(acc[h, s], (scores[:, None] * v[kvh, rows]).sum(0), rtol=1e-4, atol=1e-3)
