"""Tuning cache: one JSON file per (method, launch, device, shape bucket) under ``profiles/tuned/``.

The file records the setup it was measured on (driver, CUDA, torch, triton, and the hash of the
code the launch compiles: :mod:`kprof.tuning.source_key`) and every candidate's outcome. It is
rewritten atomically after each candidate so an interrupted tune resumes where it stopped. A
file whose key differs from the current setup is refused with a message naming what differs; a
file that does not parse is refused, never overwritten.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kprof.core.atomic import atomic_write_text, locked
from kprof.core.errors import KprofError
from kprof.measure.fingerprint import collect_environment
from kprof.measure.protocol import EVICTION_MODES
from kprof.methods import get_method
from kprof.tuning.source_key import source_hash  # also imported from here by commands.session, cli.methods_cmd
from kprof.workloads.workload import WorkloadShape

FORMAT = "kprof-tune/1"


def shape_bucket(shape: WorkloadShape) -> str:
    """Configs transfer within a bucket: same heads, head dim, dtype, N rounded up to a power of two."""
    n = 1 << max(0, (shape.n - 1).bit_length())
    return f"hq{shape.hq}-hkv{shape.hkv}-d{shape.d}-n{n}-{shape.dtype}"


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

    ``NAME@REV`` keys as ``NAME`` with the hash of the revision's kernels: it uses the tuned
    profile measured on the same kernel code, if there is one."""
    env = env or collect_environment()
    method = get_method(method_spec)
    name, _, options = method_spec.partition(":")
    spec = name.partition("@")[0] + (":" + options if options else "")
    return TuneKey(method=spec, launch=launch, device=env.gpu.name if env.gpu else "cpu-interpreter",
                   bucket=shape_bucket(shape), driver=env.driver, cuda=env.cuda_runtime, torch=env.torch,
                   triton=env.triton, source=source_hash(method, launch))
