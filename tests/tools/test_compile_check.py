"""Every shipped Triton launch compiles for sm_90 without a GPU; a compiler-only error is caught."""

import os
import subprocess
import sys
import textwrap

import pytest

# fathom at k = 64: the recording workload (4,096 tokens) then has enough chunks for the Triton top-k
# (its union inside the top-k launch; topk.UNION=0 launches the union on its own)
_METHODS = ("triton-dense", "triton-decode", "santa", "santa:topk.SELECT=2,merge.SELECT=2,topk.RADIX_BITS=4",
            "santa-fused", "fathom:k=64", "fathom:k=64,topk.UNION=0,pieces=1")


def _compiler_available() -> bool:
    try:
        from triton.backends.compiler import GPUTarget  # noqa: F401
        from triton.compiler import ASTSource  # noqa: F401
    except ImportError:
        return False
    return True


pytestmark = pytest.mark.skipif(not _compiler_available(), reason="this Triton has no ahead-of-time compile API")


def _compile(methods) -> subprocess.Popen:
    args = [sys.executable, "-m", "kprof.tools.compile_check", *sum((["--method", m] for m in methods), [])]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_shipped_launches_compile_for_sm90():
    # two compiler processes at once (CI has two cores): santa's launches, and all the others
    halves = [_compile([m for m in _METHODS if m.startswith("santa")]),
              _compile([m for m in _METHODS if not m.startswith("santa")])]
    outs = [p.communicate(timeout=600) for p in halves]
    for p, (out, err) in zip(halves, outs):
        assert p.returncode == 0, out[-3000:] + err[-2000:]
    stdout = "".join(out for out, _ in outs)

    counts = [out.strip().splitlines()[-1].split()[0].split("/") for out, _ in outs]
    done, total = sum(int(d) for d, _ in counts), sum(int(t) for _, t in counts)
    assert done == total and total >= 15, counts  # dense 2 + 2, santa 5 + variants + 3, fathom 7
    assert "fathom_topk(" in stdout and "fathom_union(" in stdout, stdout[-2000:]
    # the waiting paths only a GPU takes (the interpreter records PARALLEL_COMBINE=False) compile too
    waiting = [ln for ln in stdout.splitlines() if "PARALLEL_COMBINE=True" in ln]
    assert {ln.split("(")[0].split()[-1] for ln in waiting} == {"_dense_decode", "santa_merge_attend_reduce"}
    import triton

    bindir = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
    if all(os.path.exists(os.path.join(bindir, t)) for t in ("cuobjdump", "nvdisasm")):
        kernel_lines = [ln for ln in stdout.splitlines() if ln.startswith("ok ")]
        assert kernel_lines and all(" regs=" in ln and " sass=" in ln for ln in kernel_lines), stdout[-2000:]


def test_resource_usage_reads_registers_and_sass_of_a_cubin(tmp_path):
    """A 64x64 fp32 tile product on one warp needs many registers; a copy of 16 values few."""
    (tmp_path / "probe_kernels.py").write_text(textwrap.dedent('''
        import triton
        import triton.language as tl

        @triton.jit
        def big(X, N: tl.constexpr):
            offs = tl.arange(0, N)
            x = tl.load(X + offs[:, None] * N + offs[None, :])
            tl.store(X + offs[:, None] * N + offs[None, :], tl.dot(x, x))

        @triton.jit
        def small(X, N: tl.constexpr):
            offs = tl.arange(0, N)
            tl.store(X + offs, tl.load(X + offs) + 1.0)
    '''))
    code = textwrap.dedent('''
        from kprof.tools.compile_check import LaunchRecord, compile_record, resource_usage
        for name, n in (("big", 64), ("small", 16)):
            rec = LaunchRecord("probe_kernels", name, {"X": "*fp32", "N": "constexpr"}, {"N": n}, {"num_warps": 1})
            r = resource_usage(compile_record(rec, 90).asm["cubin"])
            print("USAGE", name, "none" if r is None else f"{r.registers} {r.sass_instructions}")
    ''')
    env = os.environ | {"TRITON_INTERPRET": "0",
                        "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    usage = {ln.split()[1]: ln.split()[2:] for ln in proc.stdout.splitlines() if ln.startswith("USAGE")}
    assert set(usage) == {"big", "small"}, proc.stdout + proc.stderr[-2000:]
    if usage["big"] != ["none"]:  # Triton ships cuobjdump and nvdisasm: the numbers must be real
        (big_regs, big_sass), (small_regs, small_sass) = [tuple(map(int, usage[k])) for k in ("big", "small")]
        assert big_regs > small_regs and big_sass > small_sass > 5, usage


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
        from kprof.tools.compile_check import LaunchRecord, compile_record
        rec = LaunchRecord("bad_kernel", "scale", {"X": "*fp32", "N": "constexpr"}, {"N": 16}, {"num_warps": 1})
        try:
            compile_record(rec, 90)
        except Exception as exc:
            print("REJECTED", type(exc).__name__)
        else:
            print("COMPILED")
    ''')
    env = os.environ | {"TRITON_INTERPRET": "0",
                        "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert "REJECTED" in proc.stdout, proc.stdout + proc.stderr[-2000:]


def test_a_method_without_triton_launches_is_an_error_not_a_pass():
    proc = subprocess.run([sys.executable, "-m", "kprof.tools.compile_check", "--method", "math"], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode != 0 and "made no Triton launch" in proc.stderr


def test_workload_shape_alignment_and_dump(tmp_path):
    """--workload records the launches at that spec's shape (G = 4 for Qwen3-8B, not the default
    32K Qwen's 7); --dump writes each launch's TTGIR, PTX and SASS; aligned arguments reach the
    compiler as divisibility-16 attributes, as the GPU launcher would pass them."""
    args = [sys.executable, "-m", "kprof.tools.compile_check", "--method", "triton-dense", "--workload", "qwen3-8b-1m",
            "--dump", str(tmp_path)]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "_split_kv_partial(GROUP=4," in proc.stdout
    ttgir = sorted(tmp_path.glob("*_split_kv_partial*.ttgir")) + sorted(tmp_path.glob("*_combine_columns*.ttgir"))
    assert len(ttgir) == 2 and all(p.with_suffix(".ptx").stat().st_size > 0 for p in ttgir)
    assert all("tt.divisibility = 16" in p.read_text() for p in ttgir)
