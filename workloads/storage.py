"""Workload files: safetensors tensors plus kprof metadata, validated on load."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from kprof.core.atomic import atomic_path
from kprof.core.errors import WorkloadError
from kprof.workloads.workload import Workload

FORMAT = "kprof-workload/1"
_TENSORS = ("q", "k", "v", "positions")


def save(workload: Workload, path: str | Path) -> str:
    """Write ``workload`` atomically; return its content hash (also stored in the file)."""
    digest = workload.content_hash()
    meta = {
        "kprof.format": FORMAT,
        "kprof.query_position": str(workload.query_position),
        "kprof.content_hash": digest,
        "kprof.metadata": json.dumps(workload.metadata, sort_keys=True),
    }
    tensors = {n: getattr(workload, n).detach().to("cpu").contiguous() for n in _TENSORS}
    with atomic_path(path) as tmp:
        save_file(tensors, str(tmp), metadata=meta)
    return digest


def load(path: str | Path, device: torch.device | str = "cpu", verify_hash: bool = True) -> Workload:
    """Read and validate a workload file; every problem is a one-line :class:`WorkloadError`."""
    path = Path(path)
    if path.exists() and not path.is_file() and not path.is_dir():
        raise WorkloadError(f"workload file {path} is not a regular file (a device, pipe or socket): pass the "
                            "file `kprof capture` wrote")
    if not path.is_file():
        raise WorkloadError(f"workload file {path} does not exist: create it with `kprof capture`")
    try:
        with safe_open(str(path), framework="pt") as fh:
            meta = fh.metadata() or {}
            names = set(fh.keys())
            missing = [n for n in _TENSORS if n not in names]
            if meta.get("kprof.format") != FORMAT:
                raise WorkloadError(
                    f"{path} is not a kprof workload (format {meta.get('kprof.format')!r}, expected {FORMAT!r}): "
                    "re-create it with `kprof capture`"
                )
            if missing:
                raise WorkloadError(f"{path} lacks tensor(s) {', '.join(missing)}: re-create it with `kprof capture`")
            tensors = {n: fh.get_tensor(n) for n in _TENSORS}
    except SafetensorError as exc:
        raise WorkloadError(f"{path} is not a readable safetensors file ({exc}): "
                            "re-create it with `kprof capture`") from None
    except (OSError, ValueError) as exc:
        raise WorkloadError(f"{path} could not be read ({exc}): re-create it with `kprof capture`") from None
    try:
        query_position = int(meta["kprof.query_position"])
        metadata = json.loads(meta.get("kprof.metadata", "{}"))
        stored_hash = meta["kprof.content_hash"]
        if not isinstance(metadata, dict):
            raise ValueError(f"kprof.metadata is a JSON {type(metadata).__name__}, not an object")
    except (KeyError, ValueError) as exc:
        raise WorkloadError(f"{path} has malformed kprof metadata ({exc}): re-create it with `kprof capture`") from None
    try:
        workload = Workload(**tensors, query_position=query_position, metadata=metadata, source=str(path.resolve()))
    except WorkloadError as exc:
        raise WorkloadError(f"{path}: {exc}") from None
    bad = {n: int((~torch.isfinite(t)).sum()) for n, t in tensors.items() if t.is_floating_point()}
    bad = {n: c for n, c in bad.items() if c}
    if bad:
        raise WorkloadError(f"{path} holds non-finite values ({', '.join(f'{c} in {n}' for n, c in bad.items())}): "
                            "no kernel can be validated on them; re-capture the workload")
    if verify_hash:
        actual = workload.content_hash()
        if actual != stored_hash:
            raise WorkloadError(
                f"{path} content hash mismatch (stored {stored_hash[:12]}, actual {actual[:12]}): "
                "the file was modified or corrupted; re-create it with `kprof capture`"
            )
    return workload.to(device) if str(device) != "cpu" else workload
