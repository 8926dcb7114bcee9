"""The L2 access-policy window: the driver structures against CUDA's header, errors off CUDA, and on
a GPU the stream's own window restored around the launch."""

import ctypes
import re
from pathlib import Path

import pytest
import torch

from kprof.core.errors import ConfigError
from kprof.kernels.common import l2_window


def _cuda_header() -> str:
    import triton

    header = Path(triton.__file__).parent / "backends" / "nvidia" / "include" / "cuda.h"
    if not header.exists():
        pytest.skip("this Triton has no CUDA header to check the driver constants against")
    return header.read_text()


@pytest.mark.parametrize("name, value", [
    ("CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE", l2_window._MAX_WINDOW_ATTRIBUTE),
    ("CU_ACCESS_PROPERTY_STREAMING", l2_window._STREAMING),
    ("CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW", l2_window._ACCESS_POLICY_WINDOW),
])
def test_driver_constants_match_the_cuda_header(name, value):
    found = re.search(rf"\b{name}\s*=\s*(\d+)", _cuda_header())
    assert found, name
    assert int(found.group(1)) == value


def test_structures_have_the_drivers_layout():
    """CUaccessPolicyWindow: pointer, size_t, float, two enums; the attribute value is a 64-byte union."""
    header = _cuda_header()
    body = re.search(r"typedef struct CUaccessPolicyWindow_st \{(.*?)\}", header, re.S).group(1)
    fields = re.findall(r"^\s*[\w\s\*]+?\*?\s*(\w+);", body, re.M)
    assert fields == ["base_ptr", "num_bytes", "hitRatio", "hitProp", "missProp"]
    w = l2_window._Window
    assert [w.base_ptr.offset, w.num_bytes.offset, w.hit_ratio.offset, w.hit_prop.offset, w.miss_prop.offset] == \
        [0, 8, 16, 20, 24]
    assert ctypes.sizeof(l2_window._AttrValue) == 64


def test_a_window_needs_a_cuda_buffer():
    with pytest.raises(ConfigError, match="x=1 needs a CUDA device"):
        l2_window.StreamingWindow.over(torch.zeros(16), "x=1")
    assert l2_window.max_window_bytes(torch.device("cpu")) == 0


def _window_of(stream) -> tuple[int, int]:
    """The stream's window: its size and hit property (the driver may align its base)."""
    value = l2_window._AttrValue()
    assert l2_window._driver().cuStreamGetAttribute(stream.cuda_stream, 1, ctypes.addressof(value)) == 0
    return value.window.num_bytes, value.window.hit_prop


@pytest.mark.gpu
def test_the_window_is_on_the_stream_during_the_launch_and_the_streams_own_after():
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    buf = torch.zeros(1 << 20, device="cuda")
    stream = torch.cuda.Stream()
    seen = []
    windowed = l2_window.StreamingWindow.over(buf, "test").wrap(lambda: seen.append(_window_of(stream)))
    theirs = l2_window._AttrValue()
    theirs.window = l2_window._Window(buf.data_ptr(), 4096, 0.5, 0, 0)
    assert l2_window._driver().cuStreamSetAttribute(stream.cuda_stream, 1, ctypes.addressof(theirs)) == 0
    with torch.cuda.stream(stream):
        windowed()
    assert seen == [(buf.numel() * 4, l2_window._STREAMING)]
    assert _window_of(stream) == (4096, 0)

    def fails():
        raise RuntimeError("the launch failed")

    with torch.cuda.stream(stream), pytest.raises(RuntimeError, match="the launch failed"):
        l2_window.StreamingWindow.over(buf, "test").wrap(fails)()
    assert _window_of(stream) == (4096, 0)
    with pytest.raises(ConfigError, match="largest L2 window"):
        l2_window.StreamingWindow.over(torch.empty(l2_window.max_window_bytes(buf.device) // 2 + 1,
                                                   dtype=torch.float16, device="cuda"), "test")
