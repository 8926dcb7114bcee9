"""Tuning cache: one JSON file per (method, launch, device, shape bucket) under ``profiles/tuned/``.

The file records the setup it was measured on (driver, CUDA, torch, triton, kernel source hash)
and every candidate's outcome. It is rewritten atomically after each candidate so an interrupted
tune resumes where it stopped. A file whose key differs from the current setup is refused with
a message naming what differs; a file that does not parse is refused, never overwritten.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import inspect
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kprof.core.atomic import atomic_write_text, locked
from kprof.core.errors import KprofError
from kprof.measure.fingerprint import collect_environment
from kprof.measure.protocol import EVICTION_MODES
from kprof.methods import get_method
from kprof.workloads.workload import WorkloadShape

FORMAT = "kprof-tune/1"


def shape_bucket(shape: WorkloadShape) -> str:
    """Configs transfer within a bucket: same heads, head dim, dtype, N rounded up to a power of two."""
    n = 1 << max(0, (shape.n - 1).bit_length())
    return f"hq{shape.hq}-hkv{shape.hkv}-d{shape.d}-n{n}-{shape.dtype}"


def _canonical(node) -> str:
    """An AST as text that is the same on every Python version: node names and their non-empty
    fields only. ``ast.unparse`` is not (3.12 renders f-strings with other quotes) and neither is
    ``ast.dump`` (3.12 adds empty ``type_params`` fields)."""
    if isinstance(node, ast.AST):
        fields = [f"{name}={_canonical(value)}" for name, value in ast.iter_fields(node)
                  if value not in (None, []) and name not in ("type_comment", "kind")]
        return f"{type(node).__name__}({','.join(fields)})"
    if isinstance(node, list):
        return "[" + ",".join(_canonical(v) for v in node) + "]"
    return repr(node)


def code_text(source: str) -> str:
    """Source reduced to its code: comments, docstrings and formatting dropped, as a canonical AST.

    Tune caches key on this, so rewording a docstring or re-wrapping a line keeps a measured
    profile valid, while any change to what runs invalidates it; the text does not depend on the
    Python version that computes it (a profile measured on the device's 3.12 is valid on 3.11).
    """
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return _canonical(tree)


def source_files(method) -> list[Path]:
    """Every file whose code a method's launches run, found from where its class lives: the
    adapter's module; for a kernel family (``<root>.kernels.<family>.method``) the family's whole
    folder and ``kernels/common``; plus any ``kernel_modules`` a plugin names."""
    module = inspect.getmodule(type(method))
    path = Path(module.__file__).resolve()
    parts = module.__name__.split(".")
    files = [path]
    if "kernels" in parts[:-1]:
        k = parts.index("kernels")
        kernels_dir = path.parents[len(parts) - 2 - k]
        if len(parts) > k + 2:
            files += (kernels_dir / parts[k + 1]).rglob("*.py")
        files += (kernels_dir / "common").rglob("*.py")
    files += [Path(importlib.import_module(name).__file__).resolve() for name in getattr(method, "kernel_modules", ())]
    return sorted(set(files))


def source_hash(method) -> str:
    """Hash of the code of :func:`source_files`: editing anything a launch runs invalidates its
    tunes (comments and docstrings do not count, see ``code_text``)."""
    text = "\n".join(code_text(f.read_text()) for f in source_files(method))
    text = re.sub(r"\bkprof_at_[0-9a-f]{12}\b", "kprof", text)  # a revision's copy hashes as its code
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class TuneKey:
    method: str
    launch: str
    device: str
    bucket: str
    driver: str | None
    cuda: str | None
    torch: str
    triton: str
    source: str

    @property
    def filename(self) -> str:
        safe = lambda s: "".join(c if c.isalnum() or c in "-_." else "_" for c in s)  # noqa: E731
        return f"{safe(self.method)}__{safe(self.launch)}__{safe(self.device)}__{self.bucket}.json"

    def differences(self, other: "TuneKey") -> list[str]:
        a, b = asdict(self), asdict(other)
        return [f"{k}: cached {a[k]!r} vs now {b[k]!r}" for k in a if a[k] != b[k]]


@dataclass
class CandidateRecord:
    config: dict
    status: str  # "ok" | "rejected" | "failed"
    median_us: float | None = None
    round_medians_us: list[float] = field(default_factory=list)
    reason: str = ""
    seconds: float = 0.0
    timeout_s: float | None = None  # the per-candidate limit it was measured under (for failures)

    def describe(self) -> str:
        """One progress line: the config and its median, or why it has none."""
        cfg = ",".join(f"{k}={v}" for k, v in self.config.items())
        if self.status == "ok":
            return f"{cfg}: {self.median_us:.2f} us ({self.seconds:.1f} s)"
        return f"{cfg}: {self.status} ({self.reason[:80]})"


@dataclass
class TuneFile:
    key: TuneKey
    default: dict
    candidates: list[CandidateRecord] = field(default_factory=list)
    best: dict | None = None
    finalists: list[dict] = field(default_factory=list)  # paired re-measurements vs the default
    eviction: str = "read-write"  # how the eviction buffer evicted before every timed call (--eviction)
    format: str = FORMAT

    def measured(self, config: dict) -> CandidateRecord | None:
        for c in self.candidates:
            if c.config == config:
                return c
        return None

    def ok(self) -> list[CandidateRecord]:
        return sorted((c for c in self.candidates if c.status == "ok"), key=lambda c: c.median_us)

    def save(self, directory: Path) -> Path:
        """Write the cache file, merged under a folder lock with what another tune of the same key
        wrote there meanwhile: candidates only it measured are kept (and learnt here)."""
        path = directory / self.key.filename
        with locked(directory):
            if path.exists():
                try:
                    self.merge(load_tune_file(path, self.key))
                except KprofError:  # stale or corrupt: this tune refused or replaced it when it began
                    pass
            atomic_write_text(path, json.dumps(asdict(self), indent=2))
        return path

    def merge(self, other: "TuneFile") -> None:
        """Take ``other``'s candidates that this file has not measured; keep this file's choice."""
        mine = [c.config for c in self.candidates]
        self.candidates += [c for c in other.candidates if c.config not in mine]
        self.best = self.best if self.best is not None else other.best
        self.finalists = self.finalists or other.finalists


class StaleTuneFile(KprofError):
    """A cache file measured under another key (device, versions, source): refused, kept as is."""

    def __init__(self, path: Path, differences: list[str]):
        self.differences = differences
        super().__init__(f"tuning cache {path} was measured on another setup ({'; '.join(differences)}): "
                         "re-tune here with `kprof tune --replace-stale` (the old file is kept as *.stale.json) "
                         "or pass --config default")


def load_tune_file(path: Path, key: TuneKey | None = None) -> TuneFile:
    """Read a cache file; with ``key``, refuse it unless it was measured under that key."""
    try:
        doc = json.loads(path.read_text())
        if not isinstance(doc, dict):
            raise ValueError(f"a JSON {type(doc).__name__}, not an object")
        if doc.get("format") != FORMAT:
            raise ValueError(f"format {doc.get('format')!r}")
        f = TuneFile(key=TuneKey(**doc["key"]), default=doc["default"],
                     candidates=[CandidateRecord(**c) for c in doc["candidates"]], best=doc.get("best"),
                     finalists=doc.get("finalists", []), eviction=doc.get("eviction", "read-write"))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise KprofError(f"tuning cache {path} is corrupt ({exc}): "
                         "move it away to re-tune; it was not modified") from None
    if f.eviction not in EVICTION_MODES:
        raise KprofError(f"tuning cache {path} is corrupt (eviction {f.eviction!r}): "
                         "move it away to re-tune; it was not modified")
    if key is not None and f.key != key:
        raise StaleTuneFile(path, f.key.differences(key))
    return f


def tune_key(method_spec: str, launch: str, shape: WorkloadShape, env=None) -> TuneKey:
    """The cache key of one launch of a method on this machine's current software stack.

    ``NAME@REV`` keys as ``NAME`` with the revision's source hash: it uses the tuned profile
    measured on its own code, if there is one."""
    env = env or collect_environment(with_ncu=False)
    method = get_method(method_spec)
    name, _, options = method_spec.partition(":")
    spec = name.partition("@")[0] + (":" + options if options else "")
    return TuneKey(method=spec, launch=launch, device=env.gpu.name if env.gpu else "cpu-interpreter",
                   bucket=shape_bucket(shape), driver=env.driver, cuda=env.cuda_runtime, torch=env.torch,
                   triton=env.triton, source=source_hash(method))
