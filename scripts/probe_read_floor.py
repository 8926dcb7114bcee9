"""The practical floor of a dense decode call at one workload's size, measured: a kernel that only
streams the workload's K and V, timed in the same paired rounds as the dense kernels.

The copy peak (``kprof env --measure-peak``) moves 2 GiB, which hides any fixed cost per call. A
decode call moves 16-512 MiB after an eviction kernel, so what it can reach is fixed + bytes /
bandwidth, and the fixed part (launch after the eviction, the first touches of cold K/V, the
ramp of the grid, the tail) matters at 32K. This probe times, in one run of paired rounds:

- ``stream 1/4``, ``stream 1/2``, ``stream``: one launch that reads the first quarter, half and
  all of K and V (every byte once, 16-byte loads, a few programs per SM) and stores one float
  per program; a least-squares line through the three gives the fixed cost and the bandwidth;
- ``empty``: the same grid storing one float per program, reading nothing;
- ``stream PxBxWxS``: all of K and V by other stream shapes (P programs per SM, B elements a
  step, W warps, S pipeline stages; ``--shape``; a fifth field ``first`` marks the loads
  evict-first in L2, the floor of a kernel whose K and V loads carry that hint; ``window`` reads
  a side-by-side copy of K and V under an L2 window that marks it streaming, the floor of
  ``triton-dense:window=1``), and ``torch
  amax``: torch's own reductions over K and over V (two launches), so the floor does not rest on
  one kernel's shape;
- the dense methods named by ``--method`` (default triton-decode, triton-dense, flash);
- with ``--loop SPEC`` (a triton-dense spec), that spec's partial launch alone, and the same launch
  with its loop's online softmax taken out (the loads, their pipeline and the two dots stay:
  ``BODY=1`` of ``kernels/dense/key_range.py``, not attention): what the softmax adds to the loop,
  and how far the loads and dots alone sit from the fastest full read.

Each stream's sum is checked against torch's first, so the probe provably reads each byte once.

    python scripts/probe_read_floor.py [--workload qwen2.5-7b-l14-32k] [--method M ...] [--json FILE]
        [--eviction read] [--shape 2:16384:8:1 ...] [--shape 8:8192:4:1:first ...] [--loop triton-dense:window=1]
        [--device cpu --workload cpu-smoke]   (a smoke run through the interpreter: not GPU numbers)
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import numpy as np
import torch

from kprof.kernels.common.l2_window import StreamingWindow
from kprof.kernels.common.stream_read import StreamRead
from kprof.kernels.dense.split_kv import SplitKVDecode
from kprof.measure.harness import TimedOp
from kprof.measure.protocol import EVICTION_MODES

FRACTIONS = {"stream 1/4": 0.25, "stream 1/2": 0.5, "stream": 1.0}
DEFAULT_SHAPES = ("2:16384:8:1", "8:8192:4:1", "4:4096:4:3", "1:32768:16:1")


def _check(stream: StreamRead) -> None:
    """The programs' sums add to torch's sum of the same bytes: every byte read once."""
    stream.out.fill_(float("nan"))
    got, want = float(stream.run().double().sum()), stream.expected_sum()
    if not abs(got - want) <= 1e-4 * abs(want) + 1e-5 * stream.total:
        raise SystemExit(f"stream of {stream.total} elements summed to {got}, torch says {want}: the probe is wrong")


def _median(x: np.ndarray) -> float:
    return statistics.median(float(np.median(r)) for r in x)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workload", default="qwen2.5-7b-l14-32k", help="workload name or captured file")
    ap.add_argument("--method", action="append", help="dense methods timed beside the probe "
                    "(default: triton-decode, triton-dense, flash; math on the CPU)")
    ap.add_argument("--programs-per-sm", type=int, default=4, help="stream programs per SM (the fitted line's)")
    ap.add_argument("--block", type=int, default=4096, help="elements each stream program loads per step")
    ap.add_argument("--shape", action="append", metavar="P:B:W:S[:first|:window]", default=None,
                    help="another full stream: P programs per SM, B elements a step, W warps, S stages, "
                         "'first' for evict-first loads, 'window' for a streaming L2 window over K and V "
                         f"(repeatable; default {' '.join(DEFAULT_SHAPES)})")
    ap.add_argument("--loop", action="append", metavar="SPEC", default=[],
                    help="a triton-dense spec whose partial launch is timed alone and with its loop's softmax "
                         "taken out (the loads and the two dots alone; repeatable)")
    ap.add_argument("--eviction", choices=EVICTION_MODES, default=None,
                    help="the protocol's eviction mode (kprof compare --help)")
    ap.add_argument("--rounds", type=int, default=None, help="rounds (default: the protocol's)")
    ap.add_argument("--observations", type=int, default=None, help="timed calls per row per round")
    ap.add_argument("--json", type=Path, help="write medians, the fitted line and bytes here")
    ap.add_argument("--device", default="cuda", help="cuda, or cpu for a smoke run through the interpreter")
    args = ap.parse_args()

    from kprof.commands.session import MeasurementSession
    from kprof.kernels.common.grid_sync import sm_count

    overrides = {k: v for k, v in (("rounds", args.rounds), ("observations", args.observations),
                                   ("eviction", args.eviction)) if v is not None}
    session = MeasurementSession.open(args.device, args.workload, overrides, config_mode="default")
    w = session.workload.to(session.target.device)
    gpu = session.target.is_gpu
    methods = args.method or (["triton-decode", "triton-dense", "flash"] if gpu else ["triton-decode", "math"])
    programs = (sm_count(w.k.device) if gpu else 2) * args.programs_per_sm
    streams = {label: StreamRead(w.k, w.v, f, programs, args.block) for label, f in FRACTIONS.items()}
    streams["empty"] = StreamRead(w.k, w.v, 1.0, programs, args.block, empty=True)
    runs = {}  # how a stream is called, where not its own run
    for shape in args.shape or DEFAULT_SHAPES:
        fields = shape.split(":")
        if len(fields) not in (4, 5) or fields[4:] not in ([], ["first"], ["window"]):
            raise SystemExit(f"--shape {shape}: expected P:B:W:S, P:B:W:S:first or P:B:W:S:window, "
                             "e.g. 8:8192:4:1:first")
        pps, block, warps, stages = (int(x) for x in fields[:4])
        per_sm = sm_count(w.k.device) if gpu else 1
        evict, window = fields[4:] == ["first"], fields[4:] == ["window"]
        label = f"stream {pps}x{block}x{warps}x{stages}" + (" first" if evict else " window" if window else "")
        kv = torch.stack((w.k, w.v)) if window else None  # one buffer, so that one window covers both
        streams[label] = StreamRead(*((kv[0], kv[1]) if window else (w.k, w.v)), 1.0, per_sm * pps, block,
                                    num_warps=warps, num_stages=stages, evict=evict)
        if window:
            runs[label] = StreamingWindow.over(kv, f"--shape {shape}").wrap(streams[label].run)
    for stream in streams.values():
        if not stream.empty:
            _check(stream)
    prepared = {m: session.prepare(m, m, "subject").prepared for m in methods}
    loops = {}  # label -> launch: each --loop spec's partial, and the same without its softmax
    for spec in args.loop:
        p = session.prepare(spec, f"{spec} (loop)", "subject").prepared
        if not isinstance(p.handle, SplitKVDecode):
            raise SystemExit(f"--loop {spec}: name a triton-dense spec (its partial launch is what is probed)")
        dots = SplitKVDecode(w.q, w.k, w.v, p.config, pdl=p.handle.pdl, window=bool(p.details["l2_window"]), body=1)
        loops[f"{spec} partial"] = p.handle.launch_partial
        loops[f"{spec} dots only"] = dots.launch_partial
    sink = torch.empty((), dtype=w.k.dtype, device=w.k.device)
    flat_k, flat_v = w.k.reshape(-1), w.v.reshape(-1)

    def torch_amax():
        torch.amax(flat_k, dim=0, out=sink)
        torch.amax(flat_v, dim=0, out=sink)

    ops = ([TimedOp(label, runs.get(label, s.run)) for label, s in streams.items()]
           + [TimedOp("torch amax", torch_amax)] + [TimedOp(m, p.run) for m, p in prepared.items()]
           + [TimedOp(label, launch) for label, launch in loops.items()])
    obs = session.harness().paired(ops).observations
    medians = {op.label: _median(x) for op, x in zip(ops, obs)}

    xs = np.array([streams[label].bytes for label in FRACTIONS], dtype=float)
    ys = np.array([medians[label] for label in FRACTIONS])
    slope, fixed = np.polyfit(xs, ys, 1)
    gbs = 1e-3 / slope if slope > 0 else float("inf")
    kv_bytes = streams["stream"].bytes
    print(f"{w.metadata.get('name', args.workload)}: K+V {kv_bytes / 2**20:.0f} MiB, {programs} stream programs")
    width = max(16, *(len(label) for label in medians))
    print(f"{'row':>{width}s} {'median us':>10s} {'GB/s':>8s}")
    for label, m in medians.items():
        b = streams[label].bytes if label in streams else kv_bytes
        print(f"{label:>{width}s} {m:10.2f} {b / m / 1e3 if b else 0:8.0f}")
    full = {label: m for label, m in medians.items() if label == "torch amax"
            or (label in streams and streams[label].bytes == kv_bytes)}
    best = min(full, key=full.get)
    print(f"stream time = {fixed:.2f} us + bytes / {gbs:,.4g} GB/s ({list(FRACTIONS)[-1]}); the floor of a call "
          f"moving this workload's K and V here: {full[best]:.2f} us ({best}, the fastest full read)")
    for spec in args.loop:
        whole, dots = medians[f"{spec} partial"], medians[f"{spec} dots only"]
        print(f"{spec}: partial {whole:.2f} us, without its softmax {dots:.2f}: the softmax adds {whole - dots:+.2f} "
              f"us; the loads and dots alone sit {dots - full[best]:+.2f} us from the fastest full read")
    if args.json:
        args.json.write_text(json.dumps({"workload": w.metadata.get("name", args.workload), "kv_bytes": kv_bytes,
                                         "programs": programs, "medians_us": medians, "fixed_us": fixed,
                                         "stream_gbs": gbs, "floor_us": full[best], "floor_row": best,
                                         "protocol": session.protocol.to_dict()}, indent=1))


if __name__ == "__main__":
    from kprof.core.errors import run_reporting_errors

    run_reporting_errors(main)
