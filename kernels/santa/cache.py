"""Cache of SANTA++ team layouts, keyed by workload hash, settings and the code that builds them;
never trusted blindly.

Layouts are small (a permutation and per-team ints), so the cache stores only them; packed K/V
and representative keys are re-gathered on the device in milliseconds. A cache file lives next to
the workload file (or under ``$KPROF_CACHE``, default ``~/.cache/kprof``, for named specs). A file
whose key differs, or that fails the partition check, is rebuilt and replaced atomically.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from kprof.core.atomic import atomic_path
from kprof.kernels.santa import preparation, reference
from kprof.kernels.santa.preparation import SantaSettings, TeamLayout, build_layout
from kprof.workloads.workload import Workload

FORMAT = "kprof-santa-layout/1"
_TENSORS = ("perm", "start", "length", "rep_index", "num_teams")


@dataclass(frozen=True)
class CacheOutcome:
    path: Path
    status: str  # "hit" | "built" | "rebuilt: <reason>"
    build_seconds: float


def builder_hash() -> str:
    """Hash of the code that builds layouts: two versions of it (``santa@REV`` beside ``santa``)
    never share a cache file."""
    text = inspect.getsource(preparation) + inspect.getsource(reference)
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def cache_root() -> Path:
    return Path(os.environ.get("KPROF_CACHE", Path.home() / ".cache" / "kprof"))


def cache_path(workload: Workload, settings: SantaSettings, digest: str) -> Path:
    key = f"{settings.cache_key}-{builder_hash()}"
    if workload.source:
        src = Path(workload.source)
        return src.with_name(f"{src.stem}.santa-{key}.safetensors")
    return cache_root() / "santa" / f"{workload.name}-{digest[:16]}.santa-{key}.safetensors"


def _read(path: Path, digest: str, settings: SantaSettings, n: int) -> TeamLayout:
    """Load and verify a cached layout; ValueError says why it cannot be used."""
    try:
        with safe_open(str(path), framework="pt") as fh:
            meta = fh.metadata() or {}
            tensors = {name: fh.get_tensor(name) for name in _TENSORS}
    except (SafetensorError, OSError, KeyError) as exc:
        raise ValueError(f"unreadable ({exc})") from None
    if meta.get("format") != FORMAT:
        raise ValueError(f"format {meta.get('format')!r}")
    if meta.get("workload_hash") != digest:
        raise ValueError("workload hash differs")
    if json.loads(meta.get("settings", "{}")) != {k: v for k, v in asdict(settings).items() if k != "s"}:
        raise ValueError("settings differ")
    layout = TeamLayout(**tensors)
    layout.check(n)
    return layout


def load_or_build(workload: Workload, settings: SantaSettings, status: Callable[[str], None] = lambda s: None,
                  digest: str | None = None) -> tuple[TeamLayout, CacheOutcome]:
    """The cached layout when valid, else a fresh one (written back atomically)."""
    digest = digest or workload.content_hash()
    path = cache_path(workload, settings, digest)
    reason = "built"
    if path.exists():
        try:
            return _read(path, digest, settings, workload.shape.n), CacheOutcome(path, "hit", 0.0)
        except ValueError as exc:
            reason = f"rebuilt: stale or corrupt cache ({exc})"
            status(f"team cache {path.name}: {exc}; rebuilding")
    status(f"building teams ({settings.parents} parents, P={settings.p}, R={settings.r}) "
           f"for {workload.shape.hkv} KV heads")
    t0 = time.perf_counter()
    layout = build_layout(workload.k, settings)
    seconds = time.perf_counter() - t0
    meta = {
        "format": FORMAT,
        "workload_hash": digest,
        "settings": json.dumps({k: v for k, v in asdict(settings).items() if k != "s"}),
        "build_seconds": f"{seconds:.3f}",
    }
    try:
        with atomic_path(path) as tmp:
            save_file({name: getattr(layout, name).contiguous() for name in _TENSORS}, str(tmp), metadata=meta)
    except OSError as exc:  # a read-only workload folder must not stop the run
        status(f"could not write team cache {path}: {exc}")
    return layout, CacheOutcome(path, reason, seconds)
