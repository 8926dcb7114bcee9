"""Every shipped Triton launch compiles for sm_90 without a GPU; a compiler-only error is caught."""

import os
import subprocess
import sys
import textwrap

import pytest

# Each shipped method's launches, and what its compile must show: how many launches at least, the
# kernels that must be among them, and which of them take the waiting path only a GPU takes (the
# interpreter records PARALLEL_COMBINE=False). Fathom at k = 64: the recording workload (4,096
# tokens) then has enough chunks for the Triton top-k (its union inside the top-k launch;
# topk.UNION=0 launches the union on its own).
_METHODS = {
    "triton-dense": (2, ("_split_kv_partial(", "split_kv_combine("), set()),
    "triton-decode": (2, ("_dense_decode(",), {"_dense_decode"}),
    "santa": (5, ("santa_score_bound(", "santa_filter_bound(", "santa_merge_bound(", "santa_attend(",
                  "split_kv_combine("), set()),
    "santa:topk.BOUND=0": (5, ("santa_score(", "santa_block_topk(", "santa_merge_union("), set()),
    "santa:topk.BOUND=0,topk.SELECT=2,merge.SELECT=2,topk.RADIX_BITS=4": (5, ("santa_block_topk(",), set()),
    "santa-fused": (3, ("santa_select_scored_once(", "santa_merge_attend_reduce("), {"santa_merge_attend_reduce"}),
    "fathom:k=64": (7, ("fathom_topk(", "fathom_scan(", "fathom_attend("), set()),
    "fathom:k=64,topk.UNION=0,pieces=1": (7, ("fathom_topk(", "fathom_union("), set()),
}


def _compiler_available() -> bool:
    try:
        from triton.backends.compiler import GPUTarget  # noqa: F401
        from triton.compiler import ASTSource  # noqa: F401
    except ImportError:
        return False
    return True


pytestmark = pytest.mark.skipif(not _compiler_available(), reason="this Triton has no ahead-of-time compile API")


@pytest.mark.slow
@pytest.mark.parametrize("method", list(_METHODS))
def test_shipped_launches_compile_for_sm90(method):
    least, kernels, waiting = _METHODS[method]
    p = subprocess.run([sys.executable, "-m", "kprof.tools.compile_check", "--method", method],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    done, total = (int(n) for n in p.stdout.strip().splitlines()[-1].split()[0].split("/"))
    assert done == total >= least, p.stdout[-2000:]
    assert all(k in p.stdout for k in kernels), p.stdout[-2000:]
    lines = p.stdout.splitlines()
    assert {ln.split("(")[0].split()[-1] for ln in lines if "PARALLEL_COMBINE=True" in ln} == waiting
    import triton

    bindir = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
    if all(os.path.exists(os.path.join(bindir, t)) for t in ("cuobjdump", "nvdisasm")):
        kernel_lines = [ln for ln in lines if ln.startswith("ok ")]
        assert kernel_lines and all(" regs=" in ln and " sass=" in ln for ln in kernel_lines), p.stdout[-2000:]


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


@pytest.mark.slow
def test_workload_shape_alignment_and_dump(tmp_path):
    """--workload records the launches at that spec's shape (G = 4 for Qwen3-8B, not the default
    32K Qwen's 7); --dump writes each launch's TTGIR, PTX and SASS; aligned arguments reach the
    compiler as divisibility-16 attributes, as the GPU launcher would pass them. partial.EVICT reaches
    the PTX as evict-first cache hints on the K and V loads, and only there."""
    spec = "triton-dense:partial.EVICT=1,partial.PREFETCH=1,partial.num_stages=1"
    args = [sys.executable, "-m", "kprof.tools.compile_check", "--method", spec, "--workload", "qwen3-8b-1m",
            "--dump", str(tmp_path)]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "_split_kv_partial(GROUP=4," in proc.stdout
    ttgir = sorted(tmp_path.glob("*_split_kv_partial*.ttgir")) + sorted(tmp_path.glob("*split_kv_combine*.ttgir"))
    assert len(ttgir) == 2 and all(p.with_suffix(".ptx").stat().st_size > 0 for p in ttgir)
    assert all("tt.divisibility = 16" in p.read_text() for p in ttgir)
    partial_ptx, combine_ptx = (p.with_suffix(".ptx").read_text() for p in ttgir)
    assert "L2::evict_first" in partial_ptx and "L2::cache_hint" in partial_ptx
    assert "evict_first" not in combine_ptx
