"""The command line and measurement session the SANTA++ probes in ``scripts/`` share: a workload,
the paired-round protocol's sizes, a JSON output and the device (the CPU interpreter for a smoke
run), with every launch at its declared default config."""

from __future__ import annotations

import argparse
from pathlib import Path


def probe_arguments(description: str, rounds: int, observations: int, warmup_pairs: int = 30):
    """An argument parser with the shared options; the probe adds its own."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--workload", default="qwen2.5-7b-l14-32k", help="workload name or captured file")
    ap.add_argument("--rounds", type=int, default=rounds, help=f"paired rounds (default {rounds})")
    ap.add_argument("--observations", type=int, default=observations,
                    help=f"timed calls per row per round (default {observations})")
    ap.add_argument("--warmup-pairs", type=int, default=warmup_pairs,
                    help=f"untimed interleaved calls before each round (default {warmup_pairs})")
    ap.add_argument("--json", type=Path, help="write the medians here")
    ap.add_argument("--device", default="cuda", help="cuda, or cpu for a smoke run through the interpreter")
    return ap


def open_probe_session(args):
    """A measurement session on the parsed options, launches at their default configs."""
    from kprof.commands.session import MeasurementSession

    return MeasurementSession.open(args.device, args.workload,
                                   {"rounds": args.rounds, "observations": args.observations,
                                    "warmup_pairs": args.warmup_pairs},
                                   config_mode="default")


def paired_medians(session, ops) -> dict[str, float]:
    """Each op's median time per call (us) from one paired run of all of them, every op compiled
    first; the table is printed."""
    import torch

    from kprof.measure.stats import latency

    for op in ops:
        op.invoke()
    if session.target.is_gpu:
        torch.cuda.synchronize()
    medians = {o.label: latency(x).estimate for o, x in zip(ops, session.harness().paired(ops).observations)}
    width = max(len(label) for label in medians)
    print(f"{'row':>{width}s} {'median us':>10s}")
    for label, m in medians.items():
        print(f"{label:>{width}s} {m:10.2f}")
    return medians


def write_medians(args, medians: dict[str, float], **fields) -> None:
    """``--json``: the medians with the run's sizes, the probe's own ``fields`` and the revision."""
    if not args.json:
        return
    import json

    from kprof.measure.fingerprint import git_revision

    run = {"workload": args.workload, "rounds": args.rounds, "observations": args.observations,
           "warmup_pairs": args.warmup_pairs, **fields, "git_revision": git_revision()}
    args.json.write_text(json.dumps({"medians_us": medians, **run}, indent=1))
