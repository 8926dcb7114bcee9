"""The L2 fetch-granularity hint: its driver constant, values refused off the range, and on a GPU
the context's own hint restored after a ``with`` block, even one that fails."""

import re
from pathlib import Path

import pytest
import torch

from kprof.core.errors import ConfigError
from kprof.kernels.common import l2_fetch


def test_the_limit_constant_matches_the_cuda_header():
    import triton

    header = Path(triton.__file__).parent / "backends" / "nvidia" / "include" / "cuda.h"
    if not header.exists():
        pytest.skip("this Triton has no CUDA header to check the driver constant against")
    found = re.search(r"\bCU_LIMIT_MAX_L2_FETCH_GRANULARITY\s*=\s*0x0*(\w+)", header.read_text())
    assert found and int(found.group(1), 16) == l2_fetch._LIMIT


@pytest.mark.parametrize("value", [-1, 129, 256])
def test_a_hint_off_the_range_is_refused_before_the_driver(value):
    with pytest.raises(ConfigError, match="takes 0 to 128 bytes"):
        l2_fetch.set_l2_fetch_bytes(value)


@pytest.mark.gpu
def test_the_contexts_own_hint_comes_back_after_the_block():
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    before = l2_fetch.l2_fetch_bytes()
    other = 32 if before != 32 else 128
    with l2_fetch.L2FetchGranularity(other) as got:
        assert got == l2_fetch.l2_fetch_bytes() and 0 < got <= 128
    assert l2_fetch.l2_fetch_bytes() == before
    with pytest.raises(RuntimeError, match="inside"), l2_fetch.L2FetchGranularity(other):
        raise RuntimeError("inside")
    assert l2_fetch.l2_fetch_bytes() == before
