"""Probe the host gate (kprof/measure/blocking_kernel.py) on a GPU: which spin kernel it picked, the rate of
%globaltimer against the host clock, and how long the gate holds a stream in three cases: a
kernel already loaded, a Triton kernel launched for the first time, and a torch op used for the
first time. A first launch may load its module, and loading can wait for the running kernels
(CUDA lazy loading), i.e. for the gate itself: the host then blocks inside the launch until the
gate gives up.

    python scripts/probe_blocking_kernel.py [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import time

# isort: off
import kprof.kernels  # noqa: F401  (decides on the interpreter before triton, whose own jit functions it sets)
# isort: on
import torch
import triton
import triton.language as tl

from kprof.measure.blocking_kernel import MAX_POLLS, MAX_WAIT_NS, BlockingKernel, _now_ns


@triton.jit
def _stamp(Out):
    tl.store(Out, _now_ns())


@triton.jit
def _fresh_add(X, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(X + offs, tl.load(X + offs, mask=offs < n) + 1, mask=offs < n)


def timer_rate(dev) -> dict:
    """ns of %globaltimer per ns of host clock, across a 200 ms host sleep."""
    out = torch.zeros(2, dtype=torch.int64, device=dev)
    _stamp[(1,)](out[0:])
    torch.cuda.synchronize()
    t0 = time.perf_counter_ns()
    _stamp[(1,)](out[0:])
    torch.cuda.synchronize()
    time.sleep(0.2)
    t1 = time.perf_counter_ns()
    _stamp[(1,)](out[1:])
    torch.cuda.synchronize()
    g = out.tolist()
    return {"globaltimer_ns": g[1] - g[0], "host_ns": t1 - t0, "rate": (g[1] - g[0]) / (t1 - t0)}


def held(gate: BlockingKernel, launch, label: str) -> dict:
    """Hold, launch, then watch the stream for 300 ms before releasing."""
    gate.new_expiries()
    gate.hold()
    t0 = time.perf_counter()
    launch()
    launch_ms = (time.perf_counter() - t0) * 1e3
    done = torch.cuda.Event()
    done.record()
    ran_past_ms = None
    for wait_ms in (1, 5, 20, 50, 100, 300):
        time.sleep(max(0.0, wait_ms / 1e3 - (time.perf_counter() - t0)))
        if done.query():
            ran_past_ms = wait_ms
            break
    gate.release()
    torch.cuda.synchronize()
    return {"case": label, "launch_host_ms": round(launch_ms, 3), "ran_past_by_ms": ran_past_ms,
            "expired": gate.new_expiries()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the results here too")
    args = ap.parse_args()
    dev = torch.device("cuda", torch.cuda.current_device())
    gate = BlockingKernel(dev)
    res = {"spin_kernel": gate.spin_kernel, "bound": MAX_WAIT_NS if gate.spin_kernel == "_spin_timed" else MAX_POLLS,
           "timer": timer_rate(dev), "cases": []}
    x = torch.ones(1 << 20, device=dev)
    x.add_(1)
    torch.cuda.synchronize()
    res["cases"].append(held(gate, lambda: x.add_(1), "torch add, loaded"))
    res["cases"].append(held(gate, lambda: _fresh_add[(x.numel() // 1024,)](x, x.numel(), BLOCK=1024),
                             "triton kernel, first launch"))
    res["cases"].append(held(gate, lambda: _fresh_add[(x.numel() // 1024,)](x, x.numel(), BLOCK=1024),
                             "triton kernel, second launch"))
    res["cases"].append(held(gate, lambda: torch.cumprod(x[:1024].double(), 0), "torch cumprod, first use"))
    torch.cuda.synchronize()
    print(json.dumps(res, indent=1))
    for c in res["cases"]:
        print(f"{c['case']:32s} launch {c['launch_host_ms']:9.3f} ms  ran past by {c['ran_past_by_ms']} ms  "
              f"expired {c['expired']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
