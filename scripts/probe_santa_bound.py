"""How many teams clear ``topk.BOUND``'s bound on a real workload, call after call.

``santa:topk.BOUND=CAP`` keeps, per query head, the teams whose perturbed logit is at or above
the (K+1)-th largest tile maximum, and bisects when more than CAP clear it (slow). This probe
runs the four launches with fresh noise on every call and reports, over all heads and calls, how
many cleared the bound (the K+1 best always do) and how often the bisection was needed, with the
four launches' selections checked against the five launches' for the same noise.

    python scripts/probe_santa_bound.py [--workload NAME] [--cap 128] [--calls 50] [--json FILE]
        [--device cpu --workload cpu-smoke]   (a smoke run through the interpreter)
"""

from __future__ import annotations

import json

import torch
from probe_session import open_probe_session, probe_arguments

import kprof.kernels  # noqa: F401  (decides on the interpreter before triton is imported)


def kept_at_first(op) -> torch.Tensor:
    """Per head: teams at or above the (K+1)-th largest tile maximum (host replay of the merge)."""
    n_tiles = -(-op.m_max // op.cfg["score"]["BLOCK_M"])
    y, tmax = op.y.cpu(), op.tile_max[:, :n_tiles].cpu()
    top = torch.sort(tmax, dim=1, descending=True).values
    kth = top[:, op.k] if n_tiles > op.k else torch.full((op.hq,), float("-inf"))
    return ((y >= kth[:, None]) & (y > float("-inf"))).sum(dim=1)


def main() -> None:
    ap = probe_arguments(__doc__.split("\n")[0], rounds=1, observations=1)
    ap.add_argument("--cap", type=int, default=128, help="topk.BOUND (default 128)")
    ap.add_argument("--calls", type=int, default=50, help="calls with fresh noise (default 50)")
    args = ap.parse_args()
    session = open_probe_session(args)
    four = session.prepare(f"santa:fresh=1,topk.BOUND={args.cap}", "four", "subject").prepared.handle
    five = session.prepare("santa:fresh=1", "five", "subject").prepared.handle
    counts, same = [], 0
    for _ in range(args.calls):
        four.run()
        five.run()
        counts.append(kept_at_first(four))
        same += bool(torch.equal(four.sel_team[:, : four.k].cpu(), five.sel_team[:, : five.k].cpu()))
    kept = torch.stack(counts).float()
    summary = {"workload": args.workload, "cap": args.cap, "k_plus_1": four.k + 1, "calls": args.calls,
               "heads": four.hq, "kept_min": int(kept.min()), "kept_median": float(kept.median()),
               "kept_p99": float(torch.quantile(kept.flatten(), 0.99)), "kept_max": int(kept.max()),
               "heads_bisected_fraction": float((kept > args.cap).float().mean()),
               "calls_same_selection_as_five_launches": same}
    print(json.dumps(summary, indent=1))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
