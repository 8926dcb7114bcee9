"""CUDA-graph capture of one invocation, for ``--graph`` timing of replays."""

from __future__ import annotations

from typing import Callable

import torch

from kprof.errors import KprofError


def capture(invoke: Callable[[], object], device: torch.device, warmup: int = 3) -> Callable[[], None]:
    """Capture ``invoke`` into a CUDA graph and return its ``replay``; the op must be capturable."""
    if device.type != "cuda":
        raise KprofError("--graph needs a CUDA device: drop --graph on the CPU")
    stream = torch.cuda.Stream(device)
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        for _ in range(warmup):
            invoke()
    torch.cuda.current_stream(device).wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            invoke()
    except RuntimeError as exc:
        raise KprofError(f"this method cannot be captured in a CUDA graph ({str(exc).splitlines()[0]}): drop --graph") from None
    return graph.replay
