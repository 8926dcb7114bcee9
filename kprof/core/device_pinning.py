"""``start``: the first code a worker process runs, pinning it to one GPU before torch loads.

CUDA reads ``CUDA_VISIBLE_DEVICES`` once, when the driver starts in a process, and importing
most of kprof starts it (the host gate asks whether CUDA is there). So a worker process's target
is this module, which imports nothing heavy: it sets the variable, then imports the real body by
name and calls it with plain arguments (unpickling kprof objects would import their modules
first). Used by the tuning workers and by sweeps spread over GPUs.
"""

from __future__ import annotations

import importlib
import os
import signal

from kprof.core.errors import UsageError


def start(visible_device: str | None, body: str, *args) -> None:
    """Pin to ``visible_device`` (None: leave the environment as it is), then call ``body``
    (``"module:function"``) with ``args``. A worker ignores Ctrl-C: the parent that hears it ends
    its workers and says what was kept, in one line rather than one traceback per worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if visible_device is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = visible_device
    module, _, function = body.partition(":")
    getattr(importlib.import_module(module), function)(*args)


def physical_device(index: str) -> str:
    """The ``CUDA_VISIBLE_DEVICES`` entry for visible GPU ``index`` of this process: indices count
    within the parent's own visible list when it has one (``2,3`` makes index 0 GPU 2)."""
    parent = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    return parent[int(index)] if parent and int(index) < len(parent) else index


def parse_devices(text: str | None, gpu_count: int) -> tuple[str, ...]:
    """``--devices``: ``all`` or ``0,1,...`` -> the CUDA_VISIBLE_DEVICES value of each worker.
    Without a GPU the values only count interpreter workers (no pinning)."""
    if text is None:
        return ()
    if text.strip() == "all":
        if not gpu_count:
            raise UsageError("--devices all: this machine has no CUDA GPU; drop --devices, or give interpreter "
                             "worker indices such as 0,1")
        return tuple(str(i) for i in range(gpu_count))
    try:
        ids = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise UsageError(f"--devices {text!r}: write all, or GPU indices such as 0,1,3") from None
    if not ids or len(set(ids)) != len(ids) or min(ids) < 0:
        raise UsageError(f"--devices {text!r}: give distinct GPU indices such as 0,1,3, or all")
    if gpu_count and max(ids) >= gpu_count:
        raise UsageError(f"--devices {text!r}: this host has {gpu_count} GPU(s), indices 0 to {gpu_count - 1}")
    return tuple(str(i) for i in ids)
