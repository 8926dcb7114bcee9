"""Fathom-family rows of stored compare Results against their PCIe floors, and the ratio each
pair of rows could reach at those floors.

A step with the index and rows in pinned host memory reads, over PCIe, the scan's plane and scale
runs and each KV head's distinct winner rows (K and V of a token side by side, one 512-byte
run). Two floors per row:

- request floor: every run at what a run of its size costs the GPU's loads, as
  ``scripts/probe_host_requests.py`` measured it (``--requests FILE``, the phase at the
  context's own L2 fetch hint): a plane's run for one 32-block tile is 256 bytes, a channel's
  scales for it one 64-byte run, a winner row one 512-byte run;
- byte floor: the bytes the method declares at the rate of one cudaMemcpyAsync of pinned memory
  (the same file's copy).

Each head's runs come from the Result: ``scan_bits_per_token`` counts 4 bits per token for every
plane read and 16 bits per 64-token block for every active channel's scale, so at a known plane
count (Fathom: its budget, which the water-filling spends; the fixed-channel baselines: 4 planes
a channel) the active channels follow. The rows come from the declared bytes less the scan's and
the query and output. Both floors leave out what no PCIe transfer hides (the plan, the last
range's selection, attention), so a row can only come nearer its floor, not pass it.

    python scripts/fathom_floors.py docs/evidence/fathom/ahead-fathom-s32.json \\
        --requests docs/evidence/fathom/host-requests-s31.json [--baseline scan32]
"""

from __future__ import annotations

import argparse
import json

from kprof.methods import get_method
from kprof.results.store import load_result

TILE_BLOCKS = 32  # the scan's default tile: 32 blocks of 64 tokens
FAMILY = ("fathom", "scan32", "sparq16", "scan-full")


def run_costs(path: str) -> dict:
    """ns per run of 64, 256 and 512 bytes and the copy's GB/s, at the L2 fetch hint of 64 bytes."""
    probe = json.loads(open(path).read())
    phases = probe["phases_by_l2_fetch"]
    phase = next((p for name, p in phases.items() if name.endswith("got 64")), next(iter(phases.values())))

    def ns(run_bytes: int) -> float:
        rows = [r["ns_per_run"] for name, r in phase["rows"].items()
                if r["run_bytes"] == run_bytes and "apart" not in name]
        return sum(rows) / len(rows)

    copy_bytes = 128 * probe["runs"]
    return {"scale": ns(64), "plane": ns(256), "row": ns(512), "copy_gbs": copy_bytes / phase["copy_us"] / 1e3}


def planes_per_token(label: str, d: int) -> float:
    """Plane bits per token of one head: Fathom's budget (which the water-filling spends), or 4 a
    channel of the fixed-channel rule (every channel for scan-full)."""
    method = get_method(label)
    if method.takes_budget:
        return method.budget
    return 4.0 * (method.fixed_channels or d)


def floors(result, label: str, costs: dict) -> dict:
    method = next(m for m in result.methods if m.label == label)
    shape = result.workload["shape"]
    item = 2 if shape["dtype"] in ("bf16", "fp16") else 4
    tiles = -(-shape["n"] // (64 * TILE_BLOCKS))
    scan_ns = 0.0
    for bits in method.details["scan_bits_per_token"]:
        planes = planes_per_token(label, shape["d"])
        channels = 4 * (bits - planes)  # 16 scale bits per 64 tokens: a quarter bit a token each
        if not 0 <= channels <= shape["d"]:
            raise SystemExit(f"{label}: {bits} bits a token do not fit {planes} plane bits; give its budget")
        scan_ns += tiles * (planes * costs["plane"] + channels * costs["scale"])
    qo = 2 * shape["hq"] * shape["d"] * item
    rows = (method.bytes_per_call - method.details["scan_bytes_per_step"] - qo) / (2 * shape["d"] * item)
    time_us = result.summaries[label].median_us.estimate
    request_us = (scan_ns + rows * costs["row"]) / 1e3
    return {"time_us": time_us, "scan_floor_us": scan_ns / 1e3, "rows": rows,
            "rows_floor_us": rows * costs["row"] / 1e3, "request_floor_us": request_us,
            "byte_floor_us": method.bytes_per_call / costs["copy_gbs"] / 1e3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", help="kprof compare Result files with Fathom-family rows")
    parser.add_argument("--requests", required=True, help="probe_host_requests.py's JSON (run costs, copy rate)")
    parser.add_argument("--baseline", default="scan32", help="the row the others' ratios are taken against")
    args = parser.parse_args()
    costs = run_costs(args.requests)
    print(f"run costs: 64 B {costs['scale']:.2f} ns, 256 B {costs['plane']:.2f} ns, 512 B {costs['row']:.2f} ns; "
          f"copy {costs['copy_gbs']:.1f} GB/s")
    for path in args.results:
        result = load_result(path, with_observations=False)
        labels = [m.label for m in result.methods if m.label.split(":")[0] in FAMILY]
        rows = {label: floors(result, label, costs) for label in labels}
        base = rows.get(args.baseline)
        print(f"\n{path}")
        print(f"{'row':<28}{'time us':>9}{'scan fl':>9}{'rows':>8}{'rows fl':>9}{'req fl':>9}{'x':>6}"
              f"{'byte fl':>9}{'x':>6}{'ratio':>7}{'req r':>7}{'byte r':>7}")
        for label, f in rows.items():
            ratio = (f"{base['time_us'] / f['time_us']:7.3f}{base['request_floor_us'] / f['request_floor_us']:7.3f}"
                     f"{base['byte_floor_us'] / f['byte_floor_us']:7.3f}") if base else ""
            print(f"{label[:27]:<28}{f['time_us']:9.0f}{f['scan_floor_us']:9.0f}{f['rows']:8.0f}"
                  f"{f['rows_floor_us']:9.0f}{f['request_floor_us']:9.0f}{f['time_us'] / f['request_floor_us']:6.2f}"
                  f"{f['byte_floor_us']:9.0f}{f['time_us'] / f['byte_floor_us']:6.2f}{ratio}")


if __name__ == "__main__":
    main()
