"""DRAM bytes ncu measured for one call of a method, kept so later runs report them.

``kprof ncu`` sums ``dram__bytes_read.sum + dram__bytes_write.sum`` over a method's launches and
records it under a key of device, workload content, method spec, kernel source and launch config; a compare on
the same key shows GB/s from these measured bytes instead of the method's declared ones.
"""

from __future__ import annotations

import json
from pathlib import Path

from kprof.core.atomic import atomic_write_text
from kprof.core.paths import kprof_home

READ, WRITE = "dram__bytes_read.sum", "dram__bytes_write.sum"
SOURCE = "ncu dram__bytes read + write"


def bytes_key(device: str, workload_hash: str, method: str, source: str, config: object) -> str:
    """Device, workload content, method spec, the hash of the method's code (editing a kernel makes
    its measured bytes stale) and launch config."""
    return "|".join((device, workload_hash, method, source, json.dumps(config, sort_keys=True, default=str)))


def store_file() -> Path:
    return kprof_home() / "profiles" / "ncu-dram-bytes.json"


def _read() -> dict:
    try:
        doc = json.loads(store_file().read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
    return doc if isinstance(doc, dict) else {}


def lookup_bytes(key: str) -> int | None:
    value = _read().get(key)
    return int(value) if isinstance(value, (int, float)) else None


def record_bytes(key: str, nbytes: int) -> None:
    atomic_write_text(store_file(), json.dumps(_read() | {key: int(nbytes)}, indent=2))
