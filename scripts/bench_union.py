"""The Fathom union alone: G binary searches one list after another (``union.LISTS=0``) against
side by side (``union.LISTS=1``), on random ascending winner lists of one step's shape.

The union is the last work of a KV head's top-k, so the last range's union sits on the step's
exposed tail. Its searches are chains of dependent L2 loads: G x (log2 k + 1) rounds one list at
a time, log2 k + 1 side by side. Both forms' outputs are checked equal first, then timed in
paired rounds (kprof's harness, no eviction: in a step the lists were just written, so they are
in L2).

    python scripts/bench_union.py [--group 4] [--k 512] [--hkv 8] [--rounds 20]
        [--device cpu --k 40 --rounds 2]   (a smoke run through the interpreter: not GPU numbers)
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
import torch

from kprof.kernels.fathom.selection import fathom_union  # first: it decides whether Triton is interpreted
from kprof.measure.harness import Harness, TimedOp
from kprof.measure.protocol import TimingProtocol


def _pow2(n: int) -> int:
    return 1 << (n - 1).bit_length()


def _union_launch(top: torch.Tensor, group: int, lists: bool, num_warps: int):
    """A bound union over ``top`` ([Hkv * G, k], ascending rows) and its four outputs."""
    hq, k = top.shape
    hkv, e = hq // group, group * k
    rows = torch.empty(hkv, e, dtype=torch.int64, device=top.device)
    first = torch.empty(hkv, e, dtype=torch.bool, device=top.device)
    slot = torch.empty_like(rows)
    head_slots = torch.empty(hq, k, dtype=torch.int64, device=top.device)

    def run():
        fathom_union[(hkv,)](top, rows, first, slot, head_slots, k, e, top.stride(0), head_slots.stride(0),
                             GROUP=group, BLOCK_E=_pow2(e), SEARCH_STEPS=k.bit_length(),
                             LISTS=_pow2(group) if lists else 0, num_warps=num_warps)
        return rows, first, slot, head_slots

    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--group", type=int, default=4, help="query heads per KV head (Qwen3-8B: 4)")
    ap.add_argument("--k", type=int, default=512, help="winners per query head")
    ap.add_argument("--hkv", type=int, default=8, help="KV heads (programs)")
    ap.add_argument("--universe", type=int, default=1 << 20, help="token positions the winners come from")
    ap.add_argument("--num-warps", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--observations", type=int, default=200, help="timed calls per form per round")
    ap.add_argument("--device", default="cuda", help="cuda, or cpu for a smoke run through the interpreter")
    args = ap.parse_args()
    if args.k > args.universe:
        raise SystemExit(f"--k {args.k} is more than --universe {args.universe} distinct positions")

    g = torch.Generator().manual_seed(0)
    # neighbouring heads of a group share about half their winners, as Fathom's do
    shared = torch.randperm(args.universe, generator=g)[: args.k]
    lists = []
    for _ in range(args.hkv * args.group):
        own = torch.randperm(args.universe, generator=g)[: args.k]
        pick = torch.rand(args.k, generator=g) < 0.5
        lists.append(torch.sort(torch.unique(torch.where(pick, shared, own))).values)
    k = min(x.numel() for x in lists)
    top = torch.stack([x[:k] for x in lists]).to(args.device)
    forms = {f"union.LISTS={int(lists_on)}": _union_launch(top, args.group, lists_on, args.num_warps)
             for lists_on in (False, True)}
    outputs = [[t.cpu() for t in run()] for run in forms.values()]
    if not all(torch.equal(a, b) for a, b in zip(*outputs)):
        raise SystemExit("the two union forms disagree: the side-by-side search is wrong")
    protocol = TimingProtocol(rounds=args.rounds, warmup_pairs=10, observations=args.observations, evict_mib=0)
    ops = [TimedOp(label, run) for label, run in forms.items()]
    obs = Harness(args.device, protocol, telemetry=False).paired(ops).observations
    medians = {op.label: statistics.median(float(np.median(x)) for x in o) for op, o in zip(ops, obs)}
    print(f"union of {args.hkv} KV heads x G={args.group} lists of k={k} winners, {args.num_warps} warps")
    for label, m in medians.items():
        print(f"{label:>16s} {m:9.2f} us")
    base, side = medians.values()
    print(f"side by side / one list at a time: {side / base:.3f}")


if __name__ == "__main__":
    main()
