"""The Fathom index: 4-bit bit-plane keys per KV head, built on the device where the keys live.

Same layout as :mod:`kprof.kernels.fathom.reference` (which stays the independent numpy
version): planes ``[Hkv, d, 4, n_blocks]`` (uint64 patterns in int64, channel-major), scales
``[Hkv, d, n_blocks]`` fp16, and per-channel importance weights ``var [Hkv, d]``. With the KLT
basis (§3.5) the stored channels are ``(k - mu) V`` with V the eigenvectors of the key
covariance ordered by eigenvalue, and the weights are the eigenvalues.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from kprof.core.host_memory import pinned_like

BLOCK = 64
PLANES = 4
BASES = ("raw", "klt")


def quantize_pack(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Planes ``[d, 4, nb]`` and fp16 scales ``[d, nb]`` of one head's keys ``x [n, d]`` (any device)."""
    n, d = x.shape
    nb = -(-n // BLOCK)
    xp = torch.zeros(nb * BLOCK, d, dtype=torch.float64, device=x.device)
    xp[:n] = x.to(torch.float64)
    xb = xp.view(nb, BLOCK, d)
    a = xb.abs().amax(dim=1).to(torch.float16).to(torch.float64)  # [nb, d]
    codes = (torch.floor(xb / (a / 8).clamp_min(1e-30)[:, None, :]).clamp(-8, 7) + 8).to(torch.int64)
    codes = torch.where(a[:, None, :] == 0, torch.full_like(codes, 8), codes)
    shifts = torch.arange(BLOCK, device=x.device, dtype=torch.int64)[None, :, None]
    planes = torch.empty(d, PLANES, nb, dtype=torch.int64, device=x.device)
    for p in range(PLANES):
        bits = (codes >> (PLANES - 1 - p)) & 1  # [nb, 64, d]
        planes[:, p, :] = (bits << shifts).sum(dim=1).T  # distinct bits: the sum is the OR
    return planes, a.to(torch.float16).T.contiguous()


@dataclass
class FathomStore:
    planes: torch.Tensor  # [Hkv, d, 4, nb] int64
    scales: torch.Tensor  # [Hkv, d, nb] fp16
    var: torch.Tensor  # [Hkv, d] fp32: Var(k_j), or the KLT eigenvalues
    n: int
    basis: str = "raw"
    mean: torch.Tensor | None = None  # [Hkv, d] (KLT)
    rotation: torch.Tensor | None = None  # [Hkv, d, d], columns = eigenvectors (KLT)

    @classmethod
    def build(cls, k: torch.Tensor, basis: str = "raw", calibration: torch.Tensor | None = None) -> "FathomStore":
        """Quantise ``k [Hkv, n, d]``; KLT statistics come from ``calibration`` keys or ``k`` itself."""
        if basis not in BASES:
            raise ValueError(f"unknown basis {basis!r}: use raw or klt")
        hkv, n, d = k.shape
        calib = (k if calibration is None else calibration).to(k.device, torch.float64)
        mean = rotation = None
        if basis == "klt":
            mean = calib.mean(dim=1)
            cov = (torch.einsum("hnd,hne->hde", calib - mean[:, None], calib - mean[:, None])
                   / max(1, calib.shape[1] - 1))
            lam, vec = torch.linalg.eigh(cov)  # ascending
            lam, vec = lam.flip(-1).clamp_min(0), vec.flip(-1)
            x = torch.einsum("hnd,hde->hne", k.to(torch.float64) - mean[:, None], vec)
            weights, rotation = lam, vec
        else:
            x = k.to(torch.float64)
            weights = calib.var(dim=1)
        planes, scales = zip(*(quantize_pack(x[h]) for h in range(hkv)))
        return cls(torch.stack(planes), torch.stack(scales), weights.to(torch.float32), n, basis,
                   None if mean is None else mean.to(torch.float32),
                   None if rotation is None else rotation.to(torch.float32))

    @property
    def n_blocks(self) -> int:
        return self.planes.shape[-1]

    def query(self, q: torch.Tensor) -> torch.Tensor:
        """Queries in the store's basis: ``q V`` per group for KLT (the mean shift is a constant per head)."""
        if self.basis == "raw":
            return q
        group = q.shape[0] // self.rotation.shape[0]
        rot = self.rotation.repeat_interleave(group, dim=0).to(q.device, torch.float32)
        return torch.einsum("hd,hde->he", q.to(torch.float32), rot).to(q.dtype)

    def nbytes(self) -> int:
        return self.planes.numel() * 8 + self.scales.numel() * 2

    def pinned(self, pages: str = "default") -> "FathomStore":
        """A copy whose planes and scales live in pinned host memory (the host-index regime);
        ``pages``: one of ``kprof.core.host_memory.PAGE_KINDS``."""
        return FathomStore(pinned_like(self.planes, pages), pinned_like(self.scales, pages), self.var, self.n,
                           self.basis, self.mean, self.rotation)
