"""What a pipelined Fathom step does after its scan ends: the exposed tail, kernel by kernel.

The step scans every KV head in one launch while each range's selection (top-k with the union,
fetch, attend tiles, merge) runs on a second stream; only the last range's selection is left
when the scan ends. This probe profiles whole steps (torch's profiler, CUPTI kernel records;
one step at a time, the device idle in between) and prints, as medians over the steps, each
kernel that ends after the scan: its stream, when it starts and ends counted from the scan's
end, and its duration, then the gaps between them. The tail is the step's last kernel end minus
the scan's end.

    python scripts/probe_fathom_tail.py [--workload qwen3-8b-1m] [--method fathom] [--steps 20]
        [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch

SCAN_KERNEL = "fathom_scan"


def kernel_records(trace_file: Path) -> list[dict]:
    """Kernel launches of a Chrome trace by torch's profiler, by start: name, stream, start, end (us)."""
    events = json.loads(trace_file.read_text()).get("traceEvents", [])
    kernels = [{"name": e["name"], "stream": e.get("args", {}).get("stream"), "start": float(e["ts"]),
                "end": float(e["ts"]) + float(e.get("dur", 0.0))}
               for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]
    return sorted(kernels, key=lambda k: k["start"])


def split_steps(kernels: list[dict], per_step: int) -> list[list[dict]]:
    """Consecutive runs of ``per_step`` kernels, each checked to hold the first run's names."""
    if per_step < 1 or len(kernels) % per_step:
        raise SystemExit(f"{len(kernels)} kernels are not whole steps of {per_step}: another process used the GPU "
                         "or the step's launches vary; run again on an idle GPU")
    steps = [kernels[i:i + per_step] for i in range(0, len(kernels), per_step)]
    names = sorted(k["name"] for k in steps[0])
    for i, step in enumerate(steps):
        if sorted(k["name"] for k in step) != names:
            raise SystemExit(f"step {i} launched other kernels than step 0: the steps cannot be lined up")
    return steps


def tail(step: list[dict]) -> list[dict]:
    """The kernels of one step that end after its scan, times counted from the scan's end."""
    scans = [k for k in step if k["name"].startswith(SCAN_KERNEL)]
    if len(scans) != 1:
        raise SystemExit(f"expected one {SCAN_KERNEL} launch a step, found {len(scans)}: is this a pipelined "
                         "Fathom step with its scan fused (the default)?")
    t0 = scans[0]["end"]
    late = sorted((k for k in step if k["end"] > t0 and k is not scans[0]), key=lambda k: k["end"])
    return [{"name": k["name"], "stream": k["stream"], "start": k["start"] - t0, "end": k["end"] - t0}
            for k in late]


def profile_steps(run, steps: int, trace_dir: Path) -> list[dict]:
    """Kernel records of ``steps`` steps, each run alone (synchronised before and after)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            torch.cuda.synchronize()
            run()
            torch.cuda.synchronize()
            time.sleep(0.001)  # an idle gap: steps never overlap
    path = trace_dir / "trace.json"
    prof.export_chrome_trace(str(path))
    return kernel_records(path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workload", default="qwen3-8b-1m", help="workload name or captured file")
    ap.add_argument("--method", default="fathom", help="a pipelined Fathom method spec (pieces > 1)")
    ap.add_argument("--steps", type=int, default=20, help="steps profiled (after 10 unprofiled ones)")
    ap.add_argument("--json", type=Path, help="write every step's tail and the medians here")
    args = ap.parse_args()
    if args.steps < 1:
        raise SystemExit("--steps must be at least 1")

    from kprof.commands.session import MeasurementSession

    session = MeasurementSession.open("cuda", args.workload, {}, config_mode="default")
    prepared = session.prepare(args.method, args.method, "subject").prepared
    for _ in range(10):
        prepared.run()
    torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        one = profile_steps(prepared.run, 1, Path(tmp))
        kernels = profile_steps(prepared.run, args.steps, Path(tmp))
    steps = split_steps(kernels, len(one))
    tails = [tail(step) for step in steps]
    if len({tuple(k["name"] for k in t) for t in tails}) != 1:
        print("note: the kernels after the scan differ between steps; the medians use each step's order")
    width = min(len(t) for t in tails)
    if width == 0:
        raise SystemExit("in some step no kernel ends after the scan: nothing of the step is exposed")

    def med(i, key):
        return statistics.median(t[i][key] for t in tails)

    rows = [{"name": tails[0][i]["name"], "stream": tails[0][i]["stream"], "start": med(i, "start"),
             "end": med(i, "end"), "duration": statistics.median(t[i]["end"] - t[i]["start"] for t in tails)}
            for i in range(width)]
    total = statistics.median(t[-1]["end"] for t in tails)
    step_us = statistics.median(max(k["end"] for k in s) - s[0]["start"] for s in steps)
    print(f"{args.method} on {args.workload}: {len(tails)} steps, {len(one)} kernels a step, step {step_us:,.1f} us "
          f"(first kernel start to last end, profiled); the tail after the scan {total:,.1f} us (medians)")
    print(f"{'kernel':>28s} {'stream':>6s} {'start':>9s} {'end':>9s} {'us':>8s}")
    for r in rows:
        print(f"{r['name'][:28]:>28s} {str(r['stream']):>6s} {r['start']:9.1f} {r['end']:9.1f} {r['duration']:8.1f}")
    if args.json:
        args.json.write_text(json.dumps({"workload": args.workload, "method": args.method, "step_us": step_us,
                                         "tail_us": total, "rows": rows, "steps": tails}, indent=1))


if __name__ == "__main__":
    main()
