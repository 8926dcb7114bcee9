"""Why Fathom's row fetch runs at ~2x its byte floor, and why a step costs more after another method.

Part 1 (fetch): the production row fetch (``fathom_fetch_rows``, default launch config) copying
the same number of 512-byte K|V rows per KV head from a 4 GiB ``[Hkv, n, 2, d]`` buffer, with the
rows spread three ways: random (every row on its own 4 KB page, as winners are), 8 rows per 4 KB
page, and 128 rows per 64 KB. Equal bytes, different page counts: if the clustered patterns run
much faster, page translation (not PCIe bytes) bounds the fetch. Buffers: pinned by torch
(cudaHostAlloc), transparent-huge-page memory registered with cudaHostRegister, write-combined
pinned memory (cuMemHostAlloc: the GPU's reads are not snooped), and HBM. Beside
them, one cudaMemcpyAsync of the same bytes (the PCIe floor). Eviction before every timed call.

Part 2 (the step's fetch): the decode step's fetch, and the same launch on random rows or on a
fresh pinned buffer, to tell whether the winners' ids or the residency's memory slow it down.

Part 3 (order): a method's complete step timed right after itself and right after the other
method (eviction between, as always); a gap between "after itself" and "after the other" is state (caches,
translations) one step leaves for the next.

    python scripts/probe_host_reads.py [--workload FILE] [--rows 1536] [--calls 30] [--skip-spread] [--skip-order]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import torch

import kprof.kernels  # noqa: F401
from kprof.clocks import clock_for
from kprof.eviction import EvictionBuffer
from kprof.host_memory import pinned_empty
from kprof.kernels.fathom.triton_kernels import fathom_fetch_rows
from kprof.protocol import default_protocol
from kprof.runner import LaunchRunner, PairedRoundRunner, TimedOp

HKV, N, D = 8, 1 << 20, 128


def _time(fn, evict: EvictionBuffer, calls: int) -> float:
    """Median microseconds of ``fn`` under the timing protocol's runner (eviction before each call,
    CUDA events around it), one round of ``calls`` after 3 warm-up calls."""
    protocol = default_protocol(on_gpu=True).with_overrides(rounds=1, warmup_pairs=3, observations=calls)
    obs = PairedRoundRunner(protocol, clock_for(evict.device), evict).run([TimedOp("probe", fn)])
    return float(statistics.median(obs[0].ravel()))


def _row_sets(rows: int, dev) -> dict[str, torch.Tensor]:
    """Sorted distinct row ids per head: random, 8 per 4 KB page, 128 per 64 KB."""
    g = torch.Generator().manual_seed(0)
    out = {"random": torch.stack([torch.randperm(N, generator=g)[:rows].sort().values for _ in range(HKV)])}
    for per, label in ((8, "8 rows/4KB page"), (128, "128 rows/64KB")):
        starts = torch.stack([torch.randperm(N // per, generator=g)[:rows // per].sort().values for _ in range(HKV)])
        out[label] = (starts[:, :, None] * per + torch.arange(per)).reshape(HKV, -1)
    return {k: v.to(dev) for k, v in out.items()}


def _fetch(k_rows, v_rows, ids, first, slot, union_k, union_v) -> None:
    """The production row fetch at its default launch config."""
    entries = ids.shape[1]
    fathom_fetch_rows[(ids.shape[0], -(-entries // 64))](
        k_rows, v_rows, ids, first, slot, union_k, union_v, entries,
        k_rows.stride(0), k_rows.stride(1), union_k.stride(0), union_k.stride(1),
        D=k_rows.shape[2], ROWS=64, PAIRED=True, num_warps=8)


def _kv_views(buf: torch.Tensor):
    kv = buf.view(torch.float16).view(HKV, N, 2, D)
    return kv[:, :, 0], kv[:, :, 1]


def _memcpy_us(nbytes: int, evict: EvictionBuffer, calls: int) -> float:
    src = pinned_empty(nbytes, torch.uint8)
    dst = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    return _time(lambda: dst.copy_(src, non_blocking=True), evict, calls)


def fetch_probe(rows: int, calls: int) -> None:
    dev = torch.device("cuda")
    evict = EvictionBuffer(dev)
    nbytes = HKV * N * 2 * D * 2
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    print(f"transparent huge pages: {thp.read_text().strip() if thp.exists() else 'unknown'}")
    buffers = {"pinned (cudaHostAlloc)": pinned_empty(nbytes, torch.uint8)}
    for label, pages in (("THP + cudaHostRegister", "huge"), ("write-combined", "wc")):
        try:
            buffers[label] = pinned_empty(nbytes, torch.uint8, pages=pages)
        except (RuntimeError, OSError) as e:
            print(f"pages={pages} failed: {e}")
    buffers["HBM"] = torch.empty(nbytes, dtype=torch.uint8, device=dev)
    union = torch.empty(HKV, rows, 2, D, dtype=torch.float16, device=dev)
    first = torch.ones(HKV, rows, dtype=torch.bool, device=dev)
    slot = torch.arange(rows, device=dev).repeat(HKV, 1)
    moved = HKV * rows * 2 * D * 2
    memcpy = _memcpy_us(moved, evict, calls)
    print(f"{rows} rows x {HKV} heads = {moved / 1e6:.2f} MB; one cudaMemcpyAsync: {memcpy:.1f} us "
          f"({moved / memcpy / 1e3:.1f} GB/s)")
    print(f"{'buffer':>24s} {'rows':>18s} {'us':>8s} {'GB/s':>6s} {'x memcpy':>8s}")
    for name, buf in buffers.items():
        k_rows, v_rows = _kv_views(buf)
        for label, ids in _row_sets(rows, dev).items():
            us = _time(lambda ids=ids: _fetch(k_rows, v_rows, ids, first, slot, union[:, :, 0], union[:, :, 1]),
                       evict, calls)
            print(f"{name:>24s} {label:>18s} {us:8.1f} {moved / us / 1e3:6.1f} {us / memcpy:8.2f}", flush=True)


def step_fetch_probe(session, calls: int) -> None:
    """The decode step's own fetch against the same launch on other rows or another buffer: which
    of the two (the winners' ids, or the residency's memory) makes it slower than the probe above."""
    evict = session.eviction()
    fresh = _kv_views(pinned_empty(HKV * N * 2 * D * 2, torch.uint8))
    print(f"\n{'method':>8s} {'ids':>16s} {'rows from':>12s} {'us':>8s} {'GB/s':>6s}")
    for m in ("fathom", "scan32"):
        op = session.prepare(m, m, "subject").prepared.handle
        if (op.hkv, op.n, op.d) != (HKV, N, D):
            raise SystemExit(f"part 2 compares against {HKV} x {N} x {D} buffers (qwen3-8b-1m); the workload is "
                             f"{op.hkv} x {op.n} x {op.d}: pass --workload qwen3-8b-1m or --skip-order")
        torch.cuda.synchronize()
        distinct = op.first.sum(dim=1)
        n_rows = int(distinct.max())
        moved = int(distinct.sum()) * 2 * D * 2
        print(f"{m}: distinct rows per KV head {distinct.tolist()} ({moved / 1e6:.2f} MB; "
              f"cudaMemcpyAsync of as many bytes {_memcpy_us(moved, evict, calls):.1f} us)")
        g = torch.Generator().manual_seed(1)
        rand = torch.stack([torch.randperm(N, generator=g)[:n_rows].sort().values for _ in range(HKV)]).cuda()
        ones = torch.ones(HKV, n_rows, dtype=torch.bool, device="cuda")
        slots = torch.arange(n_rows, device="cuda").repeat(HKV, 1)
        winners = (op.sorted_rows, op.first, op.slot)
        kv = op.k_rows.as_strided((HKV, N, 2, D), (N * 2 * D, 2 * D, D, 1)).cuda()
        buffers = (("residency", (op.k_rows, op.v_rows)), ("fresh pinned", fresh),
                   ("HBM copy", (kv[:, :, 0], kv[:, :, 1])))
        for ids_label, (ids, first, slot) in (("step winners", winners), ("random", (rand, ones, slots))):
            for buf_label, (k_rows, v_rows) in buffers:
                us = _time(lambda: _fetch(k_rows, v_rows, ids, first, slot, op.union_k, op.union_v), evict, calls)
                rows_moved = moved if ids is op.sorted_rows else HKV * n_rows * 2 * D * 2
                print(f"{m:>8s} {ids_label:>16s} {buf_label:>12s} {us:8.1f} {rows_moved / us / 1e3:6.1f}", flush=True)
        print(f"{m:>8s} {'launch_fetch':>16s} {'residency':>12s} {_time(dict(op.stages())["fetch"], evict, calls):8.1f}")
        del kv


def order_probe(session, pages: str, calls: int) -> None:
    """Each step timed by the protocol's LaunchRunner after an untimed step of itself or of the
    other method (eviction between); conditions alternate in blocks of 5 so drift hits both."""
    evict = session.eviction()
    runs = {m: session.prepare(f"{m}:pages={pages}", m, "subject").prepared.run for m in ("fathom", "scan32")}
    runner = LaunchRunner(session.protocol.with_overrides(rounds=1), clock_for(evict.device), evict)
    print(f"\npages={pages}\n{'timed':>8s} {'after':>10s} {'median us':>10s}")
    for timed, run in runs.items():
        befores = {"itself": run, "other": next(r for m, r in runs.items() if m != timed)}
        samples: dict[str, list[float]] = {b: [] for b in befores}
        for _ in range(max(1, calls // 5)):
            for label, before in befores.items():
                obs = runner.run([TimedOp("before", before), TimedOp(timed, run)], 1, per_round=5)
                samples[label].extend(obs.ravel().tolist())
        for label, xs in samples.items():
            print(f"{timed:>8s} {label:>10s} {statistics.median(xs):10.1f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workload", default="qwen3-8b-1m",
                    help="workload for parts 2 and 3 (a captured file is faster)")
    ap.add_argument("--rows", type=int, default=1536, help="distinct rows fetched per KV head (Fathom: ~1,500)")
    ap.add_argument("--calls", type=int, default=30)
    ap.add_argument("--skip-spread", action="store_true", help="skip part 1 (rows spread over pages)")
    ap.add_argument("--skip-order", action="store_true", help="skip parts 2 and 3 (the decode steps)")
    args = ap.parse_args()
    if not args.skip_spread:
        fetch_probe(args.rows, args.calls)
    if not args.skip_order:
        from kprof.session import MeasurementSession

        session = MeasurementSession.open("cuda", args.workload, {}, config_mode="default")
        step_fetch_probe(session, args.calls)
        order_probe(session, "default", args.calls)


if __name__ == "__main__":
    main()
