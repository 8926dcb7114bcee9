"""Search strategies of ``kprof tune --strategy NAME``: one module each, named as the option.

Each module holds one entry point, ``tune(job: LaunchJob) -> LaunchOutcome``: it chooses what to
screen of ``job``'s space and screens it, then confirms finalists (the shared steps are
:mod:`kprof.tuning.launch_job`). It also says with ``SAMPLES`` whether its screening order is a
seeded sample of the space, which is what ``kprof.tune``'s in-process tuner screens under its
name. A strategy is added by adding its module here; nothing else names it.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from kprof.core.errors import KprofError

STRATEGIES: tuple[str, ...] = tuple(sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.ispkg))


def strategy(name: str) -> ModuleType:
    """The module of strategy ``name`` (imported on use: optuna's needs Optuna)."""
    if name not in STRATEGIES:
        raise KprofError(f"unknown strategy {name!r}: use {', '.join(STRATEGIES)}")
    return importlib.import_module(f"{__name__}.{name}")
