"""What a pipelined Fathom step does after its scan ends: the exposed tail, kernel by kernel.

The step scans every KV head in one launch while each range's selection (top-k with the union,
fetch, attend tiles, merge) runs on a second stream; only the last range's selection is left
when the scan ends. This probe profiles whole steps (torch's profiler, CUPTI kernel records;
one step at a time, the device idle in between) and prints, as medians over the steps, each
kernel that ends after the scan: its stream, when it starts and ends counted from the scan's
end, and its duration, then the gaps between them. The tail is the step's last kernel end minus
the scan's end.

With ``--evict`` each profiled step follows the protocol's eviction kernel, as in a comparison's
rounds: every kernel's duration is then printed per mode, so a kernel that grows is named. With
``--harness`` the steps are also timed by the harness itself (host gate, eviction, events) under
the profiler: the events' times beside the same steps' kernel spans.

    python scripts/probe_fathom_tail.py [--workload qwen3-8b-1m] [--method fathom] [--steps 20]
        [--evict none --evict read-write --evict read] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch

from kprof.measure.protocol import EVICTION_MODES

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


def profile_steps(run, steps: int, trace_dir: Path, evict=None) -> list[dict]:
    """Kernel records of ``steps`` steps, each run alone (synchronised before and after), each after
    ``evict`` (the protocol's eviction kernel) where given."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            torch.cuda.synchronize()
            if evict is not None:
                evict()
            run()
            torch.cuda.synchronize()
            time.sleep(0.001)  # an idle gap: steps never overlap
    path = trace_dir / "trace.json"
    prof.export_chrome_trace(str(path))
    return kernel_records(path)


def step_kernels(run, steps: int, trace_dir: Path, evict=None) -> list[list[dict]]:
    """The kernels of each profiled step, the eviction's own kernels left out."""
    names = {k["name"] for k in profile_steps(evict, 1, trace_dir)} if evict is not None else set()
    one = profile_steps(run, 1, trace_dir)
    kernels = [k for k in profile_steps(run, steps, trace_dir, evict) if k["name"] not in names]
    return split_steps(kernels, len(one))


def harness_steps(session, runs: dict[str, object], names: set[str], per_step: int,
                  trace_dir: Path) -> dict[str, tuple[list[float], list[list[dict]]]]:
    """Steps timed as a comparison times them (the host gate, the eviction, CUDA events, the launch
    phase's pad kernels; ``session``'s protocol, its balanced order of ``runs``), profiled: for each
    label, the events' times and the kernels (those named ``names``) of its timed steps."""
    from torch.profiler import ProfilerActivity, profile

    from kprof.measure.harness import TimedOp

    labels = list(runs)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        measured = session.harness().paired([TimedOp(label, runs[label]) for label in labels])
    path = trace_dir / "trace.json"
    prof.export_chrome_trace(str(path))
    steps = split_steps([k for k in kernel_records(path) if k["name"] in names], per_step)
    p, order, timed = session.protocol, [], []  # which label ran each step, and whether it was timed
    for r, row in enumerate(measured.orders):
        warm = p.warmup_pairs if r else max(p.warmup_pairs, p.initial_warmup_pairs)
        order += [i for _ in range(warm) for i in row]
        timed += [False] * warm * len(row)
        order += [i for _ in range(p.observations) for i in row]
        timed += [True] * p.observations * len(row)
    if len(order) != len(steps):
        raise SystemExit(f"{len(steps)} steps profiled, {len(order)} expected from the protocol: cannot tell "
                         "whose step is whose")
    return {label: ([float(x) for x in measured.observations[i].ravel()],
                    [st for st, who, t in zip(steps, order, timed) if who == i and t])
            for i, label in enumerate(labels)}


def by_occurrence(step: list[dict]) -> dict[tuple[str, int], dict]:
    """A step's kernels keyed by (name, how many of that name started before): the same kernel in
    every step, although kernels of two streams that start together come in either order."""
    seen: dict[str, int] = {}
    keyed = {}
    for k in step:
        keyed[(k["name"], seen.get(k["name"], 0))] = k
        seen[k["name"]] = seen.get(k["name"], 0) + 1
    return keyed


def summary(steps: list[list[dict]]) -> tuple[float, list[dict]]:
    """The median step (first kernel start to last end) and each kernel's median start (from the
    step's first start) and duration, matched across steps by name and occurrence."""
    step_us = statistics.median(max(k["end"] for k in s) - s[0]["start"] for s in steps)
    keyed = [by_occurrence(s) for s in steps]
    rows = [{"name": name, "occurrence": nth, "stream": keyed[0][(name, nth)]["stream"],
             "start": statistics.median(ks[(name, nth)]["start"] - s[0]["start"] for ks, s in zip(keyed, steps)),
             "duration": statistics.median(ks[(name, nth)]["end"] - ks[(name, nth)]["start"] for ks in keyed)}
            for name, nth in keyed[0]]
    return step_us, rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workload", default="qwen3-8b-1m", help="workload name or captured file")
    ap.add_argument("--method", default="fathom", help="a pipelined Fathom method spec (pieces > 1)")
    ap.add_argument("--steps", type=int, default=20, help="steps profiled (after 10 unprofiled ones)")
    ap.add_argument("--evict", action="append", choices=("none", *EVICTION_MODES), default=None,
                    help="before each profiled step: nothing (default) or the protocol's eviction in this mode; "
                         "repeatable: each kernel's duration is then printed per mode side by side")
    ap.add_argument("--harness", action="store_true",
                    help="also time steps as a comparison does (host gate, eviction, events; 2 rounds x 20) under "
                         "the profiler, and print the events' median beside the median kernel span of those steps")
    ap.add_argument("--beside", action="append", default=[], metavar="SPEC",
                    help="with --harness: methods timed in the same paired rounds (repeatable; the same kernels "
                         "a step, e.g. scan32 or the method itself again), each reported as a mode")
    ap.add_argument("--json", type=Path, help="write every step's tail and the medians here")
    args = ap.parse_args()
    if args.steps < 1:
        raise SystemExit("--steps must be at least 1")
    modes = args.evict or ["none"]

    from kprof.commands.session import MeasurementSession
    from kprof.measure.eviction import DEFAULT_MIB, EvictionBuffer

    session = MeasurementSession.open("cuda", args.workload, {"rounds": 2, "observations": 20, "warmup_pairs": 5},
                                      config_mode="default")
    if args.beside and not args.harness:
        raise SystemExit("--beside needs --harness")
    labels = [args.method] + [f"{spec} ({i + 1})" for i, spec in enumerate(args.beside)]
    runs = {label: session.prepare(spec, label, "subject").prepared.run
            for label, spec in zip(labels, [args.method, *args.beside])}
    prepared_run = runs[args.method]
    for _ in range(10):
        for run in runs.values():
            run()
    torch.cuda.synchronize()
    by_mode = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mode in modes:
            evict = None if mode == "none" else EvictionBuffer(torch.device("cuda"), DEFAULT_MIB, mode).evict
            by_mode[mode] = step_kernels(prepared_run, args.steps, Path(tmp), evict)
        events = {}
        if args.harness:
            one = profile_steps(prepared_run, 1, Path(tmp))
            timed = harness_steps(session, runs, {k["name"] for k in one}, len(one), Path(tmp))
            for label, (times, steps) in timed.items():
                spans = [max(k["end"] for k in st) - st[0]["start"] for st in steps]
                print(f"{label} as timed by the harness: events {statistics.median(times):,.1f} us (median of "
                      f"{len(times)}), the same steps' kernel spans {statistics.median(spans):,.1f} us (median)")
                events[f"harness {label}"] = times
                by_mode[f"harness {label}"] = steps
                modes = [*modes, f"harness {label}"]
    report = {"workload": args.workload, "method": args.method, "modes": {}, "harness_events_us": events}
    for mode, steps in by_mode.items():
        tails = [tail(step) for step in steps]
        if min(len(t) for t in tails) == 0:
            raise SystemExit(f"{mode}: in some step no kernel ends after the scan: nothing of the step is exposed")
        width = min(len(t) for t in tails)

        rows = [{"name": tails[0][i]["name"], "stream": tails[0][i]["stream"],
                 "start": statistics.median(t[i]["start"] for t in tails),
                 "end": statistics.median(t[i]["end"] for t in tails),
                 "duration": statistics.median(t[i]["end"] - t[i]["start"] for t in tails)} for i in range(width)]
        total = statistics.median(t[-1]["end"] for t in tails)
        step_us, kernels = summary(steps)
        print(f"{args.method} on {args.workload}, {mode}: {len(tails)} steps, {len(steps[0])} kernels a step, "
              f"step {step_us:,.1f} us (first kernel start to last end, profiled); the tail after the scan "
              f"{total:,.1f} us (medians)")
        print(f"{'kernel':>28s} {'stream':>6s} {'start':>9s} {'end':>9s} {'us':>8s}")
        for r in rows:
            print(f"{r['name'][:28]:>28s} {str(r['stream']):>6s} {r['start']:9.1f} {r['end']:9.1f} "
                  f"{r['duration']:8.1f}")
        report["modes"][mode] = {"step_us": step_us, "tail_us": total, "tail": rows, "kernels": kernels,
                                 "steps": tails}
    if len(by_mode) > 1:
        print("every kernel of the step, median us from the step's first start / duration, per mode")
        for n, m in enumerate(by_mode):
            print(f"  mode {n}: {m}")
        print(f"{'kernel':>28s} " + " ".join(f"{'mode ' + str(n):>19s}" for n in range(len(by_mode))))
        rows = {m: {(r["name"], r["occurrence"]): r for r in report["modes"][m]["kernels"]} for m in by_mode}
        for key in rows[modes[0]]:
            cells = " ".join(f"{rows[m][key]['start']:9.1f}/{rows[m][key]['duration']:9.1f}" for m in by_mode)
            print(f"{key[0][:26]:>26s} {key[1]} {cells}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
