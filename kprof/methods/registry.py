"""Name -> Method registry. Methods register themselves with :func:`register`."""

from __future__ import annotations

from kprof.config_space import parse_overrides
from kprof.errors import KprofError
from kprof.methods.base import Method

METHODS: dict[str, type[Method]] = {}


def register(cls: type[Method]) -> type[Method]:
    if cls.name in METHODS:
        raise ValueError(f"method {cls.name!r} registered twice")
    METHODS[cls.name] = cls
    return cls


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
    """``"santa:p=16,r=4"`` -> ``("santa", {"p": "16", "r": "4"})``."""
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
    if name not in METHODS:
        load_plugins()
    try:
        cls = METHODS[name]
    except KeyError:
        raise KprofError(f"unknown method {name!r}: choose one of {', '.join(sorted(METHODS))}") from None
    launch = {k: v for k, v in options.items() if "." in k}
    method = cls.from_options({k: v for k, v in options.items() if "." not in k})
    method.launch_overrides = parse_overrides([f"{k}={v}" for k, v in launch.items()])
    return method
