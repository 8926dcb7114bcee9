"""SANTA++ preparation: parents and teams per KV head, packed K/V copies, frozen representatives.

Everything here happens once after prefill, outside timing (SANTA++ Appendix D): team records
are built per KV head, then prompt K and V are copied team-major so each team's members are one
contiguous range; the original cache is left untouched. Teams of one KV head are padded to the
largest team count of any head so kernels index ``[Hkv, M_max]`` arrays; ``num_teams`` says how
many are real.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import torch

from kprof.core.errors import ConfigError
from kprof.kernels.santa.reference import Teams, build_teams, contiguous_parents, kmeans_parents, team_budget

PARENT_POLICIES = ("kmeans", "contiguous")


@dataclass(frozen=True)
class SantaSettings:
    """What determines the team structure (P, R, parents, seed) and the budget (S)."""

    p: int = 16
    r: int = 4
    s: int = 124
    parents: str = "kmeans"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.parents not in PARENT_POLICIES:
            raise ConfigError(f"unknown parent policy {self.parents!r}: use {' or '.join(PARENT_POLICIES)}")
        try:
            team_budget(self.p, self.r, self.s, 1)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None

    def budget(self, m: int) -> int:
        return team_budget(self.p, self.r, self.s, m)

    @property
    def cache_key(self) -> str:
        return f"P{self.p}-R{self.r}-{self.parents}-seed{self.seed}"


@dataclass
class TeamLayout:
    """Team structure of all KV heads as flat int tensors (what the cache stores).

    ``perm[h]``: packed row -> original token index; team g of head h occupies packed rows
    ``start[h, g] : start[h, g] + length[h, g]``; ``rep_index[h, g]`` is its representative's
    token index. Padding teams (g >= num_teams[h]) have length 0 and rep_index 0.
    """

    perm: torch.Tensor  # [Hkv, N] int64
    start: torch.Tensor  # [Hkv, M_max] int32
    length: torch.Tensor  # [Hkv, M_max] int32
    rep_index: torch.Tensor  # [Hkv, M_max] int64
    num_teams: torch.Tensor  # [Hkv] int32

    @classmethod
    def from_teams(cls, teams: list[Teams]) -> "TeamLayout":
        hkv = len(teams)
        n = teams[0].n
        m_max = max(len(t) for t in teams)
        perm = torch.empty(hkv, n, dtype=torch.int64)
        start = torch.zeros(hkv, m_max, dtype=torch.int32)
        length = torch.zeros(hkv, m_max, dtype=torch.int32)
        rep = torch.zeros(hkv, m_max, dtype=torch.int64)
        for h, t in enumerate(teams):
            m = len(t)
            perm[h] = torch.cat(t.members)
            length[h, :m] = t.sizes.to(torch.int32)
            start[h, :m] = (torch.cumsum(t.sizes, 0) - t.sizes).to(torch.int32)
            rep[h, :m] = t.representatives
        return cls(perm, start, length, rep, torch.tensor([len(t) for t in teams], dtype=torch.int32))

    def teams(self) -> list[Teams]:
        """The per-head Teams records this layout encodes."""
        out = []
        for h in range(self.perm.shape[0]):
            m = int(self.num_teams[h])
            starts, lengths = self.start[h, :m].tolist(), self.length[h, :m].tolist()
            members = [self.perm[h, s : s + n] for s, n in zip(starts, lengths)]
            out.append(Teams(members, self.rep_index[h, :m].clone(), self.length[h, :m].to(torch.int64)))
        return out

    def check(self, n: int) -> None:
        """Raise ValueError unless this is a valid partition of ``n`` prompt rows per head."""
        hkv = self.perm.shape[0]
        if self.perm.shape != (hkv, n):
            raise ValueError(f"perm has shape {tuple(self.perm.shape)}, expected ({hkv}, {n})")
        for h in range(hkv):
            m = int(self.num_teams[h])
            if not torch.equal(torch.sort(self.perm[h]).values, torch.arange(n)):
                raise ValueError(f"head {h}: perm is not a permutation of 0..{n - 1}")
            lengths = self.length[h, :m].to(torch.int64)
            if (lengths < 1).any() or int(lengths.sum()) != n or (self.length[h, m:] != 0).any():
                raise ValueError(f"head {h}: team lengths do not cover {n} rows with nonempty teams")
            if not torch.equal(self.start[h, :m].to(torch.int64), torch.cumsum(lengths, 0) - lengths):
                raise ValueError(f"head {h}: team starts are not contiguous")
            for g in range(m):
                s, k = int(self.start[h, g]), int(self.length[h, g])
                if int(self.rep_index[h, g]) not in self.perm[h, s : s + k].tolist():
                    raise ValueError(f"head {h}: representative of team {g} is not its member")


def _head_teams(keys: torch.Tensor, settings: SantaSettings) -> Teams:
    """Parents and teams of one KV head's keys ``[N, d]``."""
    if settings.parents == "kmeans":
        parents = kmeans_parents(keys, settings.p, settings.seed)
    else:
        parents = contiguous_parents(keys.shape[0], settings.p)
    return build_teams(keys, parents, settings.r)


def _head_teams_in_worker(keys: np.ndarray, settings: SantaSettings,
                          threads: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_head_teams` in a worker process, its BLAS/OpenMP threads capped so that parallel
    heads do not oversubscribe the cores. Keys and teams travel as numpy arrays (keys as float32,
    exact for fp16 and bf16; the k-means works in float64): a torch tensor would travel as one
    shared-memory file per tensor, and a head at 128K has thousands of teams, past the limit on
    open files. The teams come back as (members concatenated, sizes, representatives)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=threads):
        teams = _head_teams(torch.from_numpy(keys), settings)
    return (torch.cat(teams.members).numpy(), teams.sizes.numpy(), teams.representatives.numpy())


def _teams_from_arrays(members: np.ndarray, sizes: np.ndarray, representatives: np.ndarray) -> Teams:
    """The :class:`Teams` that :func:`_head_teams_in_worker` flattened."""
    sizes_t = torch.from_numpy(sizes)
    return Teams(members=list(torch.from_numpy(members).split(sizes_t.tolist())),
                 representatives=torch.from_numpy(representatives), sizes=sizes_t)


def layout_workers(hkv: int, n: int, parents: str) -> int:
    """Processes for the heads' k-means: one per head up to half the cores, once a head's k-means
    takes seconds (N >= 16K); below that, starting processes costs more than it saves. A daemon
    process (a tuning worker) may not start processes: one."""
    if parents != "kmeans" or n < 16_384 or hkv < 2 or multiprocessing.current_process().daemon:
        return 1
    return max(1, min(hkv, (os.cpu_count() or 1) // 2))


def build_layout(k: torch.Tensor, settings: SantaSettings, workers: int | None = None) -> TeamLayout:
    """Parents and teams for every KV head of ``k [Hkv, N, d]`` (CPU, fp64 distances); the heads'
    k-means run in ``workers`` processes (default :func:`layout_workers`)."""
    heads = [k[h].detach().to("cpu") for h in range(k.shape[0])]
    workers = workers or layout_workers(len(heads), heads[0].shape[0], settings.parents)
    if workers <= 1:
        return TeamLayout.from_teams([_head_teams(keys, settings) for keys in heads])
    threads = max(1, (os.cpu_count() or 1) // workers)
    context = multiprocessing.get_context("spawn")  # the parent may hold a CUDA context: never fork it
    arrays = [h.float().numpy().copy() for h in heads]
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        flat = list(pool.map(_head_teams_in_worker, arrays, [settings] * len(heads), [threads] * len(heads)))
    return TeamLayout.from_teams([_teams_from_arrays(*f) for f in flat])


@dataclass
class SantaArtifacts:
    """Device-resident prepared state the kernels read; the original K/V are not modified."""

    layout: TeamLayout
    packed_k: torch.Tensor  # [Hkv, N, d] team-major
    packed_v: torch.Tensor
    rep_keys: torch.Tensor  # [Hkv, M_max, d] frozen representative keys (zeros for padding)
    team_start: torch.Tensor  # [Hkv, M_max] int32 on device
    team_len: torch.Tensor  # [Hkv, M_max] int32 on device
    num_teams: torch.Tensor  # [Hkv] int32 on device
    prep_seconds: dict[str, float] = field(default_factory=dict)

    def memory(self) -> dict[str, int]:
        """Bytes of persistent storage beyond the original K/V (real teams, not padding)."""
        teams = int(self.layout.num_teams.sum())
        d = self.rep_keys.shape[-1]
        item = self.rep_keys.element_size()
        return {
            "packed_kv": self.packed_k.numel() * self.packed_k.element_size() * 2,
            "representatives": teams * d * item,
            "starts_lengths": teams * 2 * 4,
            "teams": teams,
        }


def pack(k: torch.Tensor, v: torch.Tensor, layout: TeamLayout) -> SantaArtifacts:
    """Team-major copies of K and V plus representative keys, on the device of ``k``."""
    t0 = time.perf_counter()
    dev = k.device
    perm = layout.perm.to(dev)
    idx = perm[:, :, None].expand(-1, -1, k.shape[-1])
    packed_k = torch.gather(k, 1, idx)
    packed_v = torch.gather(v, 1, idx)
    rep = layout.rep_index.to(dev)
    rep_keys = torch.gather(k, 1, rep[:, :, None].expand(-1, -1, k.shape[-1])).clone()
    m_max = rep.shape[1]
    pad = torch.arange(m_max, device=dev)[None, :] >= layout.num_teams.to(dev)[:, None].to(torch.int64)
    rep_keys[pad] = 0
    arts = SantaArtifacts(layout, packed_k, packed_v, rep_keys, layout.start.to(dev), layout.length.to(dev),
                          layout.num_teams.to(dev))
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    arts.prep_seconds["pack"] = time.perf_counter() - t0
    return arts
