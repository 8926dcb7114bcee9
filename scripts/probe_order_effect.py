"""Probe the start-order effect: is the method that leads each interleaved pair slower?

Runs short paired-round A/A comparisons under several variants and prints, for each, the
A/B ratio in pairs where A went first over pairs where B went first (0% = no order effect),
and the A/A speedup interval (which must contain 1).

    python scripts/probe_order_effect.py [--workload qwen2.5-7b-l14-32k]
"""

from __future__ import annotations

import argparse

import numpy as np

import kprof.kernels  # noqa: F401
from kprof.clocks import CudaEventClock
from kprof.eviction import EvictionBuffer
from kprof.execution import resolve_target
from kprof.graphs import capture
from kprof.methods import get_method
from kprof.protocol import TimingProtocol
from kprof.runner import PairedRoundRunner, TimedOp, goes_before
from kprof.stats import paired_bootstrap, start_order_effect
from kprof.workloads import resolve_workload


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", default="qwen2.5-7b-l14-32k")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--observations", type=int, default=500)
    args = ap.parse_args()
    target = resolve_target("cuda")
    w = resolve_workload(args.workload, device=target.device)
    w_copy = w.to("cpu").to(target.device)
    ev = EvictionBuffer(target.device)
    base = TimingProtocol(rounds=args.rounds, warmup_pairs=100, observations=args.observations)

    def ops(method, copy=False, graph=False):
        a = get_method(method).prepare(w, target).run
        b = get_method(method).prepare(w_copy if copy else w, target).run
        if graph:
            a, b = capture(a, target.device), capture(b, target.device)
        return [TimedOp("A", a), TimedOp("B", b)]

    class DoubleEviction:
        def evict(self):
            ev.evict()
            ev.evict()

    variants = {
        "flash A/A": (base, ops("flash"), ev),
        "flash A/A, graph replay": (base, ops("flash", graph=True), ev),
        "flash A/A, distinct K/V copies": (base, ops("flash", copy=True), ev),
        "flash A/A, double eviction": (base, ops("flash"), DoubleEviction()),
        "triton-dense A/A": (base, ops("triton-dense"), ev),
        "triton-dense A/A, graph replay": (base, ops("triton-dense", graph=True), ev),
        "cudnn A/A": (base, ops("cudnn"), ev),
    }
    print(f"{'variant':44s} {'A us':>8s} {'B us':>8s} {'order effect':>12s} {'A/A 95% CI (estimate)':>30s}")
    for name, (proto, pair, evictor) in variants.items():
        obs = PairedRoundRunner(proto, CudaEventClock(), evictor).run(pair)
        a, b = obs
        i1 = paired_bootstrap(a, b)
        a_leads = goes_before(2, np.indices(a.shape)[0], 0, 1)
        print(f"{name:44s} {np.median(np.median(a, 1)):8.2f} {np.median(np.median(b, 1)):8.2f} "
              f"{100 * start_order_effect(a, b, a_leads):11.2f}% [{i1.low:.4f}, {i1.high:.4f}] ({i1.estimate:.4f})")
    three = ops("flash") + [TimedOp("C", get_method("flash").prepare(w, target).run)]
    obs = PairedRoundRunner(base, CudaEventClock(), ev).run(three)
    i1 = paired_bootstrap(obs[0], obs[1])
    print(f"{'flash A/A/A (3-way rotation), A vs B':44s} {np.median(np.median(obs[0], 1)):8.2f} "
          f"{np.median(np.median(obs[1], 1)):8.2f} {'':12s} [{i1.low:.4f}, {i1.high:.4f}] ({i1.estimate:.4f})")


if __name__ == "__main__":
    main()
