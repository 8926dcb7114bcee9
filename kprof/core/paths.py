"""Where kprof keeps what it writes, resolved in one documented order.

Runs (``runs/``) and tuned profiles (``profiles/tuned/``) live under a home folder: the flag a
command was given wins; else ``$KPROF_HOME``; else the project root, the nearest folder at or
above the working directory that holds ``pyproject.toml`` or ``.git`` (so a command run from a
subfolder finds the project's profiles); else the user cache, ``$XDG_CACHE_HOME/kprof`` or
``~/.cache/kprof``. In a repository, ``runs/`` and CPU-interpreter profiles are git-ignored.

What kprof measures of this machine (copy and matmul peaks from ``kprof env --measure-peak``,
DRAM bytes from ``kprof ncu``) is the machine's, not the project's: it goes to
``$KPROF_HOME/measured``, else ``~/.cache/kprof/measured``, never into a checkout's files; a
project's ``profiles/`` may ship reference values, read after this machine's.
"""

from __future__ import annotations

import os
from pathlib import Path

from kprof.core.errors import UsageError

MARKERS = ("pyproject.toml", ".git")


def project_root(start: Path | None = None) -> Path | None:
    """The nearest folder at or above ``start`` (the working directory) with a project marker."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if any((folder / m).exists() for m in MARKERS):
            return folder
    return None


def user_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kprof"


def kprof_home() -> Path:
    """``$KPROF_HOME``, else the project root, else the user cache."""
    if os.environ.get("KPROF_HOME"):
        return _home_from_environment()
    return project_root() or user_cache()


def _home_from_environment() -> Path:
    home = Path(os.environ["KPROF_HOME"])
    if home.exists() and not home.is_dir():
        raise UsageError(f"$KPROF_HOME={home} is a file: point it at a folder (kprof keeps runs/ and profiles/ "
                         "there), or unset it")
    return home


def measured_dir() -> Path:
    """Where measurements of this machine are written: ``$KPROF_HOME/measured``, else the user cache's."""
    return (_home_from_environment() if os.environ.get("KPROF_HOME") else user_cache()) / "measured"


def measured_files(name: str) -> list[Path]:
    """Where a machine measurement file ``name`` is read, first match first: this machine's, then
    the reference the project ships in ``profiles/``."""
    return [measured_dir() / name, kprof_home() / "profiles" / name]


def runs_dir() -> Path:
    """Where Results go when ``--out`` is not given."""
    return kprof_home() / "runs"


def tuned_dir() -> Path:
    """Where tuning caches live when ``--out-dir`` is not given, and where lookups read them."""
    return kprof_home() / "profiles" / "tuned"
