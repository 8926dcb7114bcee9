"""Does one method's presence change another's time? A subject timed alone, then beside others.

A comparison interleaves its methods call by call, so a method that leaves the GPU or the process
in some state can move every other row of the run (perf-notes topic 4: Fathom-family methods at
two ``scan.RESERVE`` values ran 11-13% slower, all of them, whatever preceded each call). This probe
times the subject in the protocol's paired rounds in four phases, in one process:

1. ``alone``: the subject only (and ``--baseline``, if given, beside it as in a comparison);
2. ``others prepared``: the same, after the other methods have been prepared and validated (their
   kernels compiled and run once, their buffers allocated), none of them timed;
3. ``interleaved``: the subject, the baseline and the others in the same rounds;
4. ``alone again``: as phase 1, after phase 3.

Each phase prints the subject's and the baseline's medians and round spreads. A change from phase
1 to 2 is the others' existence; to 3, running beside them; a phase 4 unlike phase 1 is a state
that outlasts them.

    python scripts/probe_method_mix.py --subject fathom --baseline scan32 --other fathom:scan.RESERVE=16
        --workload FILE [--rounds 10] [--observations 100] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--subject", required=True, help="the method spec whose time is watched")
    ap.add_argument("--baseline", help="a method spec timed beside the subject in every phase")
    ap.add_argument("--other", action="append", required=True, metavar="SPEC",
                    help="a method prepared in phase 2 and interleaved in phase 3 (repeatable)")
    ap.add_argument("--workload", required=True, help="workload name or captured file")
    ap.add_argument("--rounds", type=int, default=10,
                    help="rounds per phase (rounded up to whole cycles of the balanced design, as in kprof compare)")
    ap.add_argument("--observations", type=int, default=100, help="timed calls per method per round")
    ap.add_argument("--device", default="cuda", help="cuda, or cpu for a smoke run through the interpreter")
    ap.add_argument("--json", type=Path, help="write every phase's medians and round medians here")
    args = ap.parse_args()
    if args.rounds < 1 or args.observations < 1:
        raise SystemExit("--rounds and --observations must be at least 1")
    specs = [args.subject] + ([args.baseline] if args.baseline else []) + args.other
    if len(set(specs)) < len(specs):
        raise SystemExit("--subject, --baseline and --other must name different specs (each is a row of its own)")

    from kprof.commands.session import MeasurementSession
    from kprof.measure.harness import TimedOp
    from kprof.methods import get_method

    for spec in specs:  # every name and option checked before the first phase is timed
        get_method(spec)

    session = MeasurementSession.open(args.device, args.workload, {"rounds": args.rounds,
                                                                   "observations": args.observations},
                                      config_mode="default")
    watched = [args.subject] + ([args.baseline] if args.baseline else [])
    runs = {spec: session.prepare(spec, spec, "subject").prepared.run for spec in watched}
    phases = {}

    def timed(phase: str, specs: list[str]) -> None:
        obs = session.harness().paired([TimedOp(spec, runs[spec]) for spec in specs]).observations
        rounds = {spec: [float(np.median(r)) for r in x] for spec, x in zip(specs, obs)}
        phases[phase] = {spec: {"median_us": statistics.median(r), "round_medians_us": r}
                         for spec, r in rounds.items() if spec in watched}
        cells = "   ".join(f"{spec} {statistics.median(rounds[spec]):,.2f} us ({min(rounds[spec]):,.2f}-"
                           f"{max(rounds[spec]):,.2f})" for spec in watched)
        print(f"{phase:>16s}: {cells}", flush=True)

    timed("alone", watched)
    for spec in args.other:
        runs[spec] = session.prepare(spec, spec, "subject").prepared.run
    timed("others prepared", watched)
    timed("interleaved", watched + args.other)
    timed("alone again", watched)
    first = phases["alone"][args.subject]["median_us"]
    for phase, rows in phases.items():
        print(f"{args.subject}, {phase}: {rows[args.subject]['median_us'] / first - 1:+.1%} against alone")
    if args.json:
        args.json.write_text(json.dumps({"workload": args.workload, "subject": args.subject,
                                         "baseline": args.baseline, "others": args.other, "phases": phases,
                                         "protocol": session.protocol.to_dict()}, indent=1))


if __name__ == "__main__":
    from kprof.core.errors import run_reporting_errors

    run_reporting_errors(main)
