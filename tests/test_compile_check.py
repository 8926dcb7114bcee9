"""Every shipped Triton launch compiles for sm_90 without a GPU; a compiler-only error is caught."""

import os
import subprocess
import sys
import textwrap

import pytest

_METHODS = ("triton-dense", "santa", "santa:topk.SELECT=2,merge.SELECT=2,topk.RADIX_BITS=4", "fathom")


def _compiler_available() -> bool:
    try:
        from triton.backends.compiler import GPUTarget  # noqa: F401
        from triton.compiler import ASTSource  # noqa: F401
    except ImportError:
        return False
    return True


pytestmark = pytest.mark.skipif(not _compiler_available(), reason="this Triton has no ahead-of-time compile API")


def test_shipped_launches_compile_for_sm90():
    args = [sys.executable, "-m", "kprof.compile_check", *sum((["--method", m] for m in _METHODS), [])]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    summary = proc.stdout.strip().splitlines()[-1]
    done, total = summary.split()[0].split("/")
    assert done == total and int(total) >= 10, summary  # dense 2, santa 5 + variants, fathom 5


def test_a_kernel_only_the_compiler_rejects_is_reported(tmp_path):
    """The interpreter runs this kernel happily; the compiler refuses its non-constexpr global."""
    (tmp_path / "bad_kernel.py").write_text(textwrap.dedent('''
        import triton
        import triton.language as tl

        SCALE = 3

        @triton.jit
        def scale(X, N: tl.constexpr):
            offs = tl.arange(0, N)
            tl.store(X + offs, tl.load(X + offs) * SCALE)
    '''))
    code = textwrap.dedent('''
        from kprof.compile_check import LaunchRecord, compile_record
        rec = LaunchRecord("bad_kernel", "scale", {"X": "*fp32", "N": "constexpr"}, {"N": 16}, {"num_warps": 1})
        try:
            compile_record(rec, 90)
        except Exception as exc:
            print("REJECTED", type(exc).__name__)
        else:
            print("COMPILED")
    ''')
    env = os.environ | {"TRITON_INTERPRET": "0", "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert "REJECTED" in proc.stdout, proc.stdout + proc.stderr[-2000:]


def test_a_method_without_triton_launches_is_an_error_not_a_pass():
    proc = subprocess.run([sys.executable, "-m", "kprof.compile_check", "--method", "math"], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode != 0 and "made no Triton launch" in proc.stderr
