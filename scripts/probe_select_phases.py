"""Where ``santa-fused``'s first launch (``select``) spends its time, measured by phases.

``select`` is 19 us by ncu at 32K against 15.4 us for the two ``santa`` launches it replaces
(score, block top-k). This probe times, in the same paired rounds (eviction before every call,
host gate, CUDA events), the select launch stopped after each of its phases, for each select
variant asked (``select.*`` parameters, e.g. ``BLOCK_T=256`` or ``SCORE_ONCE=1,BLOCK_M=32``):

- ``scores``: the tile loop alone (each program scores its block for its head and stores it);
- ``+ block top``: and the block's KPAD best keys (log n, noise, top-k);
- ``+ fold``: and the fold of the head's blocks by the last program to arrive (the real launch);

beside ``santa``'s own score launch, its score and top-k launches, and both complete operators.
Differences between consecutive phases are each phase's cost on the select launch's critical
path; each row is timed alone, so they are not additive with the attend launch.

    python scripts/probe_select_phases.py [--workload NAME] [--select SCORE_ONCE=0 SCORE_ONCE=1] [--rounds 20]
        [--observations 300] [--json FILE]
        [--device cpu --workload cpu-smoke]   (a smoke run through the interpreter: not GPU numbers)
"""

from __future__ import annotations

from probe_session import open_probe_session, paired_medians, probe_arguments, write_medians

import kprof.kernels  # noqa: F401  (decides on the interpreter before triton is imported)
from kprof.measure.harness import TimedOp

PHASES = ((1, "scores"), (2, "+ block top"), (3, "+ fold"))


def main() -> None:
    ap = probe_arguments(__doc__.split("\n")[0], rounds=20, observations=300, warmup_pairs=30)
    ap.add_argument("--select", nargs="+", default=["SCORE_ONCE=0", "SCORE_ONCE=1"],
                    help="select variants to probe, each PARAM=V[,PARAM=V...] of santa-fused's select launch")
    args = ap.parse_args()

    session = open_probe_session(args)
    santa = session.prepare("santa", "santa", "subject").prepared
    ops = [TimedOp("santa", santa.run)]
    chain = santa.handle
    ops += [TimedOp("santa score", chain.launch_score),
            TimedOp("santa score + top-k", lambda: (chain.launch_score(), chain.launch_topk()))]
    for variant in args.select:
        spec = "santa-fused:" + ",".join(f"select.{kv}" for kv in variant.split(","))
        fused = session.prepare(spec, spec, "subject").prepared
        ops.append(TimedOp(f"santa-fused {variant}", fused.run))
        select = fused.handle.launch_select
        for phases, label in PHASES:
            ops.append(TimedOp(f"select {variant} {label}", select.replaced(PHASES=phases)))
    medians = paired_medians(session, ops)
    for variant in args.select:
        rows = [medians[f"select {variant} {label}"] for _, label in PHASES]
        print(f"{variant}: scores {rows[0]:.2f} us, block top {rows[1] - rows[0]:+.2f}, "
              f"fold {rows[2] - rows[1]:+.2f}; the attend launch after it "
              f"{medians[f'santa-fused {variant}'] - rows[2]:+.2f}")
    write_medians(args, medians, select=args.select)


if __name__ == "__main__":
    main()
