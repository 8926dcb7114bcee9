"""The first code a tuning worker process runs: pin it to its GPU before anything imports torch.

CUDA reads ``CUDA_VISIBLE_DEVICES`` once, when the driver starts in a process, and importing
kprof's worker module already starts it (the host gate asks whether CUDA is there). So the
process target lives here, in a module that imports nothing heavy, and receives the worker's
spec as plain fields: unpickling a ``WorkerSpec`` would import the worker module first.
"""

from __future__ import annotations

import os


def start(conn, spec_fields: dict, visible_device: str | None) -> None:
    if visible_device is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = visible_device
    from kprof.tuning.worker import WorkerSpec, entry  # torch and the CUDA driver start only now

    entry(conn, WorkerSpec(**spec_fields))
