"""What a GPU's read of pinned host memory costs: per byte, or per request.

Fathom's fused scan reads its index over PCIe in runs of 256 bytes (a plane's words for one tile)
and 64 bytes (a channel's scales for the tile); scan32's runs are mostly 256 bytes. Counted at
the default tile, Fathom's bytes come in ~113 bytes a request and scan32's in ~121, and both scans
take ~2.4 ns a request (perf-notes topic 4) -- yet 128-byte scale runs (``scan.BLOCKS=64``) were no
faster. This probe separates the two readings: in one run of paired rounds (no eviction: the source
is host memory) it times

- ``copy``: one cudaMemcpyAsync of as many contiguous pinned bytes as ``--runs`` 128-byte lines,
  the rate the scans are measured against;
- ``runs R``: ``--runs`` separate runs of R bytes each (``--run-bytes``), ``--stride`` bytes apart,
  read once by a grid of P programs per SM, S runs a step, W warps (``--shape P:S:W``,
  repeatable), every run's sum checked against torch first;
- ``runs 64 B, 64 apart``: 64-byte runs back to back, so each 128-byte line holds two, read by two
  neighbouring programs at about the same time, as two neighbouring tiles' scale runs are by two
  of the scan's workers: if its ns per line matches the 128-byte runs', the two halves already
  leave as one request, and Fathom's scale runs cost no extra requests at all.

If the time per run stays flat from 32 to 128 bytes and doubles at 256, the reads cost per
128-byte request: fewer, fuller requests are the lever, and the table's ns per line says how near
to one large copy full lines come. If it follows the bytes, the scans' distance from the copy is
somewhere else (bytes in flight, the scan's own loop). ``--l2-fetch 32,64,128`` repeats the table
under each value of the context's L2 fetch-granularity hint (``cuCtxSetLimit``,
CU_LIMIT_MAX_L2_FETCH_GRANULARITY, 0-128 bytes): if a 64-byte run at 128 costs a 128-byte line's
request and no more, Fathom's 64-byte scale runs could be whole-line requests without a kernel
change (each phase is its own paired run; compare phases through their copy rows).

    python scripts/probe_host_requests.py [--runs 131072] [--run-bytes 32,64,128,256,512] [--stride 1024]
        [--shape 4:8:4 ...] [--pages default|huge|wc] [--l2-fetch 32,64,128] [--json FILE]
        [--device cpu --runs 64]   (a smoke run through the interpreter: not GPU numbers)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
from pathlib import Path

# isort: off
import kprof.kernels  # noqa: F401  (decides on the interpreter before triton, whose own jit functions it sets)
# isort: on
import numpy as np
import torch

from kprof.core.host_memory import PAGE_KINDS, pinned_empty
from kprof.kernels.common.l2_fetch import L2FetchGranularity
from kprof.kernels.common.run_read import RunRead
from kprof.measure.harness import Harness, TimedOp
from kprof.measure.protocol import TimingProtocol

DEFAULT_SHAPES = ("4:8:4", "4:32:4")
def _shape(text: str) -> tuple[int, int, int]:
    fields = text.split(":")
    if len(fields) != 3 or not all(f.isdigit() and int(f) > 0 for f in fields):
        raise argparse.ArgumentTypeError(f"{text!r}: expected P:S:W (programs per SM, runs a step, warps), e.g. 4:8:4")
    return int(fields[0]), int(fields[1]), int(fields[2])


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(x) for x in text.split(",")]
    except ValueError:
        sizes = []
    if not sizes or any(s < 4 or s & (s - 1) for s in sizes):
        raise argparse.ArgumentTypeError(f"{text!r}: expected powers of two of at least 4 bytes, e.g. 32,64,128,256")
    return sizes


def _hints(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected byte counts, e.g. 32,64,128") from None


def _median(x: np.ndarray) -> float:
    return statistics.median(float(np.median(r)) for r in x)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=131072, help="runs each row reads (and 128-byte lines the copy moves)")
    ap.add_argument("--run-bytes", type=_sizes, default=[32, 64, 128, 256, 512], help="run sizes, comma-separated")
    ap.add_argument("--stride", type=int, default=1024, help="bytes from one run's start to the next's (whole lines)")
    ap.add_argument("--shape", type=_shape, action="append", metavar="P:S:W",
                    help=f"grid of the run reads: P programs per SM, S runs a step, W warps (repeatable; default "
                         f"{' '.join(DEFAULT_SHAPES)})")
    ap.add_argument("--pages", choices=PAGE_KINDS, default="default", help="kind of pinned pages (Fathom's pages=)")
    ap.add_argument("--l2-fetch", type=_hints, default=None, metavar="B,B",
                    help="L2 fetch-granularity hints (bytes, 0-128) to repeat the table under (GPU; default: "
                         "leave the context's as it is)")
    ap.add_argument("--rounds", type=int, default=6, help="paired rounds")
    ap.add_argument("--observations", type=int, default=50, help="timed calls per row per round")
    ap.add_argument("--json", type=Path, help="write the medians and the derived costs here")
    ap.add_argument("--device", default="cuda", help="cuda, or cpu for a smoke run through the interpreter")
    args = ap.parse_args()
    if args.runs < 1 or args.stride < max(args.run_bytes) or args.stride % 128:
        ap.error(f"--runs {args.runs} --stride {args.stride}: need runs >= 1 and a stride of whole "
                 f"128-byte lines, at least the largest run ({max(args.run_bytes)} bytes)")
    if args.json and not args.json.parent.is_dir():
        ap.error(f"--json {args.json}: no folder {args.json.parent}; create it first")
    if args.l2_fetch and (not args.device.startswith("cuda") or not all(0 <= v <= 128 for v in args.l2_fetch)):
        ap.error(f"--l2-fetch {args.l2_fetch}: hints of 0-128 bytes, on the GPU only")
    dev = torch.device(args.device)
    gpu = dev.type == "cuda"
    if gpu and not torch.cuda.is_available():
        raise SystemExit("no CUDA device here: pass --device cpu for a smoke run through the interpreter")

    from kprof.kernels.common.grid_sync import sm_count

    words = args.runs * args.stride // 4
    host = pinned_empty(words, torch.int32, args.pages) if gpu else torch.empty(words, dtype=torch.int32)
    host.copy_(torch.randint(0, 16, (words,), dtype=torch.int32))  # small: the programs sum in int32
    per_sm = sm_count(dev) if gpu else 1
    copy_src = host[: args.runs * 32]  # runs x 128 contiguous bytes
    copy_dst = torch.empty_like(copy_src, device=dev)
    rows: dict[str, RunRead] = {}
    for pps, per_step, warps in args.shape or [_shape(s) for s in DEFAULT_SHAPES]:
        grid = f"{pps}x{per_step}x{warps}"
        layouts = [(f"runs {size} B, {grid}", size, args.stride) for size in args.run_bytes]
        for label, size, stride in layouts + [(f"runs 64 B, 64 apart, {grid}", 64, 64)]:
            r = RunRead(host, args.runs, size, stride, per_sm * pps, per_step, warps, device=dev)
            r.out.fill_(-(2 ** 30))
            if int(r.run().to(torch.int64).sum()) != r.expected_sum():
                raise SystemExit(f"{label}: the runs did not sum to torch's: the probe is wrong")
            rows[label] = r
    ops = [TimedOp("copy", lambda: copy_dst.copy_(copy_src, non_blocking=True))]
    ops += [TimedOp(label, r.run) for label, r in rows.items()]
    protocol = TimingProtocol(rounds=args.rounds, warmup_pairs=10, observations=args.observations, evict_mib=0,
                              host_bound=not gpu)
    phases = {}
    for hint in args.l2_fetch or [None]:
        with contextlib.nullcontext() if hint is None else L2FetchGranularity(hint) as fetch:
            obs = Harness(dev, protocol, telemetry=False).paired(ops).observations
        medians = {op.label: _median(x) for op, x in zip(ops, obs)}
        phases["context" if hint is None else f"asked {hint}, got {fetch}"] = _report(medians, rows, args, fetch)
    if args.json:
        args.json.write_text(json.dumps({"runs": args.runs, "stride": args.stride, "pages": args.pages,
                                         "phases_by_l2_fetch": phases, "protocol": protocol.to_dict()}, indent=1))


def _report(medians: dict[str, float], rows: dict[str, RunRead], args, fetch: int | None) -> dict:
    """Print one phase's table; its medians and the costs derived from them."""
    copy_ns_line = medians["copy"] * 1e3 / args.runs
    pages = f"{args.pages} pinned pages" if args.device.startswith("cuda") else "plain host memory (a CPU smoke run)"
    print(f"{args.runs} runs, {args.stride} bytes apart, {pages}"
          + ("" if fetch is None else f", L2 fetch granularity {fetch} bytes")
          + f"; copy of {args.runs * 128 / 1e6:.1f} MB: {medians['copy']:.1f} us, "
          f"{args.runs * 128 / medians['copy'] / 1e3:.1f} GB/s, {copy_ns_line:.2f} ns a 128-byte line")
    width = max(len(label) for label in rows)
    print(f"{'row':<{width}s} {'us':>9s} {'GB/s':>7s} {'ns/run':>7s} {'ns/line':>8s} {'ns/sector':>9s} "
          f"{'line/copy':>9s}")
    derived = {"copy_us": medians["copy"], "copy_ns_per_line": copy_ns_line, "rows": {}}
    for label, r in rows.items():
        m = medians[label]
        d = {"us": m, "gbs": r.bytes / m / 1e3, "ns_per_run": m * 1e3 / r.runs, "ns_per_line": m * 1e3 / r.lines,
             "ns_per_sector": m * 1e3 / r.sectors, "run_bytes": r.run_bytes}
        derived["rows"][label] = d
        print(f"{label:<{width}s} {m:9.1f} {d['gbs']:7.1f} {d['ns_per_run']:7.2f} {d['ns_per_line']:8.2f} "
              f"{d['ns_per_sector']:9.3f} {d['ns_per_line'] / copy_ns_line:9.2f}")
    return derived


if __name__ == "__main__":
    from kprof.core.errors import run_reporting_errors

    run_reporting_errors(main)
