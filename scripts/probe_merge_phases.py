"""Where ``santa``'s merge launch (the bound filter's launch 3) spends its time, by phases.

The merge runs on one program per KV head (per query head with ``merge.PER_HEAD``, the default) and
was several microseconds above its skeleton at 32K in its union form.
This probe times, in the same paired rounds (eviction before every call, host gate, CUDA events),
the score and filter launches followed by the merge stopped after each of its phases:

- ``candidates``: the wait, the union tables' reset (not with PER_HEAD) and each head's kept keys;
- ``+ select``: and the exact top-(K+1) of those keys and tau;
- ``+ inputs``: and the chosen teams' score, length and first row (the corrections' inputs);
- ``+ union``: and the corrections and the GQA union, or with PER_HEAD each head's own list (the
  real launch);

beside the two launches alone and the complete operator. Differences between consecutive rows are
each phase's cost on the chain's critical path, as the chain runs it (inputs in L2, dependent
launches); a cut merge leaves wrong selections, so the complete operator is timed separately.

    python scripts/probe_merge_phases.py [--workload NAME] [--method SPEC] [--rounds 20] [--json FILE]
        [--device cpu --workload cpu-smoke]   (a smoke run through the interpreter: not GPU numbers)
"""

from __future__ import annotations

from probe_session import open_probe_session, paired_medians, probe_arguments, write_medians

import kprof.kernels  # noqa: F401  (decides on the interpreter before triton is imported)
from kprof.measure.harness import TimedOp

PHASES = ((1, "candidates"), (2, "+ select"), (3, "+ inputs"), (4, "+ union"))


def main() -> None:
    ap = probe_arguments(__doc__.split("\n")[0], rounds=20, observations=300, warmup_pairs=30)
    ap.add_argument("--method", default="santa", help="a santa spec whose merge is the bound filter's (the default)")
    args = ap.parse_args()

    session = open_probe_session(args)
    prepared = session.prepare(args.method, args.method, "subject").prepared
    chain = prepared.handle
    if not chain.bound:
        raise SystemExit(f"{args.method} runs the block top-k's merge: drop topk.BOUND=0")

    def upstream():
        chain.launch_score()
        chain.launch_topk()

    ops = [TimedOp(args.method, prepared.run), TimedOp("score + filter", upstream)]
    for phases, label in PHASES:
        merge = chain.launch_merge.replaced(PHASES=phases)
        ops.append(TimedOp(f"merge {label}", lambda merge=merge: (upstream(), merge())))
    medians = paired_medians(session, ops)
    rows = [medians["score + filter"]] + [medians[f"merge {label}"] for _, label in PHASES]
    print("merge on the chain: " + ", ".join(f"{label} {b - a:+.2f}" for (_, label), a, b in
                                              zip(PHASES, rows, rows[1:])) + " us")
    write_medians(args, medians, method=args.method)


if __name__ == "__main__":
    main()
