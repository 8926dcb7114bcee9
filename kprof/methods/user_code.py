"""A user's own method failing: one line naming what raised, and where in the user's files.

Code kprof ships raising is a bug in kprof and keeps its traceback; a user's function that raises,
takes the wrong arguments, or calls ``sys.exit`` is the user's to fix, and a traceback through
kprof's harness hides the one frame that matters.
"""

from __future__ import annotations

import contextlib
import sysconfig
import traceback
from pathlib import Path
from typing import Iterator

from kprof.core.errors import KprofError, UsageError

_KPROF = Path(__file__).resolve().parents[1]  # the kprof package: frames in it are not the user's
_LIBRARIES = [Path(p).resolve() for p in {sysconfig.get_paths()[k] for k in ("stdlib", "purelib", "platlib")}]


def is_users(obj: object) -> bool:
    """Whether ``obj`` (a Method, its class or a function) lives outside kprof's own package."""
    module = getattr(obj, "__module__", None) or getattr(type(obj), "__module__", "")
    return not (module == "kprof" or module.startswith("kprof."))  # kernels/ installs as kprof.kernels


def where(exc: BaseException) -> str:
    """``file:line in function`` of the innermost frame in the user's own files: outside kprof and
    outside the libraries it calls into (torch, triton, the standard library), else outside kprof,
    else the innermost."""
    frames = traceback.extract_tb(exc.__traceback__)
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{exc.filename}:{exc.lineno}"
    outside = [f for f in frames if not Path(f.filename).resolve().is_relative_to(_KPROF)]
    own = [f for f in outside if not any(Path(f.filename).resolve().is_relative_to(d) for d in _LIBRARIES)]
    frame = (own or outside or frames or [None])[-1]
    return f"{frame.filename}:{frame.lineno} in {frame.name}" if frame else "no frame"


def describe(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"called sys.exit({exc.code!r})"
    text = str(exc.msg if isinstance(exc, SyntaxError) else exc).strip().splitlines()
    return f"raised {type(exc).__name__}" + (f": {text[0]}" if text else "")


class UserCodeError(KprofError):
    """The user's method failed while it ran: exit 1."""


class UserImportError(UsageError):
    """The user's module failed to import: exit 2, nothing ran."""


@contextlib.contextmanager
def running_users_code(what: str, fix: str = "fix it, or call it alone to see the traceback",
                       error: type[KprofError] = UserCodeError,
                       keep: tuple[type[BaseException], ...] = ()) -> Iterator[None]:
    """Turn any exception (and ``sys.exit``) from the block but ``keep`` into one ``error`` line."""
    try:
        yield
    except (KprofError, *keep):
        raise
    except (Exception, SystemExit) as exc:
        raise error(f"{what} {describe(exc)} ({where(exc)}): {fix}") from exc


def importing_users_module(what: str):
    """Importing a user's module: a SyntaxError or any exception at import is one usage line; an
    ImportError passes through, for the caller to say where the module should be."""
    return running_users_code(f"{what}: importing it", "fix the module", UserImportError, keep=(ImportError,))
