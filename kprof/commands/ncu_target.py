"""The program ncu profiles: prepare a method, warm up, then one operation inside an NVTX range.

``python -m kprof.commands.ncu_target --method M --workload W [--config auto|default|FILE]``. Only the
launches inside the ``kprof`` range are profiled (ncu ``--nvtx-include kprof/``), so setup,
warm-up and eviction kernels stay out of the report.
"""

from __future__ import annotations

import argparse
import json

import torch

from kprof.core.atomic import atomic_write_text
from kprof.ncu.run import RANGE


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--method", required=True)
    ap.add_argument("--workload", required=True)
    ap.add_argument("--config", default="auto")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--describe", default=None, help="Write the bytes key of this method's setup here (JSON).")
    args = ap.parse_args(argv)

    from kprof.core.target import configure_triton

    configure_triton()
    from kprof.commands.session import MeasurementSession
    from kprof.methods import get_method
    from kprof.methods.registry import load_plugins

    load_plugins()
    session = MeasurementSession.open("cuda", args.workload, {}, config_mode=args.config)
    method = get_method(args.method)
    prepared = method.prepare(session.workload, session.target, session.launch_config(args.method))
    if args.describe:
        key = session.measured_bytes_key(method, args.method, prepared)
        atomic_write_text(args.describe, json.dumps({"key": key}))
    for _ in range(args.warmup):
        prepared.run()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(RANGE)
    prepared.run()
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
