"""The built-in methods as ``kprof methods`` lists them, kept in ``builtin.json`` beside this module
so that listing them loads neither torch nor Triton (their adapters import both).

``tests/methods/test_catalogue.py`` fails when the file and the code disagree;
``python -m kprof.methods.catalogue`` writes it again from the code.
"""

from __future__ import annotations

import json
import os
from importlib.metadata import entry_points
from pathlib import Path

PATH = Path(__file__).with_name("builtin.json")
ENTRY_POINT_GROUP = "kprof.methods"  # kprof.methods.registry's, named here so that this module imports no torch


def card(name: str, cls) -> dict:
    """One method as listed: where it lives, what it is, its options, its launches and their parameters."""
    m = cls()
    return {"name": name, "module": cls.__module__, "summary": m.summary, "needs_cuda": m.needs_cuda,
            "options": dict(cls.options),
            "launches": {launch: {p.name: {"values": list(p.values), "default": p.default} for p in space.params}
                         for launch, space in m.config_space().items()}}


def live() -> list[dict]:
    """The built-in methods' cards from their code (imports every adapter)."""
    from kprof.methods.registry import BUILTIN, METHODS, load_builtins

    load_builtins()
    return [card(name, METHODS[name]) for name in sorted(METHODS) if METHODS[name].__module__ in BUILTIN]


def stored() -> list[dict]:
    return json.loads(PATH.read_text())


def plugins_present() -> bool:
    """Whether methods beyond the built-ins may be registered (entry points, ``$KPROF_PLUGINS``)."""
    return bool(os.environ.get("KPROF_PLUGINS", "").strip()) or bool(list(entry_points(group=ENTRY_POINT_GROUP)))


if __name__ == "__main__":
    PATH.write_text(json.dumps(live(), indent=1) + "\n")
    print(f"wrote {PATH}")
