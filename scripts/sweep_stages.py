"""Launch-variant screen: every variant's isolated stage medians and its complete time.

A method's launches are coupled (SANTA++'s topk block size sets how many candidates merge reads;
a Fathom scan tile sets how the top-k reads its scores), so one launch tuned alone can lose end
to end. This times each variant's stages the way ``kprof stages`` does (upstream launches
untimed, eviction before the timed one) in one process and one session, and prints one row per
variant sorted by the complete step. Every variant is validated against the fp64 reference
before timing. Variants of one method (same options, different launch parameters) share one
method instance, so what it caches (Fathom's pinned 1M-token index) is built once.

    python scripts/sweep_stages.py --workload W [--rounds 3] [--obs 40] SPEC...
    (SPEC: a method spec, e.g. santa:topk.BLOCK_T=512,topk.num_warps=2 or fathom:scan.BLOCKS=16)
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from kprof.errors import KprofError
from kprof.methods import get_method
from kprof.methods.registry import parse_method_spec
from kprof.harness import TimedOp
from kprof.session import MeasurementSession


def _options_key(spec: str) -> tuple:
    """A spec's method and non-launch options: variants that differ only in launch parameters share it."""
    name, options = parse_method_spec(spec)
    return name, tuple(sorted((k, v) for k, v in options.items() if "." not in k))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("specs", nargs="+", help="method specs (launch overrides with dots)")
    ap.add_argument("--workload", help="spec name or file (default: the device's default workload)")
    ap.add_argument("--device", default="cuda", help="cuda (default) or cpu (interpreter, for checking the script)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--obs", type=int, default=40, help="observations per stage per round")
    args = ap.parse_args()
    session = MeasurementSession.open(args.device, args.workload, {"rounds": args.rounds, "stage_observations": args.obs,
                                                              "warmup_pairs": 10}, config_mode="default")
    rows = []
    instances = {}
    for spec in args.specs:
        try:
            variant = get_method(spec)
            method = instances.setdefault(_options_key(spec), variant)
            method.launch_overrides = variant.launch_overrides
            pm = session.prepare(spec, spec, "subject", overrides={}, method=method)
        except KprofError as e:
            print(f"{spec}: skipped ({e})", flush=True)
            continue
        stages = [TimedOp(s.name, s.launch) for s in pm.prepared.stages]
        obs = session.harness().stages(stages, TimedOp("complete", pm.prepared.run)).observations
        med = [float(np.median(o)) for o in obs]
        v = pm.record.validation
        rows.append((spec, med, v.max_abs_error, v.passed, tuple(s.label for s in stages)))
        print(f"{spec}: " + " ".join(f"{s.label}={m:.2f}" for s, m in zip(stages, med)) + f" complete={med[-1]:.2f} "
              f"max_abs={v.max_abs_error:.2e} {'ok' if v.passed else 'FAILED'}", flush=True)
    if not rows:
        print("no variant could be prepared", file=sys.stderr)
        return 1
    for names in dict.fromkeys(r[4] for r in rows):  # one table per stage list (methods differ)
        print("\n| variant | " + " | ".join(names) + " | complete us | max abs err |")
        print("|---" * (len(names) + 3) + "|")
        for spec, med, err, ok, _ in sorted((r for r in rows if r[4] == names), key=lambda r: r[1][-1]):
            print(f"| {spec} | " + " | ".join(f"{m:.2f}" for m in med[:-1]) + f" | {med[-1]:.2f} | {err:.2e}"
                  + ("" if ok else " FAILED") + " |")
    return 0 if all(r[3] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
