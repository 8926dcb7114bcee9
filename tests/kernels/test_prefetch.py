"""In-kernel L2 prefetch: compiled in only with its switch (one prefetch per line of the table),
never changes a result, and merge.PREFETCH=1 gives the same SANTA++ step."""

import os
import subprocess
import sys
import textwrap

import pytest
import torch

from kprof.kernels.prefetch import LINE_BYTES, lines_for


def test_lines_cover_the_table_in_a_power_of_two():
    assert lines_for(1, 4) == 1
    assert lines_for(32, 4) == 1 and lines_for(33, 4) == 2
    assert lines_for(5474, 4) == 256  # 172 lines of 128 bytes
    assert all(lines_for(n, 2) * LINE_BYTES >= 2 * n for n in (1, 63, 64, 65, 1000, 4097))


def test_prefetch_is_compiled_only_with_the_switch():
    """A probe kernel compiled for sm_90: with the switch on, predicated L2 prefetches (256 lines
    over 128 threads: two per thread); off, none."""
    code = textwrap.dedent('''
        from kprof.compile_check import LaunchRecord, compile_record
        import triton, triton.language as tl
        sig = {"T": "*i32", "n": "i32", "Out": "*i32", "ON": "constexpr"}
        rec = LaunchRecord("tests.kernels.prefetch_probe", "probe", sig, {"ON": False}, {"num_warps": 4})
        for on in (False, True):
            ptx = compile_record(rec.__class__(**{**rec.__dict__, "constexprs": {"ON": on}}), 90).asm["ptx"]
            print("PF", int(on), ptx.count("prefetch.global.L2"))
    ''')
    env = os.environ | {"TRITON_INTERPRET": "0", "PYTHONPATH": os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    if "ASTSource" in proc.stderr and "ImportError" in proc.stderr:
        pytest.skip("this Triton has no ahead-of-time compile API")
    counts = {ln.split()[1]: int(ln.split()[2]) for ln in proc.stdout.splitlines() if ln.startswith("PF")}
    assert counts == {"0": 0, "1": 2}, proc.stdout + proc.stderr[-2000:]


@pytest.mark.gpu
def test_gpu_prefetched_table_reads_the_same(target):
    from tests.kernels.prefetch_probe import probe

    t = torch.randint(-1000, 1000, (5000,), dtype=torch.int32, device=target.device)
    out = torch.full((2,), -7, dtype=torch.int32, device=target.device)
    for on in (False, True):
        out.fill_(-7)
        probe[(1,)](t, t.numel(), out, ON=on, num_warps=4)
        assert int(out[0]) == int(t.sum()), on


def test_merge_prefetch_gives_the_same_step(make_workload, cpu_target):
    """The interpreter compiles the prefetch out; on a GPU the same pair runs in the GPU suite."""
    from kprof.methods import get_method

    w = make_workload(8, 2, 320, 32, seed=5)
    outs = []
    for spec in ("santa:p=8,r=2,k=6", "santa:p=8,r=2,k=6,merge.PREFETCH=1"):
        prepared = get_method(spec).prepare(w, cpu_target)
        outs.append(prepared.run().clone())
    assert torch.equal(outs[0], outs[1])
