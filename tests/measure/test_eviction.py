"""The eviction buffer's two modes: read-write changes every word, read leaves them as they were."""

import pytest
import torch

from kprof.core.errors import KprofError
from kprof.measure.eviction import EvictionBuffer
from kprof.measure.protocol import TimingProtocol


def test_read_write_mode_writes_every_word_and_read_mode_none():
    rw = EvictionBuffer(torch.device("cpu"), mib=1)
    rw.evict()
    assert rw.nbytes == 2**20 and bool((rw._buf == 2).all())
    ro = EvictionBuffer(torch.device("cpu"), mib=1, mode="read")
    ro._buf[123] = 7  # the reduction reads every word: the largest is found
    ro.evict()
    assert int(ro._sink) == 7 and int(ro._buf.sum()) == ro._buf.numel() + 6


def test_unknown_mode_is_refused_in_buffer_and_protocol():
    with pytest.raises(ValueError, match="must be one of"):
        EvictionBuffer(torch.device("cpu"), mib=1, mode="write")
    with pytest.raises(KprofError, match="--eviction must be one of read-write, read"):
        TimingProtocol(eviction="clean")


def test_mode_label_says_read_only():
    assert "eviction 512 MiB before each call" in TimingProtocol().mode
    assert "eviction 512 MiB read-only before each call" in TimingProtocol(eviction="read").mode
