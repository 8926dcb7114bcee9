"""Turn what a user typed after ``--workload`` (a file or a spec name) into a Workload."""

from __future__ import annotations

from pathlib import Path

import torch

from kprof.core.errors import WorkloadError
from kprof.workloads.specs import SPECS, SYNTHETIC_EXAMPLE, get_spec, is_spec
from kprof.workloads.storage import load
from kprof.workloads.synthetic import synthesize
from kprof.workloads.workload import Workload, WorkloadShape


def resolve_workload(name_or_path: str, device: torch.device | str = "cpu") -> Workload:
    """A path to a ``.safetensors`` workload file, or the name of a spec (materialised synthetically)."""
    path = Path(name_or_path)
    if path.suffix == ".safetensors" or path.exists():
        return load(path, device=device)
    if is_spec(name_or_path):
        workload = synthesize(get_spec(name_or_path))
        return workload.to(device) if str(device) != "cpu" else workload
    raise WorkloadError(
        f"workload {name_or_path!r} is neither a file nor a spec: pass a .safetensors file, one of "
        f"{', '.join(SPECS)}, or a shape such as {SYNTHETIC_EXAMPLE}"
    )


def resolve_shape(name_or_path: str) -> WorkloadShape:
    """The shape of what ``--workload`` names, without materialising a spec (synthesising the 1M-
    token spec on a CPU takes minutes: the tuner's parent needs only the shape)."""
    if is_spec(name_or_path) and not Path(name_or_path).exists():
        return get_spec(name_or_path).shape
    return resolve_workload(name_or_path).shape
