"""Name -> Method registry. Methods register themselves with :func:`register`."""

from __future__ import annotations

from kprof.errors import KprofError
from kprof.methods.base import Method

METHODS: dict[str, type[Method]] = {}


def register(cls: type[Method]) -> type[Method]:
    if cls.name in METHODS:
        raise ValueError(f"method {cls.name!r} registered twice")
    METHODS[cls.name] = cls
    return cls


def get_method(name: str) -> Method:
    try:
        return METHODS[name]()
    except KeyError:
        raise KprofError(f"unknown method {name!r}: choose one of {', '.join(sorted(METHODS))}") from None
