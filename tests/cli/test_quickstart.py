"""The README quick start in a fresh interpreter: nothing imported before the CLI decides
whether Triton is interpreted (in-process CLI tests inherit the decision the test session made)."""

import os
import subprocess
import sys

import pytest
import torch


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU embedded default is the no-GPU path")
def test_main_job_runs_in_a_fresh_process_on_the_cpu(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    args = [sys.executable, "-m", "kprof", "compare", "--baseline", "flash", "--rounds", "1", "--observations", "1",
            "--warmup-pairs", "0"]
    proc = subprocess.run(args, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "triton-dense" in proc.stdout and "speedup" in proc.stdout
