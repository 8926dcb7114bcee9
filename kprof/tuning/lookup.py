"""Which launch config a measurement uses: tuned (when the cache matches), default, or a file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

from kprof.core.config_space import check_overrides
from kprof.core.errors import KprofError
from kprof.core.paths import tuned_dir
from kprof.measure.fingerprint import collect_environment
from kprof.methods import get_method
from kprof.tuning.cache import StaleTuneFile, load_tune_file, tune_key
from kprof.workloads.workload import WorkloadShape


def tuned_overrides(method_spec: str, shape: WorkloadShape, directory: Path | None = None,
                    env=None, eviction: str = "read-write") -> tuple[dict, list[str]]:
    """Best tuned config per launch whose cache key matches this setup, and notes saying so (one
    line for all the launches whose profile was measured on another setup)."""
    directory = directory or tuned_dir()
    method = get_method(method_spec)
    overrides, notes, stale = {}, [], []
    for launch in method.config_space():
        env = env or collect_environment()
        key = tune_key(method_spec, launch, shape, env)
        path = directory / key.filename
        if not path.exists():
            continue
        try:
            tf = load_tune_file(path, key)
        except StaleTuneFile as exc:
            stale.append((launch, exc.differences))
            continue
        except KprofError as exc:
            notes.append(f"{method_spec}.{launch}: tuned config not used: {exc}")
            continue
        if tf.best and tf.best != tf.default:
            try:  # a profile edited by hand, or one from before the space changed
                check_overrides({launch: method.config_space()[launch]}, {launch: tf.best})
            except KprofError as exc:
                notes.append(f"{method_spec}.{launch}: tuned config not used: {path}: {exc}; defaults used")
                continue
            overrides[launch] = tf.best
            evicted = ("" if tf.eviction == eviction
                       else f"; tuned with --eviction {tf.eviction}, timed now with {eviction}")
            notes.append(f"{method_spec}.{launch}: using tuned config {tf.best} ({path}{evicted})")
    if stale:
        what = sorted({d.split(":")[0] for _, diffs in stale for d in diffs})
        notes.append(f"{method_spec}: tuned profiles of {', '.join(launch for launch, _ in stale)} were measured on "
                     f"another setup ({', '.join(what)} differ): defaults used; re-tune with kprof tune --method "
                     f"{method_spec} --replace-stale")
    return overrides, notes


def read_config_file(path: str) -> dict:
    """A ``--config`` JSON file: ``{launch: {param: v}}`` or ``{method: {launch: {...}}}``."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise KprofError(f"--config {path} is not a readable JSON config ({exc}): "
                         "pass a JSON file, auto or default") from None
    if not isinstance(doc, dict):
        raise KprofError(f"--config {path} must hold a JSON object of launch -> parameters")
    return doc


def per_method(doc: dict) -> bool:
    """Whether a config document is keyed by method (``{method: {launch: {...}}}``), not by launch."""
    return any(isinstance(v, dict) and all(isinstance(x, dict) for x in v.values()) for v in doc.values())


def file_overrides(path: str, method_spec: str, launches: Iterable[str] | None = None) -> dict:
    """Launch overrides from a ``--config`` file for one method. A file keyed by launch applies to
    each method only the ``launches`` it has (all, if None), so one file tunes the candidate
    without being refused by a baseline that has no such launch."""
    doc = read_config_file(path)
    if method_spec in doc:
        return doc[method_spec]
    if per_method(doc):
        return {}  # per-method file without an entry for this method
    return doc if launches is None else {k: v for k, v in doc.items() if k in set(launches)}
