"""How many teams clear ``topk.BOUND``'s bound on a real workload, call after call.

``santa:topk.BOUND=CAP`` keeps, per query head, the teams whose perturbed logit is at or above
the (K+1)-th largest maximum of its parts (every few consecutive teams), and bisects when more
than CAP clear it (slow). This probe runs it with fresh noise on every call and reports, over all
heads and calls, how many cleared the bound (the K+1 best always do) and how often the bisection
was needed, with each call's selection checked against the block top-k's
(``santa:topk.BOUND=0``) for the same noise.

    python scripts/probe_santa_bound.py [--workload NAME] [--cap 128] [--calls 50] [--json FILE]
        [--device cpu --workload cpu-smoke]   (a smoke run through the interpreter)
"""

from __future__ import annotations

import json

import torch
from probe_session import open_probe_session, probe_arguments

import kprof.kernels  # noqa: F401  (decides on the interpreter before triton is imported)


def kept_at_first(op) -> torch.Tensor:
    """Per head: teams at or above the (K+1)-th largest part maximum (host replay of the filter)."""
    y = op.y.cpu()
    kth = torch.sort(op.part_max[:, : op.n_parts].cpu(), dim=1, descending=True).values[:, op.k]
    return ((y >= kth[:, None]) & (y > float("-inf"))).sum(dim=1)


def main() -> None:
    ap = probe_arguments(__doc__.split("\n")[0], rounds=1, observations=1)
    ap.add_argument("--cap", type=int, default=128, help="topk.BOUND (default 128)")
    ap.add_argument("--calls", type=int, default=50, help="calls with fresh noise (default 50)")
    args = ap.parse_args()
    session = open_probe_session(args)
    by_bound = session.prepare(f"santa:fresh=1,topk.BOUND={args.cap}", "by_bound", "subject").prepared.handle
    by_topk = session.prepare("santa:fresh=1,topk.BOUND=0", "by_topk", "subject").prepared.handle
    counts, same = [], 0
    for _ in range(args.calls):
        by_bound.run()
        by_topk.run()
        counts.append(kept_at_first(by_bound))
        same += bool(torch.equal(by_bound.sel_team[:, : by_bound.k].cpu(), by_topk.sel_team[:, : by_topk.k].cpu()))
    kept = torch.stack(counts).float()
    summary = {"workload": args.workload, "cap": by_bound.bound, "k_plus_1": by_bound.k + 1,
               "teams_per_part": by_bound.part, "parts": by_bound.n_parts, "calls": args.calls,
               "heads": by_bound.hq, "kept_min": int(kept.min()), "kept_median": float(kept.median()),
               "kept_p99": float(torch.quantile(kept.flatten(), 0.99)), "kept_max": int(kept.max()),
               "heads_bisected_fraction": float((kept > by_bound.bound).float().mean()),
               "calls_same_selection_as_block_topk": same}
    print(json.dumps(summary, indent=1))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
