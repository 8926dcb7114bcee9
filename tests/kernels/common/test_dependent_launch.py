"""Programmatic dependent launch: where it turns on, and that the GDC code compiles only when asked."""

import os
import subprocess
import sys
import textwrap

import pytest
import torch

from kprof.core.errors import ConfigError
from kprof.kernels.common.dependent_launch import pdl_supported, resolve_pdl


def test_never_on_for_the_interpreter_or_the_cpu():
    assert not pdl_supported(torch.device("cpu"))
    assert resolve_pdl(None, torch.device("cpu")) is False
    assert resolve_pdl(False, torch.device("cpu")) is False


def test_asking_for_it_where_it_cannot_run_is_a_clear_error():
    with pytest.raises(ConfigError, match="pdl=1 needs .* sm_90"):
        resolve_pdl(True, torch.device("cpu"))


def test_santa_option_is_validated_and_recorded(make_workload, cpu_target):
    from kprof.methods import get_method

    with pytest.raises(ConfigError, match="pdl=2"):
        get_method("santa:pdl=2")
    with pytest.raises(ConfigError, match="pdl=1 needs"):
        get_method("santa:pdl=1,p=8,r=2,s=8").prepare(make_workload(4, 2, 160, 16, seed=3), cpu_target)


def test_grid_dependency_control_is_compiled_only_with_the_switch():
    """The reducer compiled for sm_90 with PDL on carries griddepcontrol wait and launch_dependents;
    with it off (the default, and every interpreter run), neither appears."""
    code = textwrap.dedent('''
        from kprof.tools.compile_check import LaunchRecord, compile_record, with_pdl
        sig = {"M_in": "*fp32", "L_in": "*fp32", "Acc_in": "*fp32", "Out": "*fp16", "num_splits": "i32",
               "stride_mh": "i32", "stride_ah": "i32", "stride_as": "i32", "stride_oh": "i32",
               "BLOCK_S": "constexpr", "BLOCK_D": "constexpr", "PDL": "constexpr",
               "SKIP_EMPTY": "constexpr"}
        off = LaunchRecord("kprof.kernels.common.split_kv_combine", "split_kv_combine", sig,
                           {"BLOCK_S": 16, "BLOCK_D": 64, "PDL": False, "SKIP_EMPTY": 0}, {"num_warps": 2})
        for name, rec in (("off", off), ("on", with_pdl(off))):
            ptx = compile_record(rec, 90).asm["ptx"]
            print("GDC", name, ptx.count("griddepcontrol.wait"), ptx.count("griddepcontrol.launch_dependents"))
    ''')
    env = os.environ | {"TRITON_INTERPRET": "0"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    if "ASTSource" in proc.stderr and "ImportError" in proc.stderr:
        pytest.skip("this Triton has no ahead-of-time compile API")
    counts = {ln.split()[1]: tuple(map(int, ln.split()[2:])) for ln in proc.stdout.splitlines() if ln.startswith("GDC")}
    assert counts == {"off": (0, 0), "on": (1, 1)}, proc.stdout + proc.stderr[-2000:]
