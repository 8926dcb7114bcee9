"""Name -> Method registry. Methods register themselves with :func:`register`."""

from __future__ import annotations

import contextlib

from kprof.core.config_space import parse_overrides
from kprof.core.errors import KprofError
from kprof.methods.base import Method
from kprof.methods.revision import load_method_class, resolve

METHODS: dict[str, type[Method]] = {}
# modules that register the built-in methods; imported by name on first use, so the methods
# layer does not import the kernel families that build on it
BUILTIN = ("kprof.methods.sdpa", "kprof.kernels.dense.method", "kprof.kernels.santa.method",
           "kprof.kernels.fathom.method")
_CAPTURE: list[list[type[Method]]] = []  # open captures (a revision's adapter being imported)


def register(cls: type[Method]) -> type[Method]:
    if _CAPTURE:
        _CAPTURE[-1].append(cls)
        return cls
    if cls.name in METHODS:
        raise ValueError(f"method {cls.name!r} registered twice")
    METHODS[cls.name] = cls
    return cls


@contextlib.contextmanager
def capturing():
    """Collect the classes that ``register`` sees instead of registering them (a method at an
    older revision carries the same name as today's)."""
    found: list[type[Method]] = []
    _CAPTURE.append(found)
    try:
        yield found
    finally:
        _CAPTURE.pop()


def load_builtins() -> None:
    import importlib

    for module in BUILTIN:
        importlib.import_module(module)


def registered() -> dict[str, type[Method]]:
    """Every method kprof knows: built-ins, then the modules named in ``$KPROF_PLUGINS``."""
    load_builtins()
    load_plugins()
    return dict(METHODS)


def load_plugins() -> None:
    """Import the modules named in ``$KPROF_PLUGINS`` (comma-separated): they register methods.

    Tuning workers are separate processes, so a user's own methods reach them this way.
    """
    import importlib
    import os

    for module in filter(None, (m.strip() for m in os.environ.get("KPROF_PLUGINS", "").split(","))):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise KprofError(f"KPROF_PLUGINS names {module!r}, which cannot be imported ({exc}): fix the name or "
                             "PYTHONPATH") from None


def parse_method_spec(spec: str) -> tuple[str, dict[str, str]]:
    """``"santa:p=16,r=4"`` -> ``("santa", {"p": "16", "r": "4"})``; ``"santa@HEAD~1:p=16"`` keeps
    ``"santa@HEAD~1"`` as the name."""
    name, _, rest = spec.partition(":")
    options = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise KprofError(f"bad method option {item!r} in {spec!r}: write NAME:key=value,key=value")
        options[key.strip()] = value.strip()
    return name, options


def get_method(spec: str) -> Method:
    """A Method from ``name`` or ``name:key=value,...``.

    Keys with a dot (``attend.NUM_SPLITS=64``) are launch parameters; the others go to the
    method's own options (e.g. SANTA++'s P, R, S).
    """
    name, options = parse_method_spec(spec)
    name, at, rev = name.partition("@")
    load_builtins()
    if name not in METHODS:
        load_plugins()
    try:
        cls = METHODS[name]
    except KeyError:
        raise KprofError(f"unknown method {name!r}: choose one of {', '.join(sorted(METHODS))}") from None
    if at:
        if not rev:
            raise KprofError(f"method spec {spec!r} names no revision after '@': write NAME@REV, e.g. {name}@HEAD~1")
        cls = _at_revision(name, cls, rev)
    launch = {k: v for k, v in options.items() if "." in k}
    method = cls.from_options({k: v for k, v in options.items() if "." not in k})
    method.launch_overrides = parse_overrides([f"{k}={v}" for k, v in launch.items()])
    return method


_AT_REVISION: dict[tuple[str, str], type[Method]] = {}  # (name, commit) -> loaded class (a registry)


def _at_revision(name: str, cls: type[Method], rev: str) -> type[Method]:
    sha = resolve(rev)
    if (name, sha) not in _AT_REVISION:
        _AT_REVISION[(name, sha)] = load_method_class(name, cls, sha, capturing)
    return _AT_REVISION[(name, sha)]
