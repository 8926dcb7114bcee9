"""The Fathom-family plan launch alone, by warps: its time and the depths it picks.

The plan is on every step's path before the scan starts (12-15 us of a ~1.5 ms step at 1M
tokens): a water-filling of 30 dependent bisection steps, each ending in a block-wide sum, or
the fixed-channel rule's sort. Fewer warps make each sum cheaper; this times the launch at 1,
2, 4 and 8 warps (do_bench medians, on the GPU) and checks that every count of warps picks the
same depths. Qwen3-8B's heads (32 query, 8 KV, d 128); the plan does not depend on the length.

    python scripts/probe_plan_warps.py [TOKENS]
"""
import argparse

import torch

import kprof.kernels  # noqa: F401  (sets up Triton: before any kernel module)
from kprof.core.config_space import resolve_method_config
from kprof.kernels.fathom.scan import LAUNCH_SPACES, FathomScan, top_q, water
from kprof.kernels.fathom.store import FathomStore
from kprof.workloads import Workload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tokens", type=int, nargs="?", default=65536, help="tokens of the store (default 65536)")
    n = parser.parse_args().tokens
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    g = torch.Generator().manual_seed(3)
    hq, hkv, d = 32, 8, 128
    q = torch.randn(hq, d, generator=g).half()
    k = torch.randn(hkv, n, d, generator=g).half()
    w = Workload(q=q, k=k, v=k, positions=torch.arange(n), query_position=n - 1, metadata={"name": "plan"})
    store = FathomStore.build(k.to(dev))
    for name, pol in (("water48", water(48)), ("top_q32", top_q(32))):
        ref = None
        for warps in (1, 2, 4, 8):
            cfg = resolve_method_config(LAUNCH_SPACES, {"plan": {"num_warps": warps}}, w.shape)
            s = FathomScan(q.to(dev), store, pol, cfg, dev, fused=True)
            s.launch_plan()
            depth = s.depth.cpu()
            ref = depth if ref is None else ref
            same = torch.equal(depth, ref)
            t = 0.0
            if dev.type == "cuda":
                from triton.testing import do_bench

                t = do_bench(s.launch_plan, warmup=50, rep=300, return_mode="median") * 1e3
            print(f"plan {name} num_warps={warps}: {t:7.2f} us  depths same as 1 warp: {same}  "
                  f"planes {int(depth.sum())}")


if __name__ == "__main__":
    main()
