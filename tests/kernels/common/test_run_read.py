"""RunRead, the host-request probe's kernel: every run read exactly once, nothing between runs."""

import pytest
import torch

from kprof.kernels.common.run_read import RunRead


@pytest.mark.parametrize("runs, run_bytes, stride_bytes, programs, per_step",
                         [(37, 64, 256, 3, 4), (50, 128, 128, 7, 8), (9, 512, 1024, 2, 2), (33, 32, 384, 4, 1)])
def test_program_sums_add_to_the_runs(target, rng, runs, run_bytes, stride_bytes, programs, per_step):
    stride = stride_bytes // 4
    src = torch.randint(0, 16, (runs * stride + 64,), generator=rng, dtype=torch.int32)
    gaps = torch.ones_like(src, dtype=torch.bool)
    for r in range(runs):
        gaps[r * stride: r * stride + run_bytes // 4] = False
    src[gaps] = 1000  # words between runs and past the last one: reading any of them moves the sum
    src = src.to(target.device)
    s = RunRead(src, runs, run_bytes, stride_bytes, programs, per_step)
    s.out.fill_(-(2 ** 30))
    got = int(s.run().to(torch.int64).sum())
    want = int(src.cpu()[~gaps].to(torch.int64).sum())
    assert got == want == s.expected_sum()
    assert s.bytes == runs * run_bytes and s.lines == runs * max(1, run_bytes // 128)
    assert s.sectors == runs * max(1, run_bytes // 32)


def test_two_runs_a_line_go_to_two_programs_and_count_one_line(target, rng):
    src = torch.randint(0, 16, (64 * 16,), generator=rng, dtype=torch.int32).to(target.device)
    s = RunRead(src, 64, 64, 64, programs=4, per_step=2)  # contiguous 64-byte runs: two halves a line
    assert int(s.run().to(torch.int64).sum()) == s.expected_sum() == int(src.cpu().to(torch.int64).sum())
    assert s.lines == 32 and s.sectors == 128 and s.bytes == 64 * 64


def test_the_last_run_may_end_the_buffer(target):
    src = torch.arange(2 * 32 + 8, dtype=torch.int32).to(target.device)  # two strides, then one 32-byte run
    s = RunRead(src, 3, 32, 128, programs=2, per_step=1)
    assert int(s.run().to(torch.int64).sum()) == s.expected_sum() == sum(range(8)) + sum(range(32, 40)) + sum(
        range(64, 72))


@pytest.mark.parametrize("kwargs, match", [
    (dict(run_bytes=48), "power of two"),
    (dict(stride_bytes=202), "whole int32 words"),
    (dict(run_bytes=512, stride_bytes=256), "at least run_bytes"),
    (dict(runs=1000), "need"),
    (dict(per_step=3), "per_step"),
])
def test_bad_shapes_are_refused(kwargs, match):
    args = dict(runs=10, run_bytes=64, stride_bytes=256, programs=2, per_step=2) | kwargs
    with pytest.raises(ValueError, match=match):
        RunRead(torch.zeros(1024, dtype=torch.int32), **args)
    with pytest.raises(ValueError, match="flat int32"):
        RunRead(torch.zeros(1024), 10, 64, 256, 2)
