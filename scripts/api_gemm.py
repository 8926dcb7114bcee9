"""A GEMM timed through kprof's Python API: the same harness, balanced design and Result as the
CLI, for an operation that is not attention. ``torch.mm`` is the baseline; the candidates are the
same product with the right operand stored column-major, and ``torch.einsum``. The Result file
is one ``kprof report`` and ``kprof gate`` read.

    python scripts/api_gemm.py [--size 4096] [--dtype fp16] [--out runs/api-gemm.json]
"""

from __future__ import annotations

import argparse

DTYPES = ("fp16", "bf16", "fp32")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=None, help="M = N = K (default 4096 on a GPU, 256 on the CPU)")
    ap.add_argument("--dtype", choices=DTYPES, default="fp16", help="input dtype (default fp16; fp32 on the CPU)")
    ap.add_argument("--out", default=None, help="where to write the Result (default: runs/ under KPROF_HOME)")
    args = ap.parse_args()

    import torch

    import kprof

    gpu = torch.cuda.is_available()
    size = args.size or (4096 if gpu else 256)
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[args.dtype if gpu else "fp32"]
    g = torch.Generator().manual_seed(0)
    device = "cuda" if gpu else "cpu"
    a = torch.randn(size, size, generator=g).to(device, dtype)
    b = torch.randn(size, size, generator=g).to(device, dtype)
    b_col = b.T.contiguous().T  # same values, column-major storage

    def column_major(input, mat2):
        return torch.mm(input, b_col)

    def einsum(input, mat2):
        return torch.einsum("ik,kj->ij", input, mat2)

    res = kprof.compare({"column-major B": column_major, "einsum": einsum}, baseline=torch.mm,
                        inputs={"input": a, "mat2": b}, reference=torch.mm, name=f"gemm-{size}-{args.dtype}")
    flops = 2 * size**3
    for label, s in res.summaries.items():
        tflops = flops / s.median_us.estimate / 1e6
        iv = res.speedup(label) if label != "mm" else None
        print(f"{label:>15}: {s.median_us.estimate:9.2f} us  {tflops:7.1f} TFLOP/s"
              + (f"  speedup {iv.estimate:.3f}x [{iv.low:.3f}, {iv.high:.3f}]" if iv and iv.has_interval else ""))
    print(f"Result written to {res.save(args.out)}")


if __name__ == "__main__":
    main()
