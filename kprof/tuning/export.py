"""Tuned configs for user code: ``kprof tune --export FILE`` writes them, :func:`load_config` reads them.

The export holds, per (method, launch, device, shape bucket), the config kprof chose (a
finalist whose paired speedup interval over the default lies above 1, else the default) with the
evidence for it, so code outside kprof runs what kprof measured::

    from kprof.tuning import load_config
    cfg = load_config("santa", "attend", shape, path="configs.json")   # {"BLOCK_N": 64, ...}
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping

from kprof.core.atomic import atomic_write_text
from kprof.core.errors import KprofError
from kprof.core.paths import tuned_dir
from kprof.tuning.cache import TuneFile, load_tune_file, shape_bucket, tune_key
from kprof.workloads.workload import WorkloadShape

EXPORT_FORMAT = "kprof-configs/1"


@dataclass
class ExportedConfig:
    method: str
    launch: str
    device: str
    bucket: str
    config: dict  # launch parameters to use
    default: dict
    tuned: bool  # False: no finalist beat the default with its interval above 1
    speedup: float | None  # the chosen finalist's paired speedup over the default (complete operation)
    low: float | None
    high: float | None
    key: dict  # the full tuning-cache key (driver, CUDA, torch, Triton, kernel source hash)
    eviction: str = "read-write"  # how the L2 was evicted before every timed call of the tune


def exported(tf: TuneFile) -> ExportedConfig:
    """The choice one tuning cache file holds."""
    chosen = tf.best or tf.default
    final = next((f for f in tf.finalists if f.get("config") == chosen and f.get("status") == "ok"), {})
    return ExportedConfig(method=tf.key.method, launch=tf.key.launch, device=tf.key.device, bucket=tf.key.bucket,
                          config=chosen, default=tf.default, tuned=chosen != tf.default, speedup=final.get("speedup"),
                          low=final.get("low"), high=final.get("high"), key=asdict(tf.key), eviction=tf.eviction)


def _read(path: Path) -> list[dict]:
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise KprofError(f"config export {path} does not exist: write it with kprof tune --export {path}") from None
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise KprofError(f"{path} is not a kprof config export ({exc}): write it with kprof tune --export") from None
    if not isinstance(doc, dict) or doc.get("format") != EXPORT_FORMAT or not isinstance(doc.get("configs"), list):
        raise KprofError(f"{path} is not a kprof config export (format {EXPORT_FORMAT} expected): "
                         "write it with kprof tune --export")
    return doc["configs"]


def check_export(path: str | Path) -> None:
    """Refuse a file that exists and is not a config export (it would be overwritten)."""
    if Path(path).exists():
        _read(Path(path))


def export_configs(files: list[TuneFile], path: str | Path) -> Path:
    """Write (atomically) the choices of ``files`` into ``path``, keeping entries of other setups
    already there, so several tunes can export into one file."""
    path = Path(path)
    new = [asdict(exported(tf)) for tf in files]
    ident = lambda e: (e["method"], e["launch"], e["device"], e["bucket"])  # noqa: E731
    kept = [e for e in (_read(path) if path.exists() else []) if ident(e) not in {ident(n) for n in new}]
    doc = {"format": EXPORT_FORMAT, "exported": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "configs": kept + new}
    atomic_write_text(path, json.dumps(doc, indent=2))
    return path


def _shape(shape: WorkloadShape | Mapping) -> WorkloadShape:
    if isinstance(shape, WorkloadShape):
        return shape
    try:
        return WorkloadShape(**{k: shape[k] for k in ("hq", "hkv", "n", "d", "dtype")})
    except (KeyError, TypeError) as exc:
        raise KprofError(f"shape needs hq, hkv, n, d and dtype ({exc}): pass a WorkloadShape or such a dict") from None


def _cached(directory: Path) -> list[dict]:
    """The choices of every tuning cache file in ``directory``."""
    out = []
    for f in sorted(directory.glob("*.json")) if directory.is_dir() else ():
        if f.suffixes[-2:-1] and f.suffixes[-2].startswith(".stale"):  # set aside: *.stale.json, *.stale-2.json
            continue
        try:
            out.append(asdict(exported(load_tune_file(f))))
        except KprofError:
            continue  # a corrupt cache is reported where it is used for timing, not here
    return out


def load_config(method: str, launch: str, shape: WorkloadShape | Mapping, path: str | Path | None = None,
                device: str | None = None) -> dict:
    """The launch parameters kprof chose for ``method``'s ``launch`` at ``shape`` (its shape
    bucket): from the export file ``path``, else from this machine's tuning caches
    (``profiles/tuned``). ``device`` (a GPU name) picks among several devices' entries."""
    shape = _shape(shape)
    bucket = shape_bucket(shape)
    source = _read(Path(path)) if path is not None else _cached(tuned_dir())
    entries = [e for e in source if e["method"] == method and e["launch"] == launch
               and e["bucket"] == bucket and (device is None or e["device"] == device)]
    if path is None and entries:  # this machine's caches: only those measured on its current setup
        now = asdict(tune_key(method, launch, shape))
        current = [e for e in entries if e["key"] == now]
        if not current:
            differ = sorted({k for e in entries for k in now if e["key"].get(k) != now[k]})
            raise KprofError(f"the tuned configs of {method}.{launch} at {bucket} were measured on another setup "
                             f"({', '.join(differ)} differ): re-tune with kprof tune --method {method} "
                             "--replace-stale, or pass path= to an export you trust")
        entries = current
    path = path or tuned_dir()
    devices = sorted({e["device"] for e in entries})
    if not entries:
        raise KprofError(f"{path} has no config for {method}.{launch} at {bucket}"
                         + (f" on {device}" if device else "")
                         + f": run kprof tune --method {method} on that shape (--export FILE to write a file)")
    if len(devices) > 1:
        raise KprofError(f"{path} has {method}.{launch} configs for {', '.join(devices)}: pass device=")
    return dict(entries[0]["config"])
