"""Pinning worker processes to GPUs: device lists, indices within the parent's GPUs, a torch-free start."""

import pytest

from kprof.core.device_pinning import parse_devices
from kprof.core.errors import KprofError


def test_device_lists_parse_and_bad_ones_are_one_line_errors():
    assert parse_devices(None, 8) == ()
    assert parse_devices("all", 4) == ("0", "1", "2", "3")
    assert parse_devices("0,2", 4) == ("0", "2")
    assert parse_devices("0,1", 0) == ("0", "1")  # no GPU: two interpreter workers
    for bad, match in (("0,0", "distinct"), ("x", "indices"), ("5", "has 4 GPU"), ("-1", "distinct")):
        with pytest.raises(KprofError, match=match):
            parse_devices(bad, 4)


def test_device_indices_count_within_the_parents_visible_gpus(monkeypatch):
    from kprof.core.device_pinning import physical_device

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert physical_device("1") == "1"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    assert physical_device("0") == "2" and physical_device("1") == "3"


def test_the_worker_process_entry_imports_no_torch_before_pinning():
    """CUDA reads CUDA_VISIBLE_DEVICES once, at driver start: the process target must not import
    torch (whose import of kprof's worker module starts the driver) before setting it."""
    import subprocess
    import sys

    code = "import sys, kprof.core.device_pinning; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
