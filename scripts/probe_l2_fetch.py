"""Methods timed under each L2 fetch-granularity hint: does a whole-line fetch change their time?

The hint (``kernels/common/l2_fetch.py``) is the CUDA context's, so it cannot differ between rows
of one paired run; this probe runs one paired run of the methods per hint value, in one process,
each under ``with L2FetchGranularity(value)``, and prints every method's median and its ratio to
the first method's in each phase. Fathom's fused scan reads 64-byte scale runs from host memory
beside 256-byte plane runs; if ``scripts/probe_host_requests.py --l2-fetch`` shows that a 64-byte
run under a 128-byte fetch costs one whole-line request, two neighbouring tiles' scale runs share
it, and Fathom's scan should gain more than scan32's (perf-notes topic 4, "What a host read costs").

    python scripts/probe_l2_fetch.py --method scan32 --method fathom --workload FILE [--values 32,64,128]
        [--rounds 10] [--observations 100] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import numpy as np


def _values(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError:
        values = []
    if not values or not all(0 <= v <= 128 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: expected hints of 0-128 bytes, e.g. 32,64,128")
    return values


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--method", action="append", required=True, metavar="SPEC",
                    help="a method timed in every phase (repeatable; the first is the ratios' reference)")
    ap.add_argument("--workload", required=True, help="workload name or captured file")
    ap.add_argument("--values", type=_values, default=[32, 64, 128], help="the hints, one phase each (bytes)")
    ap.add_argument("--rounds", type=int, default=10, help="rounds per phase (whole cycles of the design)")
    ap.add_argument("--observations", type=int, default=100, help="timed calls per method per round")
    ap.add_argument("--json", type=Path, help="write every phase's medians here")
    args = ap.parse_args()
    if args.rounds < 1 or args.observations < 1:
        ap.error("--rounds and --observations must be at least 1")
    if len(set(args.method)) < len(args.method):
        ap.error("each --method once: every spec is a row of its own")
    if args.json and not args.json.parent.is_dir():
        ap.error(f"--json {args.json}: no folder {args.json.parent}; create it first")

    import torch

    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device here: the L2 fetch hint is a GPU context's")
    from kprof.commands.session import MeasurementSession
    from kprof.kernels.common.l2_fetch import L2FetchGranularity, l2_fetch_bytes
    from kprof.measure.harness import TimedOp
    from kprof.methods import get_method

    for spec in args.method:  # every name and option checked before anything loads
        get_method(spec)
    session = MeasurementSession.open("cuda", args.workload, {"rounds": args.rounds,
                                                              "observations": args.observations},
                                      config_mode="default")
    runs = {spec: session.prepare(spec, spec, "subject").prepared.run for spec in args.method}
    print(f"the context's own hint: {l2_fetch_bytes()} bytes", flush=True)
    phases = {}
    for value in args.values:
        with L2FetchGranularity(value) as got:
            obs = session.harness().paired([TimedOp(spec, run) for spec, run in runs.items()]).observations
        medians = {spec: statistics.median(float(np.median(r)) for r in x) for spec, x in zip(args.method, obs)}
        phases[f"asked {value}, got {got}"] = medians
        first = medians[args.method[0]]
        cells = "   ".join(f"{spec} {m:,.2f} us ({first / m:.3f}x)" for spec, m in medians.items())
        print(f"L2 fetch {got:>3d} B (asked {value}): {cells}", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"workload": args.workload, "methods": args.method, "phases": phases,
                                         "protocol": session.protocol.to_dict()}, indent=1))


if __name__ == "__main__":
    from kprof.core.errors import run_reporting_errors

    run_reporting_errors(main)
