"""Gather bandwidth: the Fathom gather kernel reading pinned host planes vs cudaMemcpyAsync.

For run lengths of 4 KB and 512 KB (per channel), times (kprof's harness, no eviction: the
source is host memory, and the median of round medians) one
cudaMemcpyAsync (tensor.copy_, non_blocking) of as many pinned bytes as the gather moves (planes
and scales), a plain linear Triton copy of them (what any Triton kernel reading host memory can
reach), and the Triton gather of
the run list at its default launch config and over its config space. Target: gather >= 90% of
the memcpy rate.

    python scripts/bench_gather.py [--sweep]
"""

from __future__ import annotations

import argparse
import itertools

# isort: off
import kprof.kernels  # noqa: F401  (decides on the interpreter before triton, whose own jit functions it sets)
# isort: on
import torch
import triton
import triton.language as tl

from kprof.core.config_space import resolve_method_config
from kprof.kernels.fathom.scan import ALL_CHANNELS, LAUNCH_SPACES, FathomScan
from kprof.kernels.fathom.store import FathomStore
from kprof.measure.harness import Harness
from kprof.measure.protocol import TimingProtocol
from kprof.measure.stats import latency
from kprof.workloads.workload import WorkloadShape


@triton.jit
def _linear_copy(Src, Dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Dst + offs, tl.load(Src + offs, mask=offs < n), mask=offs < n)


PROTOCOL = TimingProtocol(rounds=3, warmup_pairs=10, observations=100, evict_mib=0)


def _events(fn) -> float:
    return latency(Harness("cuda", PROTOCOL, telemetry=False).time(fn).observations[0]).estimate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sweep", action="store_true", help="also time every CHUNK x num_warps config")
    args = ap.parse_args()
    dev = torch.device("cuda")
    hkv, d = 8, 128
    print(f"{'run':>7s} {'what':>24s} {'us':>9s} {'GB/s':>7s} {'vs memcpy':>9s}")
    for run_bytes in (4096, 512 * 1024):
        nb = run_bytes // (4 * 8)  # a channel's 4 planes = 4 * nb words of 8 bytes
        n = nb * 64
        k = torch.randn(hkv, n, d, device=dev, dtype=torch.float16)
        store = FathomStore.build(k).pinned()
        q = torch.randn(hkv * 4, d, device=dev, dtype=torch.float16)
        shape = WorkloadShape(hkv * 4, hkv, n, d, "fp16")
        total = store.planes.numel() * 8 + store.scales.numel() * 2  # what the full gather moves
        # the copies move exactly the gather's bytes (planes + scales) from pinned memory
        host = torch.empty(total // 8, dtype=torch.int64).pin_memory()
        dst = torch.empty_like(host, device=dev)
        t_copy = _events(lambda dst=dst, host=host: dst.copy_(host, non_blocking=True))
        rate_copy = total / t_copy / 1e3
        rows = [("cudaMemcpyAsync", t_copy, rate_copy)]
        t_lin = _events(lambda dst=dst, host=host: _linear_copy[(triton.cdiv(host.numel(), 2048),)](
            host, dst, host.numel(), BLOCK=2048))
        rows.append(("Triton linear copy", t_lin, total / t_lin / 1e3))
        space = LAUNCH_SPACES["gather"]
        configs = [{}]
        if args.sweep:
            names = [p.name for p in space.params]
            configs += [dict(zip(names, v)) for v in itertools.product(*(p.values for p in space.params))]
        best = None
        for over in configs:
            cfg = resolve_method_config(LAUNCH_SPACES, {"gather": over}, shape)
            op = FathomScan(q, store, ALL_CHANNELS, cfg, dev)
            op.launch_plan()
            t = _events(op.launch_gather)
            label = "gather default" if not over else "gather " + ",".join(f"{k}={v}" for k, v in over.items())
            if not over:
                rows.append((label, t, total / t / 1e3))
            elif best is None or t < best[1]:
                best = (label, t, total / t / 1e3)
        if best:
            rows.append(best)
        for label, t, rate in rows:
            print(f"{run_bytes:7d} {label:>24s} {t:9.1f} {rate:7.1f} {rate / rate_copy:9.2f}")


if __name__ == "__main__":
    main()
