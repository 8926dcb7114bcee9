"""Pinned host buffers that GPU kernels read over PCIe, with normal or huge pages.

A kernel reading pinned host memory translates every address through the GPU's TLBs. Fathom's
row fetch touches one 512-byte row per 4 KB page of a multi-GiB buffer, so with 4 KB pages
nearly every row is a translation miss. ``pages="huge"`` backs the buffer with transparent huge
pages (2 MiB, ``madvise``) and pins it with ``cudaHostRegister`` instead of ``cudaHostAlloc``;
whether the driver then maps larger GPU pages is for ``scripts/probe_host_reads.py`` to measure.
"""

from __future__ import annotations

import mmap

import torch

PAGE_KINDS = ("default", "huge")
HUGE_PAGE = 2 << 20


class _RegisteredMap(mmap.mmap):
    """An anonymous mapping pinned with cudaHostRegister; unpinned when the last tensor viewing it dies.

    Tensors made by ``torch.frombuffer`` keep their buffer object alive, so this object's lifetime
    is exactly that of the tensors over it.
    """

    registered_ptr = 0

    def __del__(self):
        if self.registered_ptr:
            torch.cuda.synchronize()  # a kernel still in flight may read these pages
            torch.cuda.cudart().cudaHostUnregister(self.registered_ptr)
            self.registered_ptr = 0


def _huge_page_pinned(nbytes: int) -> torch.Tensor:
    size = max(HUGE_PAGE, -(-nbytes // HUGE_PAGE) * HUGE_PAGE)
    region = _RegisteredMap(-1, size + HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    region.madvise(mmap.MADV_HUGEPAGE)
    raw = torch.frombuffer(region, dtype=torch.uint8)
    start = (-raw.data_ptr()) % HUGE_PAGE  # huge pages need 2 MiB-aligned virtual addresses
    buf = raw[start:start + size]
    buf.fill_(0)  # fault the pages in, huge where the kernel can, before the driver pins them
    err = int(torch.cuda.cudart().cudaHostRegister(buf.data_ptr(), size, 0))
    if err != 0:
        raise RuntimeError(f"cudaHostRegister of {size >> 20} MiB failed with CUDA error {err}; "
                           "use pages=default (cudaHostAlloc)")
    region.registered_ptr = buf.data_ptr()
    return buf[:nbytes]


def pinned_empty(shape, dtype: torch.dtype, pages: str = "default") -> torch.Tensor:
    """An uninitialised host tensor that kernels can read over PCIe: pinned when CUDA exists (plain
    CPU memory otherwise), on huge pages when ``pages="huge"``."""
    if pages not in PAGE_KINDS:
        raise ValueError(f"pages must be one of {', '.join(PAGE_KINDS)}, not {pages!r}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if not torch.cuda.is_available():
        return torch.empty(shape, dtype=dtype)
    if pages == "default":
        return torch.empty(shape, dtype=dtype, pin_memory=True)
    nbytes = torch.Size(shape).numel() * torch.empty((), dtype=dtype).element_size()
    return _huge_page_pinned(nbytes).view(dtype).view(shape)


def pinned_like(t: torch.Tensor, pages: str = "default") -> torch.Tensor:
    """A contiguous host copy of ``t`` that kernels can read over PCIe (see :func:`pinned_empty`)."""
    out = pinned_empty(t.shape, t.dtype, pages)
    out.copy_(t.detach())
    return out
