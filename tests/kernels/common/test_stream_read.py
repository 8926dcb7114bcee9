"""StreamRead, the read-floor probe's kernel: every byte in range read exactly once."""

import pytest
import torch

from kprof.kernels.common.stream_read import StreamRead


@pytest.mark.parametrize("fraction, programs, block", [(1.0, 7, 64), (0.5, 4, 128), (0.25, 16, 32)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_program_sums_add_to_the_bytes_in_range(target, rng, fraction, programs, block, dtype):
    a = torch.randn(3, 1001, 8, generator=rng)  # odd length: a masked tail
    last = a.view(-1)[int(a.numel() * fraction) - 1]  # the element the check below leaves out:
    last += 2.0 * torch.sign(last)  # at least 2 from zero, so leaving it out is above the tolerance
    a = a.to(dtype).to(target.device)
    b = torch.randn(3, 1001, 8, generator=rng).to(dtype).to(target.device)
    s = StreamRead(a, b, fraction, programs, block)
    s.out.fill_(float("nan"))
    got = float(s.run().double().sum())
    assert s.total == int(a.numel() * fraction) and s.bytes == 2 * s.total * a.element_size()
    assert got == pytest.approx(s.expected_sum(), rel=1e-4, abs=1e-3)
    # the tolerance is tight enough to see one element left out
    short = float(a.reshape(-1)[: s.total - 1].double().sum() + b.reshape(-1)[: s.total].double().sum())
    assert got != pytest.approx(short, rel=1e-4, abs=1e-3)


def test_empty_reads_nothing_and_shapes_must_match(target, rng):
    a = torch.randn(500, generator=rng).to(target.device)
    s = StreamRead(a, a.clone(), programs=5, block=32, empty=True)
    s.out.fill_(float("nan"))
    assert torch.equal(s.run().cpu(), torch.zeros(s.programs)) and s.bytes == 0
    with pytest.raises(ValueError, match="differ"):
        StreamRead(a, a[:-1])


def test_warps_and_pipelined_stages_read_the_same_bytes(target, rng):
    a = torch.randn(2, 777, 8, generator=rng).to(torch.float16).to(target.device)
    b = torch.randn(2, 777, 8, generator=rng).to(torch.float16).to(target.device)
    for evict in (False, True):  # evict-first loads: the same bytes, once each
        s = StreamRead(a, b, 1.0, programs=3, block=256, num_warps=8, num_stages=3, evict=evict)
        s.out.fill_(float("nan"))
        assert float(s.run().double().sum()) == pytest.approx(s.expected_sum(), rel=1e-4, abs=1e-3)
