"""Pinned host buffers that GPU kernels read over PCIe: default, huge-page or write-combined.

A kernel reading pinned host memory translates every address through the GPU's TLBs, and each
PCIe read is snooped by the CPU's caches. Three kinds, which Fathom's ``pages`` option chooses
between: ``default`` (cudaHostAlloc, what ``pin_memory`` gives); ``huge`` (transparent huge pages,
2 MiB, pinned with cudaHostRegister: fewer translations if the driver maps them large);
``wc`` (cuMemHostAlloc write-combined: the CPU's caches are bypassed, so the GPU's reads are not
snooped; CPU reads of it are very slow, so only for buffers the host writes once).
"""

from __future__ import annotations

import ctypes
import mmap
import warnings

import torch

PAGE_KINDS = ("default", "huge", "wc")
_HOSTALLOC_PORTABLE_DEVICEMAP_WRITECOMBINED = 0x01 | 0x02 | 0x04
HUGE_PAGE = 2 << 20


def _safe_to_release(what: str) -> bool:
    """Wait for every device's work (a kernel in flight may still read the pages) unless a stream
    capture is running, where a synchronisation would break it: then the pages are leaked."""
    if torch.cuda.is_current_stream_capturing():
        warnings.warn(f"{what} freed during a CUDA-graph capture: leaked, not released", stacklevel=2)
        return False
    for device in range(torch.cuda.device_count()):
        torch.cuda.synchronize(device)
    return True


class _RegisteredMap(mmap.mmap):
    """An anonymous mapping pinned with cudaHostRegister; unpinned when the last tensor viewing it dies.

    Tensors made by ``torch.frombuffer`` keep their buffer object alive, so this object's lifetime
    is exactly that of the tensors over it.
    """

    registered_ptr = 0

    def __del__(self):
        if self.registered_ptr and _safe_to_release("cudaHostRegister'd pages"):
            err = int(torch.cuda.cudart().cudaHostUnregister(self.registered_ptr))
            if err != 0:
                warnings.warn(f"cudaHostUnregister failed with CUDA error {err}", stacklevel=1)
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


def _write_combined_pinned(nbytes: int) -> torch.Tensor:
    torch.cuda.synchronize()  # the runtime's primary context is current on this thread from here
    driver = ctypes.CDLL("libcuda.so.1")
    ptr = ctypes.c_void_p()
    size = max(1, nbytes)
    err = driver.cuMemHostAlloc(ctypes.byref(ptr), ctypes.c_size_t(size),
                                ctypes.c_uint(_HOSTALLOC_PORTABLE_DEVICEMAP_WRITECOMBINED))
    if err != 0:
        raise RuntimeError(f"cuMemHostAlloc of {size >> 20} MiB (write-combined) failed with CUDA error {err}; "
                           "use pages=default")

    class _WriteCombined(ctypes.c_uint8 * size):
        """The allocation, freed when the last tensor viewing it dies (torch.frombuffer keeps it)."""

        def __del__(self):
            if _safe_to_release("write-combined pinned memory"):
                err = driver.cuMemFreeHost(ctypes.c_void_p(ctypes.addressof(self)))
                if err != 0:
                    warnings.warn(f"cuMemFreeHost failed with CUDA error {err}", stacklevel=1)

    return torch.frombuffer(_WriteCombined.from_address(ptr.value), dtype=torch.uint8)[:nbytes]


def pinned_empty(shape, dtype: torch.dtype, pages: str = "default") -> torch.Tensor:
    """An uninitialised host tensor that kernels can read over PCIe: pinned when CUDA exists (plain
    CPU memory otherwise), by cudaHostAlloc, on huge pages or write-combined (``PAGE_KINDS``)."""
    if pages not in PAGE_KINDS:
        raise ValueError(f"pages must be one of {', '.join(PAGE_KINDS)}, not {pages!r}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if not torch.cuda.is_available():
        return torch.empty(shape, dtype=dtype)
    if pages == "default":
        return torch.empty(shape, dtype=dtype, pin_memory=True)
    nbytes = torch.Size(shape).numel() * torch.empty((), dtype=dtype).element_size()
    alloc = _huge_page_pinned if pages == "huge" else _write_combined_pinned
    return alloc(nbytes).view(dtype).view(shape)


def pinned_like(t: torch.Tensor, pages: str = "default") -> torch.Tensor:
    """A contiguous host copy of ``t`` that kernels can read over PCIe (see :func:`pinned_empty`)."""
    out = pinned_empty(t.shape, t.dtype, pages)
    out.copy_(t.detach())
    return out
