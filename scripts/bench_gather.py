"""Gather bandwidth: the Fathom gather kernel reading pinned host planes vs cudaMemcpyAsync.

For run lengths of 4 KB and 512 KB (per channel), times (CUDA events, median of many calls) the
Triton gather of a fixed run list from pinned host memory into HBM staging, and one
cudaMemcpyAsync (tensor.copy_, non_blocking) of the same total bytes. Target: gather >= 90%.

    python scripts/bench_gather.py
"""

from __future__ import annotations

import statistics

import torch

import kprof.kernels  # noqa: F401
from kprof.config_space import resolve_method_config
from kprof.kernels.fathom.operator import LAUNCH_SPACES, FathomScan, ALL_CHANNELS
from kprof.kernels.fathom.store import FathomStore


def _events(fn, calls=200, warmup=20) -> float:
    for _ in range(warmup):
        fn()
    start = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
    stop = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
    for s, e in zip(start, stop):
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) * 1e3 for s, e in zip(start, stop))


def main() -> None:
    dev = torch.device("cuda")
    print(f"{'run':>8s} {'bytes':>10s} {'gather us':>10s} {'GB/s':>7s} {'memcpy us':>10s} {'GB/s':>7s} {'ratio':>6s}")
    for run_bytes in (4096, 512 * 1024):
        nb = run_bytes // (4 * 8)  # a channel's 4 planes = 4 * nb words of 8 bytes
        n = nb * 64
        hkv, d = 8, 128
        k = torch.randn(hkv, n, d, device=dev, dtype=torch.float16)
        store = FathomStore.build(k).pinned()
        q = torch.randn(hkv * 4, d, device=dev, dtype=torch.float16)
        from kprof.workloads.workload import WorkloadShape

        cfg = resolve_method_config(LAUNCH_SPACES, {}, WorkloadShape(hkv * 4, hkv, n, d, "fp16"))
        op = FathomScan(q, store, ALL_CHANNELS, cfg, dev)
        op.launch_plan()
        total = store.planes.numel() * 8
        t_gather = _events(op.launch_gather)
        host = store.planes.reshape(-1)
        dst = torch.empty_like(host, device=dev)
        t_copy = _events(lambda: dst.copy_(host, non_blocking=True))
        print(f"{run_bytes:8d} {total:10d} {t_gather:10.1f} {total / t_gather / 1e3:7.1f} {t_copy:10.1f} "
              f"{total / t_copy / 1e3:7.1f} {t_copy / t_gather:6.2f}")


if __name__ == "__main__":
    main()
