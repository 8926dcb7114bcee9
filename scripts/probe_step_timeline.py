"""Kernel timeline of a decode step on the GPU (CUPTI through torch.profiler): where a step's time
goes between and inside its launches, eagerly and in CUDA-graph replays.

Each step runs the way the timing protocol runs it (host gate held, eviction, step, gate
released, one step per region), so the step's own launches are never waiting for the host. The
profiler records every kernel's start, end and stream; per step this prints the span (first
kernel start to last kernel end), the idle time of each stream inside the span, and for the
median step the launches in order with the gap each one waited after the previous launch on its
stream. Event-timed medians from the same steps are printed beside the spans.

    python scripts/probe_step_timeline.py --workload FILE fathom scan32 fathom:pieces=1 [--steps 20]
        [--interleave] [--no-sync] [--no-graph]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch

from kprof.graphs import capture
from kprof.host_gate import HostGate


@dataclass(frozen=True)
class Kernel:
    name: str
    stream: int
    start: float  # us, profiler clock
    end: float


def short(name: str) -> str:
    return name.split("(")[0].split("<")[0].replace("void ", "")[:40]


def kernels_from_trace(path: Path) -> list[Kernel]:
    doc = json.loads(path.read_text())
    out = [Kernel(short(e["name"]), int(e.get("args", {}).get("stream", -1)), float(e["ts"]), float(e["ts"] + e["dur"]))
           for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]
    return sorted(out, key=lambda k: k.start)


def steps_of(kernels: list[Kernel]) -> list[list[Kernel]]:
    """Split at the gate's spin kernels; drop each region's first kernel after the spin (the eviction)."""
    spins = [i for i, k in enumerate(kernels) if "_spin" in k.name]
    steps = []
    for a, b in zip(spins, spins[1:] + [len(kernels)]):
        region = kernels[a + 1:b]
        if region:
            evict_end = region[0].end
            steps.append([k for k in region[1:] if k.start >= evict_end - 1e-3])
    return steps


def describe(step: list[Kernel]) -> dict:
    t0 = min(k.start for k in step)
    t1 = max(k.end for k in step)
    streams: dict[int, list[Kernel]] = {}
    for k in step:
        streams.setdefault(k.stream, []).append(k)
    busy = {s: sum(k.end - k.start for k in ks) for s, ks in streams.items()}
    return {"span": t1 - t0, "t0": t0, "streams": streams, "busy": busy}


def run_steps(invokes: list, gate: HostGate, evict, steps: int, trace: Path, sync: bool) -> list[list[float]]:
    """``steps`` regions of each invoke, round robin; event times per invoke. ``sync``: wait for
    the device after each region (else only at the end, as the protocol's rounds do: the host
    then enqueues ahead of the device)."""
    n = len(invokes)
    start = [torch.cuda.Event(enable_timing=True) for _ in range(steps * n)]
    stop = [torch.cuda.Event(enable_timing=True) for _ in range(steps * n)]
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for i in range(steps * n):
            gate.hold()
            evict()
            start[i].record()
            invokes[i % n]()
            stop[i].record()
            gate.release()
            if sync:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
    prof.export_chrome_trace(str(trace))
    times = [a.elapsed_time(b) * 1e3 for a, b in zip(start, stop)]
    return [times[m::n] for m in range(n)]


def report(label: str, steps: list[list[Kernel]], event_us: list[float]) -> dict:
    desc = [describe(s) for s in steps]
    spans = [d["span"] for d in desc]
    mid = sorted(range(len(desc)), key=lambda i: spans[i])[len(desc) // 2]
    d = desc[mid]
    print(f"\n## {label}: {len(steps)} steps, span median {statistics.median(spans):.1f} us "
          f"(min {min(spans):.1f}, max {max(spans):.1f}); event-timed median {statistics.median(event_us):.1f} us")
    for s, ks in d["streams"].items():
        idle = (max(k.end for k in ks) - min(k.start for k in ks)) - d["busy"][s]
        print(f"stream {s}: {len(ks)} kernels, busy {d['busy'][s]:.1f} us, idle between them {idle:.1f} us, "
              f"first at +{min(k.start for k in ks) - d['t0']:.1f}, last ends at +{max(k.end for k in ks) - d['t0']:.1f}")
    print(f"{'kernel':>40s} {'stream':>7s} {'start':>8s} {'dur':>8s} {'gap':>7s}")
    last_end: dict[int, float] = {}
    for k in sorted(sum(d["streams"].values(), []), key=lambda k: k.start):
        gap = k.start - last_end.get(k.stream, d["t0"])
        last_end[k.stream] = k.end
        print(f"{k.name:>40s} {k.stream:>7d} {k.start - d['t0']:8.1f} {k.end - k.start:8.1f} {gap:7.1f}")
    per_kernel: dict[str, list[float]] = {}
    for step in steps:
        seen: dict[str, int] = {}
        for k in step:
            seen[k.name] = seen.get(k.name, 0) + 1
            per_kernel.setdefault(f"{k.name}#{seen[k.name]}", []).append(k.end - k.start)
    return {"label": label, "span_median_us": statistics.median(spans), "event_median_us": statistics.median(event_us),
            "spans_us": spans, "event_us": event_us,
            "kernel_median_us": {n: statistics.median(v) for n, v in per_kernel.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("methods", nargs="+", help="method specs (e.g. fathom fathom:pieces=1 scan32)")
    ap.add_argument("--workload", required=True, help="workload name or captured file")
    ap.add_argument("--steps", type=int, default=20, help="profiled steps per method and mode")
    ap.add_argument("--no-graph", action="store_true", help="eager steps only")
    ap.add_argument("--interleave", action="store_true",
                    help="alternate the methods' steps (as kprof compare does) instead of one method at a time")
    ap.add_argument("--no-sync", action="store_true",
                    help="sync once at the end, not after every step (the host enqueues ahead, as in a round)")
    ap.add_argument("--json", type=Path, help="write the summaries here")
    args = ap.parse_args()

    from kprof.session import MeasurementSession

    session = MeasurementSession.open("cuda", args.workload, {}, config_mode="default")
    dev = session.target.device
    gate = HostGate(dev)
    evict = session.eviction().evict
    results = []
    prepared = {spec: session.prepare(spec, spec, "subject").prepared for spec in args.methods}
    groups = [[spec] for spec in args.methods] if not args.interleave else [list(args.methods)]
    sync = not args.no_sync
    with tempfile.TemporaryDirectory() as tmp:
        for group in groups:
            modes = [("eager", [prepared[s].run for s in group])]
            if not args.no_graph:
                modes.append(("graph", [capture(prepared[s].run, dev) for s in group]))
            for mode, invokes in modes:
                for invoke in invokes * 3:
                    invoke()
                torch.cuda.synchronize()
                trace = Path(tmp) / "trace.json"
                event_us = run_steps(invokes, gate, evict, args.steps, trace, sync)
                steps = steps_of(kernels_from_trace(trace))
                for m, spec in enumerate(group):
                    label = f"{spec} {mode}" + (" interleaved" if len(group) > 1 else "") + ("" if sync else " no-sync")
                    results.append(report(label, steps[m::len(group)], event_us[m]))
    for spec, p in prepared.items():
        if hasattr(p.handle, "wait_expiries"):
            print(f"{spec}: top-k waits that gave up: {p.handle.wait_expiries()}")
    print(f"\n{'method, mode':>44s} {'span us':>9s} {'events us':>10s}")
    for r in results:
        print(f"{r['label']:>44s} {r['span_median_us']:9.1f} {r['event_median_us']:10.1f}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
