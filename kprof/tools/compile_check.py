"""Compile every Triton launch for a real GPU target on a machine without one.

The CPU interpreter runs kernels as Python, so it never sees what only the compiler rejects
(a non-constexpr global, a type the MLIR lowering refuses, too much shared memory). This
check records each launch the methods make in the interpreter — kernel, argument types,
constexpr values, num_warps/num_stages — then, in a second process without the interpreter,
compiles every distinct launch for the target (default sm_90, the H100/H200) down to a cubin
with Triton's own ptxas, and reports each kernel's shared memory, registers per thread, spills
and SASS length (so a register-heavy or spilling variant shows before device time is spent on
it). No GPU is needed for either step.

Launches are compiled with the divisibility-by-16 specialisations the GPU launcher makes (16-byte
aligned pointers, ints divisible by 16, as recorded from the interpreter's arguments), so
vectorised and pipelined accesses are those of the device build at the recorded sizes. Limits:
ints equal to 1 are not specialised and bools are typed i1; the recording workload is a spec's
shape (default the 32K Qwen one) cut to 4,096 tokens, so shape-derived constexprs, and the
alignment of sizes that are multiples of 16 only at 4,096 tokens, can differ from full-size runs;
grids sized from the SM count see the interpreter's 4 SMs, so constexprs derived from them (a
combine's split count) are smaller than on the GPU.

    python -m kprof.tools.compile_check [--arch 90] [--method SPEC ...] [--workload SPEC] [--dump DIR]
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

import click
import torch

from kprof.core.atomic import atomic_write_text
from kprof.core.errors import KprofError
from kprof.core.target import resolve_target
from kprof.methods import get_method
from kprof.workloads import synthesize
from kprof.workloads.specs import get_spec

DEFAULT_METHODS = (
    "triton-dense", "triton-dense:partial.EVICT=1,partial.PREFETCH=1,partial.num_stages=1",
    "triton-dense:partial.EVICT=1,partial.num_stages=1,partial.PROGRAMS_PER_SM=4",
    "santa", "santa:topk.BOUND=0", "santa:topk.BOUND=0,topk.SELECT=0,merge.SELECT=0",
    "santa:topk.BOUND=0,topk.SELECT=2,merge.SELECT=2,topk.RADIX_BITS=1,merge.RADIX_BITS=4",
    "santa:topk.BOUND=0,topk.SELECT=1,merge.GATHER=0", "santa:topk.BOUND=0,merge.SELECT=3", "santa:out=fp32",
    "santa:k=1000000", "santa:topk.CARRY=1", "santa:topk.CARRY=1,merge.SELECT=2", "santa:score.PHILOX=1",
    "santa:fresh=1", "santa:score.AHEAD=0,merge.NARROW=0", "santa:merge.SELECT=2", "santa:merge.SELECT=0",
    "santa:merge.PER_HEAD=0", "santa:attend.REDUCE=1", "santa:attend.REDUCE=1,merge.PER_HEAD=0",
    "santa:reduce.BLOCK_D=32,reduce.SKIP_EMPTY=1", "santa:attend.SEARCH=3",
    "fathom", "scan32", "sparq16", "scan-full",
    "fathom:index=hbm", "fathom:topk.PRUNE=0", "scan32:scan.BLOCKS=4,scan.num_warps=8",
    # k = 64 fits 128 chunks of 32 tokens, so the Triton top-k runs (k = 512 needs 16K+ tokens)
    "fathom:k=64", "fathom:k=64,topk.UNION=0,pieces=1", "fathom:k=64,topk.RADIX_BITS=4,topk.SEARCH=0",
    "fathom:k=64,topk.SEARCH=0",
    "scan32:gather=copy,fetch.PAIRED=0",
)
RECORD_TOKENS = 4096
DEFAULT_SHAPE = "qwen2.5-7b-l14-32k"
SMEM_LIMIT = {90: 232_448, 89: 101_376, 80: 166_912}  # max dynamic shared memory per block, bytes
_TORCH_TYPES = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32", torch.float64: "fp64",
                torch.int8: "i8", torch.uint8: "u8", torch.int16: "i16", torch.int32: "i32", torch.int64: "i64",
                torch.bool: "i1"}


@dataclass(frozen=True)
class LaunchRecord:
    """One distinct kernel specialisation: enough to compile it again without running anything."""

    module: str
    kernel: str
    signature: dict[str, str]
    constexprs: dict[str, object]
    options: dict[str, int] = field(default_factory=dict)
    aligned: tuple[str, ...] = ()  # arguments the GPU launcher would specialise as divisible by 16

    def key(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, default=str)


def _arg_type(value) -> str:
    if isinstance(value, torch.Tensor):
        return "*" + _TORCH_TYPES[value.dtype]
    if hasattr(value, "block_shape") and isinstance(getattr(value, "base", None), torch.Tensor):  # TensorDescriptor
        return f"tensordesc<{_TORCH_TYPES[value.base.dtype]}[{','.join(map(str, value.block_shape))}]>"
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        return "i32" if -(2**31) <= value < 2**31 else "i64"
    if isinstance(value, float):
        return "fp32"
    raise TypeError(f"cannot type kernel argument {value!r}")


def _divisible_by_16(value) -> bool:
    """What Triton's launcher specialises on: 16-byte aligned pointers and ints divisible by 16."""
    if isinstance(value, torch.Tensor):
        return value.data_ptr() % 16 == 0
    if hasattr(value, "block_shape"):
        return False
    return isinstance(value, int) and not isinstance(value, bool) and value % 16 == 0


def record_launches(method_specs: tuple[str, ...], workload) -> list[LaunchRecord]:
    """Run each method once (and stage by stage) in the interpreter, recording its launches."""
    import inspect

    from triton.runtime.interpreter import InterpretedFunction


    seen: dict[str, LaunchRecord] = {}
    calls = [0]
    original = InterpretedFunction.run

    def recording_run(self, *args, grid, warmup, **kwargs):
        params = list(inspect.signature(self.fn).parameters.values())
        bound = dict(zip([p.name for p in params], args)) | {k: v for k, v in kwargs.items() if k in
                                                               {p.name for p in params}}
        signature, constexprs = {}, {}
        for p in params:
            if p.name not in bound:
                if "constexpr" in str(p.annotation) and p.default is not inspect.Parameter.empty:
                    # the launcher applies a constexpr's default; a compile from source needs it given
                    signature[p.name], constexprs[p.name] = "constexpr", p.default
                continue
            if "constexpr" in str(p.annotation):
                signature[p.name], constexprs[p.name] = "constexpr", bound[p.name]
            else:
                signature[p.name] = _arg_type(bound[p.name])
        options = {k: int(kwargs[k]) for k in ("num_warps", "num_stages", "maxnreg") if kwargs.get(k) is not None}
        aligned = tuple(name for name, kind in signature.items()
                        if kind != "constexpr" and _divisible_by_16(bound[name]))
        rec = LaunchRecord(self.fn.__module__, self.fn.__name__, signature, constexprs, options, aligned)
        seen.setdefault(rec.key(), rec)
        calls[0] += 1
        return original(self, *args, grid=grid, warmup=warmup, **kwargs)

    target = resolve_target("cpu")
    InterpretedFunction.run = recording_run
    try:
        for spec in method_specs:
            before = calls[0]
            prepared = get_method(spec).prepare(workload, target)
            prepared.run()
            for stage in prepared.stages:
                stage.launch()
            if calls[0] == before:
                raise KprofError(f"{spec} made no Triton launch in the interpreter: name a Triton method "
                                 "(triton-dense, santa, fathom, ...)")
    finally:
        InterpretedFunction.run = original
    return list(seen.values())


def with_pdl(rec: LaunchRecord) -> LaunchRecord:
    """The same launch with programmatic dependent launch on, where the kernel has a PDL switch."""
    import dataclasses

    if "PDL" not in rec.constexprs:
        return rec
    return dataclasses.replace(rec, constexprs=rec.constexprs | {"PDL": True},
                               options=rec.options | {"launch_pdl": 1})


def with_gpu_paths(rec: LaunchRecord) -> list[LaunchRecord]:
    """The launch as recorded, and, where it has a path only a GPU takes (programs waiting for
    others of the launch, ``PARALLEL_COMBINE``: never under the interpreter), that path too."""
    import dataclasses

    if rec.constexprs.get("PARALLEL_COMBINE") is False:
        return [rec, dataclasses.replace(rec, constexprs=rec.constexprs | {"PARALLEL_COMBINE": True})]
    return [rec]


def compile_record(rec: LaunchRecord, arch: int):
    """Compile one launch to a cubin for ``sm_<arch>`` (interpreter off); returns Triton's compiled kernel."""
    import importlib

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    fn = getattr(importlib.import_module(rec.module), rec.kernel)
    names = list(rec.signature)
    attrs = {(names.index(a),): [["tt.divisibility", 16]] for a in rec.aligned}
    src = ASTSource(fn=fn, signature=rec.signature, constexprs=rec.constexprs, attrs=attrs)
    return triton.compile(src, target=GPUTarget("cuda", arch, 32), options=dict(rec.options))


@dataclass(frozen=True)
class ResourceUsage:
    """What ptxas gave one kernel: registers per thread, spill bytes, and its SASS length (a
    static count: loops are counted once). Read with the cuobjdump and nvdisasm Triton ships."""

    registers: int
    stack_bytes: int
    local_bytes: int
    sass_instructions: int

    @property
    def spills(self) -> bool:
        return self.stack_bytes > 0 or self.local_bytes > 0

    def text(self) -> str:
        spill = f" SPILLS stack={self.stack_bytes} B local={self.local_bytes} B" if self.spills else ""
        return f"regs={self.registers} sass={self.sass_instructions}{spill}"


def _binutil(tool: str, args: list[str], cubin: bytes) -> str | None:
    """stdout of one of the CUDA binutils Triton ships (or on PATH) run on ``cubin``; None without it."""
    import shutil
    import tempfile

    import triton

    shipped = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", tool)
    exe = shipped if os.path.exists(shipped) else shutil.which(tool)
    if not exe:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernel.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        return subprocess.run([exe, *args, path], capture_output=True, text=True).stdout


def disassemble(cubin: bytes) -> str | None:
    """The kernel's SASS (nvdisasm), or None where no nvdisasm is available."""
    return _binutil("nvdisasm", ["-c"], cubin)


def resource_usage(cubin: bytes) -> ResourceUsage | None:
    """Static resource usage of a compiled kernel, or None where Triton ships no CUDA binutils."""
    import re

    res, sass = _binutil("cuobjdump", ["-res-usage"], cubin), disassemble(cubin)
    m = re.search(r"REG:(\d+) STACK:(\d+) SHARED:\d+ LOCAL:(\d+)", res or "")
    if not m or sass is None:
        return None
    instructions = sum(1 for ln in sass.splitlines() if re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+\S", ln))
    return ResourceUsage(int(m.group(1)), int(m.group(2)), int(m.group(3)), instructions)


def _one_line(exc: Exception) -> str:
    """The informative line of a compiler error (Triton's put the source excerpt first)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    named = [ln for ln in lines if "Error" in ln or "error" in ln]
    return f"{type(exc).__name__}: {(named or lines or [''])[-1][:240]}"


def _small_workload(spec: str = DEFAULT_SHAPE):
    """A workload spec's shape (heads, d, dtype) cut to RECORD_TOKENS tokens: real types, quick to run."""
    import dataclasses


    return synthesize(dataclasses.replace(get_spec(spec), name="compile-check", n=RECORD_TOKENS))


def _dump(kernel, rec: LaunchRecord, folder: Path) -> None:
    """The compiler's TTGIR, PTX and SASS of one launch: where layouts, conversions and spills show."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{rec.kernel}__{hashlib.sha1(rec.key().encode()).hexdigest()[:8]}"
    for ext in ("ttgir", "ptx"):
        atomic_write_text(folder / f"{stem}.{ext}", kernel.asm[ext])
    sass = disassemble(kernel.asm["cubin"])
    if sass:
        atomic_write_text(folder / f"{stem}.sass", sass)


def _record_in_processes(methods: tuple[str, ...], shape: str) -> list[LaunchRecord]:
    """Each method's launches recorded in its own interpreter process, as many at once as there
    are cores (recording runs the method through the interpreter: most of this tool's time), then
    merged in method order without repeats."""
    from concurrent.futures import ThreadPoolExecutor

    def record(method: str) -> list[LaunchRecord]:
        args = [sys.executable, "-m", "kprof.tools.compile_check", "--record-only", "--workload", shape,
                "--method", method]
        proc = subprocess.run(args, capture_output=True, text=True, env=os.environ | {"TRITON_INTERPRET": "1"})
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise click.ClickException(f"recording the launches of {method} failed: {last}")
        return [LaunchRecord(**r) for r in json.loads(proc.stdout.strip().splitlines()[-1])]

    with ThreadPoolExecutor(max(1, min(len(methods), os.cpu_count() or 1))) as pool:
        per_method = list(pool.map(record, methods))
    merged: dict[str, LaunchRecord] = {}
    for rec in (r for recs in per_method for r in recs):
        merged.setdefault(rec.key(), rec)
    return list(merged.values())


@click.command()
@click.option("--arch", type=int, default=90, show_default=True,
              help="Compute capability to compile for (90: H100/H200).")
@click.option("--method", "methods", multiple=True,
              help="Method spec to record (repeatable) [default: every Triton method and variant].")
@click.option("--workload", "shape", default=DEFAULT_SHAPE, show_default=True,
              help="Workload spec whose shape (heads, head dim, dtype) the launches are recorded at, "
                   "cut to 4,096 tokens.")
@click.option("--dump", type=click.Path(file_okay=False, path_type=Path),
              help="Also write each launch's TTGIR, PTX and SASS into this folder "
                   "(layouts, shared-memory conversions, spills).")
@click.option("--pdl", is_flag=True,
              help="Compile launches that take a PDL constexpr with programmatic dependent launch on "
                   "(the interpreter records them with it off): checks the grid-dependency code compiles.")
@click.option("--record-only", is_flag=True, hidden=True, help="Internal: record launches as JSON on stdout.")
def main(arch: int, methods: tuple[str, ...], shape: str, dump: Path | None, pdl: bool, record_only: bool) -> None:
    """Compile every Triton launch of the shipped methods for a GPU target, without a GPU."""
    methods = methods or DEFAULT_METHODS
    if record_only:
        records = record_launches(methods, _small_workload(shape))
        click.echo(json.dumps([asdict(r) for r in records], default=str))
        return
    records = _record_in_processes(methods, shape)
    if pdl:
        records = [with_pdl(r) for r in records]
    records = [variant for r in records for variant in with_gpu_paths(r)]
    os.environ["TRITON_INTERPRET"] = "0"
    failures = 0
    for rec in records:
        usage = ""
        try:
            kernel = compile_record(rec, arch)
            smem = kernel.metadata.shared
            status = "ok" if smem <= SMEM_LIMIT.get(arch, 232_448) else f"FAIL: {smem} B shared memory > limit"
            res = resource_usage(kernel.asm["cubin"])
            usage = f" smem={smem} {res.text()}" if res else f" smem={smem}"
            if dump is not None:
                _dump(kernel, rec, dump)
        except Exception as exc:  # every compiler error is a finding, reported on one line
            status = f"FAIL: {_one_line(exc)}"
        failures += status != "ok"
        consts = ",".join(f"{k}={v}" for k, v in rec.constexprs.items() if k.isupper())
        click.echo(f"{status:<6} sm_{arch} {rec.kernel}({consts}) {rec.options}{usage}")
    click.echo(f"{len(records) - failures}/{len(records)} launches compiled for sm_{arch}")
    if failures:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
