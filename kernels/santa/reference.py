"""SANTA++ reference (fp64, CPU): parents, teams, budget, Gumbel-top-K sampling, corrections.

Stable API used by the Triton kernels' tests, the validation step and users:
``contiguous_parents``, ``kmeans_parents``, ``build_teams`` / ``Teams``, ``team_budget``,
``inclusion_probability``, ``santa_attention`` and ``kv_access`` (SANTA++ Appendix A and C.1).

Everything here is written for clarity against the paper's Algorithms 1-4, not for speed;
the one exception is team construction, vectorised per parent because it runs at preparation
time on 32K-token caches.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple, Sequence

import numpy as np
import torch

# Algorithm 3's minibatch k-means settings (SANTA++ Appendix A), passed to scikit-learn verbatim.
KMEANS_SETTINGS = dict(
    batch_size=4096,
    n_init=1,
    max_iter=100,
    max_no_improvement=10,
    reassignment_ratio=0.01,
    tol=0.0,
    init="k-means++",
)


# --------------------------------------------------------------------------- parents


def contiguous_parents(n: int, p: int) -> list[torch.Tensor]:
    """Algorithm 4: consecutive spans of ``p`` tokens in token order (the last may be shorter)."""
    if n < 1 or p < 1:
        raise ValueError(f"need n >= 1 and p >= 1, got n={n}, p={p}")
    return [torch.arange(s, min(s + p, n), dtype=torch.int64) for s in range(0, n, p)]


def kmeans_parents(keys: torch.Tensor, p: int, seed: int = 0) -> list[torch.Tensor]:
    """Algorithm 3: MiniBatchKMeans with the paper's settings on raw keys ``[N, d]``.

    ``min(N, max(2, N // p))`` centres; final assignment to the nearest centre with ties to the
    lower centre index; empty parents omitted; parents ordered by centre index, members ascending.
    """
    from sklearn.cluster import MiniBatchKMeans

    x = keys.detach().to("cpu", torch.float64).numpy()
    n = x.shape[0]
    if n < 2:
        raise ValueError(f"k-means parents need at least 2 keys, got {n}")
    m = min(n, max(2, n // p))
    km = MiniBatchKMeans(n_clusters=m, random_state=seed, **KMEANS_SETTINGS).fit(x)
    centres = km.cluster_centers_
    # squared distances via the expansion; argmin returns the first (lowest) index on ties
    d2 = (x * x).sum(1)[:, None] - 2 * x @ centres.T + (centres * centres).sum(1)[None, :]
    assign = np.argmin(d2, axis=1)
    order = np.argsort(assign, kind="stable")
    bounds = np.searchsorted(assign[order], np.arange(m + 1))
    return [torch.from_numpy(order[bounds[u] : bounds[u + 1]].copy()) for u in range(m) if bounds[u + 1] > bounds[u]]


# --------------------------------------------------------------------------- teams


@dataclass
class Teams:
    """Team records of one KV head, in the order Algorithm 2 appends them.

    ``members[g]``: ascending token indices of team g; ``representatives[g]``: its
    representative's token index; ``sizes[g] = len(members[g])``.
    """

    members: list[torch.Tensor]
    representatives: torch.Tensor
    sizes: torch.Tensor

    def __len__(self) -> int:
        return len(self.members)

    @property
    def n(self) -> int:
        return int(self.sizes.sum())


def _sq_dist(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exact squared Euclidean distances ``[len(a), len(b)]`` (difference form, fp64)."""
    diff = a[:, None, :] - b[None, :, :]
    return np.einsum("ijk,ijk->ij", diff, diff)


def _teams_of_parent(x: np.ndarray, idx: np.ndarray, r: int) -> list[tuple[np.ndarray, int]]:
    """Algorithm 2 for one parent: ``[(member token indices, representative token index), ...]``."""
    idx = np.sort(idx)
    pts = x[idx]
    r = min(r, idx.shape[0])
    mean = pts.mean(axis=0)
    to_mean = ((pts - mean) ** 2).sum(axis=1)
    chosen = [int(np.argmin(to_mean))]  # argmin/argmax take the first index: lowest token index wins ties
    nearest = _sq_dist(pts, pts[chosen[-1]][None])[:, 0]
    for _ in range(1, r):
        cand = nearest.copy()
        cand[chosen] = -np.inf
        chosen.append(int(np.argmax(cand)))
        nearest = np.minimum(nearest, _sq_dist(pts, pts[chosen[-1]][None])[:, 0])
    owner = np.argmin(_sq_dist(pts, pts[chosen]), axis=1)  # ties: earliest selected representative
    owner[chosen] = np.arange(r)  # representatives own themselves
    return [(idx[owner == u], int(idx[chosen[u]])) for u in range(r)]


def build_teams(keys: torch.Tensor, parents: Sequence[torch.Tensor], r: int) -> Teams:
    """Algorithm 2 on raw keys ``[N, d]``: up to ``r`` actual-key representatives per parent."""
    if r < 1:
        raise ValueError(f"r must be >= 1, got {r}")
    x = keys.detach().to("cpu", torch.float64).numpy()
    members, reps = [], []
    for parent in parents:
        if parent.numel() == 0:
            raise ValueError("parents must be nonempty")
        for mem, rep in _teams_of_parent(x, parent.numpy(), r):
            members.append(torch.from_numpy(mem.astype(np.int64)))
            reps.append(rep)
    sizes = torch.tensor([m.numel() for m in members], dtype=torch.int64)
    return Teams(members=members, representatives=torch.tensor(reps, dtype=torch.int64), sizes=sizes)


# --------------------------------------------------------------------------- budget and corrections


def team_budget(p: int, r: int, s: int, m: int) -> int:
    """Equation 5: ``K = min(M, S / (P/R))``; P must be divisible by R and S by P/R."""
    if min(p, r, s, m) < 1:
        raise ValueError(f"P, R, S, M must be positive, got P={p}, R={r}, S={s}, M={m}")
    if p % r:
        raise ValueError(f"P={p} is not divisible by R={r}: choose R dividing P")
    if s % (p // r):
        raise ValueError(f"S={s} is not divisible by P/R={p // r}: choose S as a multiple of {p // r}")
    return min(m, s // (p // r))


def inclusion_probability(phi: torch.Tensor, tau: torch.Tensor | float) -> torch.Tensor:
    """Equation 7: ``c = 1 - exp(-exp(phi - tau))``, accurate from tiny to ~1."""
    x = torch.as_tensor(phi, dtype=torch.float64) - torch.as_tensor(tau, dtype=torch.float64)
    return -torch.expm1(-torch.exp(x))


def log_inclusion_probability(phi: torch.Tensor, tau: torch.Tensor | float) -> torch.Tensor:
    """``log c`` without underflow: ``x - e^x/2`` when ``e^x`` is tiny (x = phi - tau)."""
    x = torch.as_tensor(phi, dtype=torch.float64) - torch.as_tensor(tau, dtype=torch.float64)
    y = torch.exp(x)
    return torch.where(y < 1e-8, x - y / 2, torch.log(-torch.expm1(-y.clamp_min(1e-300))))


def gumbel(shape, generator: torch.Generator) -> torch.Tensor:
    """Standard Gumbel(0, 1) draws in fp64."""
    u = torch.rand(shape, generator=generator, dtype=torch.float64).clamp(1e-300, 1 - 1e-16)
    return -torch.log(-torch.log(u))


# --------------------------------------------------------------------------- estimator


class Selection(NamedTuple):
    """One query head's sample: selected team ids (descending perturbed score) and their c_g."""

    teams: torch.Tensor
    corrections: torch.Tensor


class SantaResult(NamedTuple):
    output: torch.Tensor  # [Hq, d] fp64
    selected: list[torch.Tensor]  # per query head, team ids
    corrections: list[torch.Tensor]  # per query head, c_g of each selected team


def routing_logits(q: torch.Tensor, k: torch.Tensor, teams: Teams) -> torch.Tensor:
    """Equation 3: ``phi_g = log n_g + q . l_g / sqrt(d)`` for one query head."""
    q = q.to(torch.float64)
    reps = k[teams.representatives].to(torch.float64)
    return torch.log(teams.sizes.to(torch.float64)) + reps @ q / math.sqrt(q.shape[0])


def sample_teams(phi: torch.Tensor, k_teams: int, noise: torch.Tensor | None = None,
                 generator: torch.Generator | None = None) -> Selection:
    """Algorithm 1 lines 3-12: Gumbel-top-K with the (K+1)-th score as the threshold."""
    m = phi.shape[0]
    k_teams = min(k_teams, m)
    if k_teams == m:
        return Selection(torch.arange(m), torch.ones(m, dtype=torch.float64))
    if noise is None:
        noise = gumbel((m,), generator)
    y = phi + noise
    top = torch.topk(y, k_teams + 1)
    chosen = top.indices[:k_teams]
    return Selection(chosen, inclusion_probability(phi[chosen], top.values[k_teams]))


class HeadSums(NamedTuple):
    """Ẑ and Û of one query head, both scaled by ``exp(-shift)`` (shift = max logit of the head)."""

    z_hat: torch.Tensor
    u_hat: torch.Tensor
    shift: float


def estimate_sums(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, teams: Teams, selection: Selection,
                  suffix: int = 0) -> HeadSums:
    """Equation 4 for one query head given its selection; the last ``suffix`` rows are exact."""
    q, k, v = (t.to(torch.float64) for t in (q, k, v))
    n_prompt = k.shape[0] - suffix
    s = k @ q / math.sqrt(q.shape[0])
    shift = float(s.max())
    a = torch.exp(s - shift)
    z = a[n_prompt:].sum()
    u = a[n_prompt:] @ v[n_prompt:]
    for g, c in zip(selection.teams.tolist(), selection.corrections):
        rows = teams.members[g]
        z = z + a[rows].sum() / c
        u = u + (a[rows] @ v[rows]) / c
    return HeadSums(z, u, shift)


def attention_with_selection(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, teams: Sequence[Teams],
                             selections: Sequence[Selection], suffix: int = 0) -> torch.Tensor:
    """Output ``[Hq, d]`` for given per-head selections (e.g. a kernel's own) in fp64."""
    hq = q.shape[0]
    group = hq // k.shape[0]
    out = torch.empty(hq, q.shape[1], dtype=torch.float64)
    for h in range(hq):
        sums = estimate_sums(q[h], k[h // group], v[h // group], teams[h // group], selections[h], suffix)
        out[h] = sums.u_hat / sums.z_hat
    return out


def santa_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, teams: Teams | Sequence[Teams],
                    k_teams: int, generator: torch.Generator, suffix: int | None = None) -> SantaResult:
    """Algorithm 1 for every query head of every GQA group, independent Gumbel draws per head.

    ``q [Hq, d]``, ``k, v [Hkv, N + E, d]``; ``teams`` per KV head partition the first N rows;
    the last ``suffix`` (E) rows are the exact generated suffix.
    """
    q, k, v = (t.detach().to("cpu") for t in (q, k, v))
    if k.dim() == 2:
        k, v = k[None], v[None]
    teams = [teams] if isinstance(teams, Teams) else list(teams)
    if len(teams) != k.shape[0]:
        raise ValueError(f"need one Teams per KV head: got {len(teams)} for Hkv={k.shape[0]}")
    suffix = suffix or 0
    group = q.shape[0] // k.shape[0]
    selections = []
    for h in range(q.shape[0]):
        t = teams[h // group]
        selections.append(sample_teams(routing_logits(q[h], k[h // group], t), k_teams, generator=generator))
    out = attention_with_selection(q, k, v, teams, selections, suffix)
    return SantaResult(out, [s.teams for s in selections], [s.corrections for s in selections])


# --------------------------------------------------------------------------- access counter


def kv_access(teams: Sequence[Teams], selected: Sequence[torch.Tensor], suffix: int = 0) -> float:
    """Equation 13 for one decoding call: logical KV access in percent of dense (2 per row).

    Per KV head: M representatives scanned for routing, plus key and value for the union of rows
    selected by its query heads, plus the exact suffix; over ``2 (N + E)`` per KV head.
    """
    hkv = len(teams)
    group = len(selected) // hkv
    num = den = 0
    for h, t in enumerate(teams):
        rows = set()
        for sel in selected[h * group : (h + 1) * group]:
            for g in sel.tolist():
                rows.update(t.members[g].tolist())
        num += len(t) + 2 * (len(rows) + suffix)
        den += 2 * (t.n + suffix)
    return 100.0 * num / den
