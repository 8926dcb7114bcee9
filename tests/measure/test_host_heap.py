"""The steady heap: megabyte blocks that CPU calls allocate and free reuse pages, in every process."""

import subprocess
import sys

import pytest

# In a fresh process: malloc, touch and free a 15 MiB block (what SDPA math's grouped-query expansion
# allocates a call at cpu-smoke) once, then ten times more, counting the page faults of those ten.
PROBE = """
import ctypes, ctypes.util, resource, sys
from kprof.measure.host_heap import steady_heap
applied = steady_heap() if sys.argv[1] == "steady" else None
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.malloc.restype, libc.malloc.argtypes, libc.free.argtypes = ctypes.c_void_p, (ctypes.c_size_t,), (ctypes.c_void_p,)
n = 15 << 20
def call():
    p = libc.malloc(n); ctypes.memset(p, 1, n); libc.free(p)
def faults(): return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
call(); before = faults()
for _ in range(10): call()
print(applied, faults() - before)
"""


def _faults(mode: str) -> tuple[str, int]:
    out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True).stdout
    applied, faults = out.split()
    return applied, int(faults)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_blocks_freed_and_allocated_again_fault_in_no_new_pages():
    pages = (15 << 20) // 4096
    applied, steady = _faults("steady")
    _, default = _faults("default")
    assert applied == "True" and steady < 0.05 * pages, steady
    assert default > 0.5 * pages, f"glibc's own thresholds faulted {default} pages: the probe shows nothing"


def test_the_cpu_harness_steadies_the_heap(monkeypatch):
    from kprof.measure import harness
    from kprof.measure.protocol import CPU_EMBEDDED

    calls = []
    monkeypatch.setattr(harness, "steady_heap", lambda: calls.append(1) or True)
    harness.Harness("cpu", CPU_EMBEDDED.with_overrides(host_bound=True), telemetry=False, gate=None)
    assert calls == [1]
