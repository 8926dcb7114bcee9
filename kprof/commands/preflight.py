"""Everything a command names, checked before anything loads: method specs, workloads, protocol
numbers and the places files will be written.

A typo found after a workload was loaded and a baseline validated costs seconds to minutes; a
write that fails after a run loses the run. Each check raises :class:`UsageError` (exit 2).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterable, Iterator

from kprof.core.atomic import destination_problem, writable_probe
from kprof.core.errors import KprofError, UsageError
from kprof.measure.protocol import TimingProtocol, default_protocol

OBSERVATION_BYTES = 8  # one float64 interval per observation
MEMORY_SHARE = 0.5  # a run may keep its observations in at most this share of the free memory


@contextlib.contextmanager
def as_usage() -> Iterator[None]:
    """Any :class:`KprofError` raised inside becomes a :class:`UsageError`, its message kept."""
    try:
        yield
    except UsageError:
        raise
    except KprofError as exc:
        raise UsageError(str(exc)) from None


def check_revision(rev: str) -> None:
    """A built-in method's ``@REV`` names a commit of kprof's checkout (read before anything loads)."""
    from kprof.methods.revision import resolve

    with as_usage():
        resolve(rev)


def check_methods(specs: Iterable[str], launch_overrides: dict | None = None) -> None:
    """Every method spec names a known method with valid options and launch parameters (and
    ``launch_overrides``, a command's ``--set``); ``=LABEL`` rows and revisions are checked by
    name here (the revision itself is read when the row is prepared)."""
    from kprof.core.config_space import check_overrides
    from kprof.methods import get_method

    for spec in specs:
        if spec.startswith("="):
            continue
        head, colon, options = spec.partition(":")
        name = head.partition("@")[0]
        if "@" in head and not head.partition("@")[2]:
            raise UsageError(f"method spec {spec!r} names no revision after '@': write NAME@REV, e.g. {name}@HEAD~1")
        if "@" in head:
            check_revision(head.partition("@")[2])
        if "@" in options.partition(":")[0]:  # MODULE:NAME@REV
            continue
        with as_usage():
            method = get_method(name + colon + options)
            spaces = method.config_space()
            check_overrides(spaces, method.launch_overrides)
            check_overrides(spaces, launch_overrides)


def check_workloads(names: Iterable[str | None], what: str = "--workload", makes_tensors: bool = True) -> None:
    """Each ``--workload`` (or the argument ``what`` names) is a known spec, a valid ``synthetic:``
    shape whose K and V fit in memory (when the command ``makes_tensors``), or an existing file."""
    from kprof.workloads.specs import get_spec

    for name in names:
        if name is None:
            continue
        if not name.strip():
            raise UsageError(f"{what} is empty: name a spec (`kprof workload list`) or a .safetensors file")
        path = Path(name)
        if path.is_dir():
            raise UsageError(f"{what} {name} is a folder: name a .safetensors file in it, or a spec "
                             "(`kprof workload list`)")
        if path.is_file():
            continue
        if path.suffix == ".safetensors" or os.sep in name:
            raise UsageError(f"workload file {name} does not exist: create it with `kprof capture`, or name a spec "
                             "(`kprof workload list`)")
        with as_usage():
            spec = get_spec(name)  # an unknown name raises, naming the specs there are
        free = free_memory()
        if makes_tensors and free is not None and spec.shape.kv_bytes > free:
            raise UsageError(f"{what} {name}: its K and V alone take {_size(spec.shape.kv_bytes)}, more than the "
                             f"memory available now ({_size(free)}): choose a smaller n or hkv")


def check_config(config_mode: str, methods: Iterable[str] = ()) -> None:
    """``--config``: auto, default, or a readable JSON file of launch parameters for these methods."""
    if config_mode in ("auto", "default"):
        return
    if not Path(config_mode).is_file():
        what = "is a folder" if Path(config_mode).is_dir() else "no such file"
        raise UsageError(f"--config {config_mode}: {what}; pass auto, default, or a JSON file of launch -> "
                         "parameters")
    from kprof.methods import get_method
    from kprof.tuning.lookup import per_method, read_config_file

    specs = [spec for spec in methods if not spec.startswith("=")]
    with as_usage():
        doc = read_config_file(config_mode)
        spaces = [get_method(spec).config_space() for spec in specs]
    if per_method(doc) or not specs:
        return  # per-method entries are checked when each is prepared; no methods named: the defaults come later
    have = {launch for space in spaces for launch in space}
    if unused := sorted(set(doc) - have):
        raise UsageError(f"--config {config_mode} sets launch(es) {', '.join(unused)}, which no method of this run "
                         f"has (theirs: {', '.join(sorted(have)) or 'none'}): fix the launch name, or add the "
                         "method that has it")


def check_protocol(on_gpu: bool, overrides: dict, methods: int = 1) -> TimingProtocol:
    """The protocol the overrides give, refused when its numbers are nonsense or its observations
    would not fit in memory."""
    if overrides.get("graph") and not on_gpu:
        raise UsageError("--graph times CUDA-graph replays, which need a CUDA device: drop --graph on the CPU")
    if overrides.get("host_bound") and any(overrides.get(k) is not None for k in ("eviction", "evict_mib")):
        raise UsageError("--host-bound times calls back to back with no eviction: drop --eviction and --evict-mib, "
                         "or --host-bound")
    with as_usage():
        protocol = default_protocol(on_gpu).with_overrides(**overrides)
    check_footprint(protocol, methods)
    return protocol


def check_footprint(protocol: TimingProtocol, methods: int) -> None:
    """Refuse a run whose observations alone would exhaust the free memory (a run stopped on
    precision: its first rounds)."""
    rounds = protocol.rounds or protocol.min_rounds
    per_round = max(protocol.observations, protocol.stage_observations)
    need = rounds * per_round * methods * OBSERVATION_BYTES
    free = free_memory()
    if free is not None and need > MEMORY_SHARE * free:
        raise UsageError(f"{rounds} rounds x {per_round} observations x {methods} row(s) would keep {_size(need)} of "
                         f"observations, more than half of the memory available now ({_size(free)}): pass fewer "
                         "--rounds or --observations")


def free_memory() -> int | None:
    """Bytes of memory a run can have now, or None where it cannot be read: Linux's MemAvailable
    (free pages plus the page cache it would give back; free pages alone are a few GiB after a
    checkpoint was read), else the free pages sysconf reports."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} PiB"


def check_out_file(path: str | os.PathLike | None, force: bool = False, option: str = "--out") -> None:
    """A file a command will write at its end: not a folder, not an existing file (unless
    ``force``), in a place that can be written (the folder is made when needed)."""
    if path is not None and (problem := destination_problem(path, force, option)):
        raise UsageError(problem)


def check_out_dir(path: str | os.PathLike | None, option: str = "--out-dir") -> None:
    """A folder a command will write into: a folder (or nothing yet) in a writable place."""
    if path is None:
        return
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise UsageError(f"{option} {path} is a file: name a folder")
    if problem := writable_probe(target):
        raise UsageError(f"{option} {path}: {problem}: choose another place")
