"""DRAM bytes ncu measured for one call of a method, kept so later runs report them.

``kprof ncu`` sums ``dram__bytes_read.sum + dram__bytes_write.sum`` over a method's launches and
records it under a key of device, workload content, method spec, kernel source and launch config; a compare on
the same key shows GB/s from these measured bytes instead of the method's declared ones.
"""

from __future__ import annotations

import json
from pathlib import Path

from kprof.core.atomic import atomic_write_text, locked
from kprof.core.paths import measured_dir, measured_files

READ, WRITE = "dram__bytes_read.sum", "dram__bytes_write.sum"
SOURCE = "ncu dram__bytes read + write"


def bytes_key(device: str, workload_hash: str, method: str, source: str, config: object) -> str:
    """Device, workload content, method spec, the hash of the method's code (editing a kernel makes
    its measured bytes stale) and launch config."""
    return "|".join((device, workload_hash, method, source, json.dumps(config, sort_keys=True, default=str)))


STORE = "ncu-dram-bytes.json"


def _read(path: Path) -> dict:
    try:
        doc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return {}
    return doc if isinstance(doc, dict) else {}


def lookup_bytes(key: str) -> int | None:
    """This machine's measurement of ``key``, else the project's shipped one (core.paths.measured_files)."""
    for path in measured_files(STORE):
        value = _read(path).get(key)
        if isinstance(value, (int, float)):
            return int(value)
    return None


def record_bytes(key: str, nbytes: int) -> None:
    """Add one measurement to this machine's store, under its folder lock (ncu runs may overlap)."""
    path = measured_dir() / STORE
    with locked(path.parent):
        atomic_write_text(path, json.dumps(_read(path) | {key: int(nbytes)}, indent=2))
