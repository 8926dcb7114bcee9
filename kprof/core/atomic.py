"""Atomic file writes: a reader sees the old file or the new one, never half of either.

Files get the mode an ordinary ``open()`` would give them under the user's umask (a temporary
file alone would be 0600). :func:`locked` serialises writers of one folder across processes, so
a read-merge-write (a tuning cache) or a pair of files (a Result and its sidecar) is never
interleaved with another process's.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterator

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, writes stay atomic
    fcntl = None


def _umask_mode() -> int:
    """0666 less the process's umask: what ``open(path, "w")`` would create."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


class NotARegularFile(OSError):
    """A write aimed at a device, FIFO or socket."""


def special_file(path: Path) -> bool:
    """An existing path that is neither a regular file nor a folder (``/dev/null``, a FIFO): a
    rename over it would replace a device node, a read of it could block for ever."""
    return path.exists() and not path.is_file() and not path.is_dir()


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; on success fsync it and rename it over ``target``.

    On any exception the temporary file is removed and ``target`` is left untouched. A special
    file is never replaced (:func:`special_file`).
    """
    target = Path(target)
    if special_file(target):
        raise NotARegularFile(f"{target} is not a regular file (a device, pipe or socket): name an ordinary file")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        with open(tmp_path, "rb") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp_path, _umask_mode())
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def atomic_write_text(target: str | os.PathLike, text: str) -> None:
    with atomic_path(target) as tmp:
        tmp.write_text(text)


@contextlib.contextmanager
def locked(folder: str | os.PathLike, shared: bool = False) -> Iterator[None]:
    """Hold an advisory lock on ``folder`` while the block runs: exclusive for a writer (the
    folder is made if missing), shared for readers, who then never see a writer half-way.
    Nothing is left behind; a reader of a folder that is not there or cannot be opened reads
    without a lock."""
    folder = Path(folder)
    if not shared:
        folder.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(folder, os.O_RDONLY) if fcntl is not None else None
    except OSError:
        if not shared:
            raise
        fd = None
    if fd is None:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def writable_probe(folder: str | os.PathLike) -> str | None:
    """Why a new file cannot be made in ``folder`` (made later if missing), or None if it can:
    its nearest existing ancestor must be a folder that accepts a file."""
    probe = Path(folder).absolute()
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is a file, so no folder can be made there"
    try:
        with tempfile.NamedTemporaryFile(dir=probe, prefix=".kprof-write-check-"):
            pass
    except OSError as exc:
        return f"cannot write in {probe} ({exc.strerror})"
    return None


def destination_problem(path: str | os.PathLike, force: bool, option: str) -> str | None:
    """Why ``path`` cannot take a new file from a command (a one-line message with the fix), or
    None: not a folder, not an existing file unless ``force``, in a writable place."""
    target = Path(path)
    if target.is_dir():
        return f"{option} {path} is a folder: name a file in it, such as {target / 'out.json'}"
    if special_file(target):
        return f"{option} {path} is not a regular file (a device, pipe or socket): name an ordinary file"
    if target.exists() and not force:
        return f"{option} {path} exists: choose another name, or pass --force to replace it"
    if problem := writable_probe(target.parent):
        return f"{option} {path}: {problem}: choose another place"
    return None
