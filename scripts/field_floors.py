"""Each row of stored compare Results against its byte floor: the bytes one call moves (as the
method declares them) over the device's copy peak, and the measured time over that floor.

The floor leaves out the fixed cost every timed call pays after the protocol's eviction (an
empty grid took 4.45 us at 32K, perf-notes topic 2), so at 8K no kernel comes near it; at 128K the
dense kernels sit within 10% of it.

    python scripts/field_floors.py docs/evidence/field/field-*.json [--copy-peak 4252]
"""

from __future__ import annotations

import argparse

from kprof.results.rows import throughput
from kprof.results.store import load_result


def floor_rows(path: str, copy_peak_gbs: float) -> list[tuple[str, str, float, float | None]]:
    """(workload, label, time us, floor us or None) for every row of one Result: the floor is the
    row's time at the copy peak instead of its own GB/s (``rows.throughput``); the Result's own
    measured peak wins over ``copy_peak_gbs``; rows whose bytes cross PCIe have none."""
    result = load_result(path, with_observations=False)
    peak = result.environment.get("copy_peak_gbs") or copy_peak_gbs
    out = []
    for method in result.methods:
        summary = result.summaries.get(method.label)
        if summary is None or summary.median_us is None:
            continue
        time_us = summary.median_us.estimate
        gbs, _ = throughput(result, method.label)
        floor = None if gbs is None or method.bytes_from_host else time_us * gbs / peak
        out.append((result.workload.get("name", "?"), method.label, time_us, floor))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", help="kprof compare Result files")
    parser.add_argument("--copy-peak", type=float, default=4252.0, help="device copy peak, GB/s (kprof env "
                        "--measure-peak; default: the H200's measured 4,252)")
    args = parser.parse_args()
    print("| Result | workload | method | time us | byte floor us | time / floor |")
    print("| --- | --- | --- | --- | --- | --- |")
    for path in args.results:
        for workload, label, time_us, floor in floor_rows(path, args.copy_peak):
            ratio = "n/a" if floor is None else f"{time_us / floor:.2f}x"
            floor_text = "n/a" if floor is None else f"{floor:.2f}"
            print(f"| {path.rsplit('/', 1)[-1]} | {workload} | {label} | {time_us:.2f} | {floor_text} | {ratio} |")


if __name__ == "__main__":
    main()
