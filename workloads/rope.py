"""Rotary position embedding in the Hugging Face ``rotate_half`` convention (Llama/Qwen)."""

from __future__ import annotations

import numpy as np
import torch


def rope_angles(positions: torch.Tensor, d: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin tables ``[N, d]`` for the given integer positions."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float64, device=positions.device) / d))
    ang = positions.to(torch.float64)[:, None] * inv_freq[None, :]
    ang = torch.cat([ang, ang], dim=-1)
    return ang.cos(), ang.sin()


def apply_rope(x: torch.Tensor, positions: torch.Tensor, theta: float) -> torch.Tensor:
    """Rotate ``x [..., N, d]`` by the angles of ``positions [N]``; computed in fp64."""
    d = x.shape[-1]
    cos, sin = rope_angles(positions, d, theta)
    xf = x.to(torch.float64)
    half = d // 2
    rotated = torch.cat([-xf[..., half:], xf[..., :half]], dim=-1)
    return (xf * cos + rotated * sin).to(x.dtype)


def rope_numpy(x: np.ndarray, positions: np.ndarray, theta: float) -> np.ndarray:
    """The same rotation in numpy float64, for the synthetic generator (no torch arithmetic)."""
    d = x.shape[-1]
    inv_freq = 1.0 / (theta ** (np.arange(0, d, 2, dtype=np.float64) / d))
    ang = positions.astype(np.float64)[:, None] * inv_freq[None, :]
    ang = np.concatenate([ang, ang], axis=-1)
    half = d // 2
    rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * np.cos(ang) + rotated * np.sin(ang)
