"""triton-decode (one launch, last-program combine) against the independent fp64 reference."""

import pytest
import torch

from kprof.methods import get_method
from kprof.methods.dense_reference import dense_attention_fp64
from kprof.methods.validation import compare_outputs
from kprof.workloads import synthesize


def _poison(op):
    """NaN in the output and in every partial: a combine that reads a partial before its
    program wrote it (this call's) cannot pass on the previous call's equal values."""
    for t in (op.out, op.m, op.mass, op.acc):
        t.fill_(float("nan"))


def _run_checked(workload, target, overrides=None, tol=None, calls=2):
    """Run ``calls`` times, poisoning first each time: the counters must reset between calls."""
    prepared = get_method("triton-decode").prepare(workload, target, overrides)
    op = prepared.run.__self__  # run is OneLaunchDecode.run
    ref = dense_attention_fp64(workload)
    for _ in range(calls):
        _poison(op)
        report = compare_outputs(prepared.run(), ref, tol)
        assert report.non_finite == 0, "the combine left rows unwritten"
        assert report.passed, report
    assert int(op.count.abs().sum()) == 0 and prepared.faults() == []
    return prepared


@pytest.mark.parametrize(
    "hq, hkv, n, d, block_n, per_sm",
    [
        (14, 2, 1000, 64, 64, 2),     # group 7, N not a multiple of BLOCK_N: masked last tile
        (16, 4, 333, 128, 32, 3),     # group 4, d 128, 3 splits per head of uneven length
        (7, 1, 130, 64, 16, 8),       # one KV head, 9 blocks over 8 splits
        (4, 4, 77, 64, 128, 1),       # MHA, one split, one partial tile
        (28, 4, 4096, 128, 64, 6),    # the 32K shape's heads at 4K, EVEN tiles, 6 splits per head
    ],
)
def test_matches_fp64_reference_fp32(target, make_workload, hq, hkv, n, d, block_n, per_sm):
    w = make_workload(hq, hkv, n, d, seed=hq * n + d, scale=2.0)
    prepared = _run_checked(w, target, {"decode": {"BLOCK_N": block_n, "PROGRAMS_PER_SM": per_sm}}, tol=1e-5)
    assert prepared.details["num_splits"] >= 1


@pytest.mark.parametrize("hq, hkv, n, d, block_n, per_sm", [
    (14, 2, 1000, 64, 64, 2),     # ragged: the last tile of a head runs into the next head's rows
    (16, 4, 333, 128, 32, 3),     # uneven splits: tiles run into the next split's rows
    (4, 4, 77, 64, 128, 1),       # one tile past the end of the whole tensor (read as zeros)
    (28, 4, 4096, 128, 64, 6),    # EVEN
])
def test_tensor_descriptor_loads_match_fp64(target, make_workload, hq, hkv, n, d, block_n, per_sm):
    w = make_workload(hq, hkv, n, d, seed=hq + n, scale=2.0)
    _run_checked(w, target, {"decode": {"BLOCK_N": block_n, "PROGRAMS_PER_SM": per_sm, "TMA": 1}}, tol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_inputs(target, make_workload, dtype):
    w = make_workload(16, 2, 515, 64, dtype, seed=13, scale=2.0)
    _run_checked(w, target, {"decode": {"BLOCK_N": 32, "PROGRAMS_PER_SM": 3}},
                 tol=1e-2 if dtype == torch.float16 else 2e-2)


def test_peaked_synthetic_workload(target):
    _run_checked(synthesize("cpu-smoke"), target, tol=1e-5)


def test_fewer_splits_than_group_heads(target, make_workload):
    """5 splits for a group of 7 heads: the last program combines them all, on the GPU too."""
    w = make_workload(28, 4, 300, 64, seed=5, scale=2.0)
    prepared = _run_checked(w, target, {"decode": {"BLOCK_N": 64, "PROGRAMS_PER_SM": 8}}, tol=1e-5, calls=3)
    assert prepared.details["num_splits"] == 5


def test_a_wrong_kernel_would_be_caught(target, make_workload):
    """The check itself can fail: dropping the last key changes the output beyond tolerance."""
    w = make_workload(14, 2, 200, 64, seed=2, scale=3.0)
    truncated = type(w)(q=w.q, k=w.k[:, :-1], v=w.v[:, :-1], positions=w.positions[:-1],
                        query_position=w.query_position)
    out = get_method("triton-decode").prepare(truncated, target).run()
    assert not compare_outputs(out, dense_attention_fp64(w), 1e-5).passed


@pytest.mark.gpu
def test_qwen_32k_fp16_on_gpu(target):
    _run_checked(synthesize("qwen2.5-7b-l14-32k"), target, tol=1e-2, calls=5)


@pytest.mark.gpu
@pytest.mark.parametrize("tma", [0, 1])
def test_many_calls_and_graph_replays_on_gpu(target, make_workload, tma):
    """A race in the waiting combine shows as a wrong or unwritten row in some call: 200 eager
    calls and 50 graph replays, each on fresh queries and poisoned partials."""
    w = make_workload(28, 4, 8192, 128, torch.float16, seed=9, scale=2.0).to(target.device)  # prepare keeps w.q
    prepared = get_method("triton-decode").prepare(w, target, {"decode": {"TMA": tma}})
    op = prepared.run.__self__
    for i in range(200):
        w.q.copy_(torch.randn_like(w.q) * 2.0)  # the kernel reads w.q itself (already contiguous)
        _poison(op)
        report = compare_outputs(prepared.run(), dense_attention_fp64(w), 1e-2)
        assert report.passed and report.non_finite == 0, (i, report)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        prepared.run()
    for i in range(50):
        w.q.copy_(torch.randn_like(w.q) * 2.0)
        _poison(op)
        graph.replay()
        report = compare_outputs(op.out, dense_attention_fp64(w), 1e-2)
        assert report.passed and report.non_finite == 0, ("replay", i, report)
    assert int(op.count.abs().sum()) == 0 and prepared.faults() == []


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("hq, hkv, d", [(28, 4, 128), (32, 8, 128), (14, 2, 64)])
@pytest.mark.parametrize("per_sm", [1, 2, 4])
@pytest.mark.parametrize("tma", [0, 1])
def test_gpu_shapes_and_dtypes(target, make_workload, hq, hkv, d, dtype, per_sm, tma):
    w = make_workload(hq, hkv, 5001, d, dtype, seed=hq + d, scale=2.0)
    _run_checked(w, target, {"decode": {"PROGRAMS_PER_SM": per_sm, "TMA": tma}},
                 tol=1e-2 if dtype == torch.float16 else 2e-2, calls=3)
