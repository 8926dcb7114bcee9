"""``dot``: tl.dot with one interpreter workaround, for every kernel's tile products.

Triton's CPU interpreter (seen on 3.9) multiplies bf16 tiles as their raw 16-bit patterns, so a
bf16 ``tl.dot`` returns values around 1e10. Under the interpreter operands are upcast to fp32
first (exact for fp16 and bf16, whose products the tensor cores also form exactly in fp32);
compiled kernels keep the plain tensor-core dot.
"""

from __future__ import annotations

import triton
import triton.language as tl

from kprof.kernels import INTERPRETED

_UPCAST_BF16 = tl.constexpr(INTERPRETED)


@triton.jit
def dot(a, b, PRECISION: tl.constexpr):
    if _UPCAST_BF16:
        out = tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
    else:
        out = tl.dot(a, b, input_precision=PRECISION)
    return out
