"""Where Results live: a JSON document and its ``.npz`` observations sidecar, whose SHA-256 the
JSON records, written atomically under a folder lock; ``latest.json`` in the runs folder is a copy
of the newest document."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import numpy as np

from kprof.core.atomic import atomic_path, atomic_write_text, destination_problem, locked, special_file, writable_probe
from kprof.core.errors import KprofError, UsageError
from kprof.core.paths import runs_dir as default_runs_dir
from kprof.results.schema import Result, result_from_dict


def missing_result(path: Path) -> str:
    """The message for a Result path that does not exist, pointing at kprof's runs folder when
    the last run was written there rather than where the path looks."""
    latest = default_runs_dir() / "latest.json"
    if path.name == "latest.json" and latest.is_file() and latest.resolve() != path.absolute().resolve():
        return (f"result file {path} does not exist; runs are kept in {latest.parent} ($KPROF_HOME, else the project "
                f"root, else ~/.cache/kprof): pass {latest}")
    return f"result file {path} does not exist: run `kprof compare` first, or pass a Result file that exists"


def _npz_bytes(observations: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, **{f"obs_{i}": v for i, v in enumerate(observations.values())},
                        labels=np.array(list(observations), dtype=object).astype(str))
    return buf.getvalue()


def _fresh_path(directory: Path, stem: str) -> Path:
    """``stem.json`` in ``directory``, or ``stem-2.json``... so no earlier run is overwritten."""
    path, k = directory / f"{stem}.json", 1
    while path.exists() or path.with_suffix(".obs.npz").exists():
        k += 1
        path = directory / f"{stem}-{k}.json"
    return path


def _sidecar_taken(path: Path) -> str | None:
    """A sidecar already where a Result at ``path`` would write its own: another Result's, say one
    renamed without it, which would become unreadable."""
    sidecar = path.with_suffix(".obs.npz")
    return f"its observations sidecar {sidecar.name} exists (perhaps another Result's)" if sidecar.exists() else None


def _taken(path: Path) -> str | None:
    if path.exists():
        return f"{path} exists"
    return (taken := _sidecar_taken(path)) and f"{path}: {taken}"


def sidecar_problem(path: Path, force: bool, option: str) -> str | None:
    """Why the sidecar of a Result at ``path`` cannot be written: a special file, or an existing
    one without ``force``."""
    sidecar = path.with_suffix(".obs.npz")
    if special_file(sidecar) or sidecar.is_dir():
        return f"{option} {path}: its observations sidecar {sidecar} is not a regular file: choose another name"
    if not force and (taken := _sidecar_taken(path)):
        return f"{option} {path}: {taken}: choose another name, or pass --force to replace it"
    return None


def check_destination(path: str | Path | None, force: bool = False, runs_dir: Path | None = None,
                      option: str = "--out") -> None:
    """Refuse, before a run, what :func:`save_result` would fail at after it: ``--out`` naming a
    folder, an existing file (unless ``force``), or a place that cannot be written."""
    if path:
        problem = destination_problem(path, force, option) or sidecar_problem(Path(path), force, option)
    else:
        runs = runs_dir or default_runs_dir()
        why = writable_probe(runs)
        problem = why and f"the runs folder {runs}: {why}: set $KPROF_HOME or pass --out"
    if problem:
        raise UsageError(problem)


def save_result(result: Result, path: str | Path | None = None, runs_dir: Path | None = None,
                force: bool = False, keep_both: bool = False) -> Path:
    """Write ``result`` (JSON + observations sidecar) atomically, under a lock on the folder so
    that two writers never pair one's JSON with the other's sidecar; also refresh ``latest.json``.

    An existing ``path`` is replaced only with ``force``; with ``keep_both`` (a run that ends to
    find its ``--out`` taken since it started) the Result goes to a fresh name beside it;
    otherwise it is refused before anything is written."""
    runs_dir = runs_dir or default_runs_dir()
    path = Path(path) if path else None
    folder = path.parent if path else runs_dir
    if problem := writable_probe(folder):
        raise UsageError(f"cannot save the result in {folder}: {problem}: pass another path")
    if path is not None and path.is_dir():
        raise UsageError(f"cannot save the result as {path}: it is a folder; name a file in it")
    if path is not None and (special_file(path) or special_file(path.with_suffix(".obs.npz"))):
        raise UsageError(f"cannot save the result as {path}: it or its .obs.npz sidecar is not a regular file "
                         "(a device, pipe or socket); name an ordinary file")
    with locked(folder):
        if path is None:
            path = _fresh_path(runs_dir, result.default_stem())
        elif not force and (taken := _taken(path)):
            if not keep_both:
                raise UsageError(f"{taken}: choose another name, or pass force=True (--force) to replace it")
            path = _fresh_path(path.parent, path.stem)
        blob = _npz_bytes(result.observations) if result.observations else None
        if blob is not None:
            result.observations_file = path.with_suffix(".obs.npz").name
            result.observations_sha256 = hashlib.sha256(blob).hexdigest()
        text = result.to_json()  # both documents exist before either file is replaced
        if blob is not None:
            with atomic_path(path.with_suffix(".obs.npz")) as tmp:
                tmp.write_bytes(blob)
        atomic_write_text(path, text)
        if path.parent.resolve() == runs_dir.resolve():
            atomic_write_text(runs_dir / "latest.json", text)
    return path


def load_result(path: str | Path, with_observations: bool = True) -> Result:
    """A Result and its observations, read under a shared lock on their folder, so a writer
    replacing the pair (:func:`save_result`) is never seen half-way."""
    path = Path(path)
    with locked(path.parent, shared=True):
        return _load(path, with_observations)


def _load(path: Path, with_observations: bool) -> Result:
    if special_file(path):  # a FIFO's read would wait for a writer for ever
        raise UsageError(f"{path} is not a regular file (a device, pipe or socket): pass a Result file")
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise KprofError(missing_result(path)) from None
    except IsADirectoryError:
        raise UsageError(f"{path} is a folder: pass a Result file in it (its runs are *.json)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise KprofError(f"{path} is not a kprof result (invalid JSON: {exc}): re-run the measurement") from None
    if not isinstance(doc, dict):
        raise KprofError(f"{path} is not a kprof result (a JSON {type(doc).__name__}, not an object): pass a Result "
                         "file that kprof compare or stages wrote")
    try:
        result = result_from_dict(doc)
    except (KeyError, TypeError) as exc:
        raise KprofError(f"{path} is a malformed kprof result ({exc}): re-run the measurement") from None
    except KprofError as exc:  # another schema or tool: the file matters, inside a history folder most
        raise KprofError(f"{path}: {exc}") from None
    if with_observations and result.observations_file:
        sidecar = path.parent / result.observations_file
        renamed = path.with_suffix(".obs.npz")  # the pair renamed together keeps the result's own stem
        if not sidecar.is_file() and renamed.is_file():
            sidecar = renamed
        if not sidecar.is_file():
            names = " or ".join(dict.fromkeys((sidecar.name, renamed.name)))
            raise KprofError(f"observations sidecar {sidecar} is missing: copy it next to {path.name} "
                             f"(as {names}) or re-run")
        blob = sidecar.read_bytes()
        if hashlib.sha256(blob).hexdigest() != result.observations_sha256:
            raise KprofError(f"observations sidecar {sidecar} does not match its result (hash differs): re-run")
        with np.load(io.BytesIO(blob), allow_pickle=False) as z:
            labels = list(z["labels"])
            result.observations = {label: z[f"obs_{i}"] for i, label in enumerate(labels)}
    return result
