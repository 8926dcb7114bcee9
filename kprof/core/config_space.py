"""Tunable launch parameters, declared by each kernel next to its code.

A method's configuration is ``{launch name: {parameter: value}}``. Each launch declares a
:class:`LaunchSpace`: the parameters with their candidate values and default, plus constraints
that depend on the workload shape. The tuner enumerates spaces; it never hard-codes them.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Callable, Iterator, Mapping

from kprof.core.errors import ConfigError

# constraints read a workload's shape (kprof.workloads.WorkloadShape: hq, hkv, n, d, dtype); typed
# loosely so that this core module imports nothing above it
WorkloadShape = object

LaunchConfig = dict[str, int]
MethodConfig = dict[str, LaunchConfig]


@dataclass(frozen=True)
class Param:
    """One launch parameter: its candidate values and the default used untuned."""

    name: str
    values: tuple[int, ...]
    default: int
    doc: str = ""

    def __post_init__(self) -> None:
        if self.default not in self.values:
            raise ValueError(f"default {self.default} of {self.name} is not among its values {self.values}")


@dataclass(frozen=True)
class Constraint:
    """A predicate over (config, shape) with a human-readable description for rejections."""

    description: str
    holds: Callable[[Mapping[str, int], WorkloadShape], bool]


@dataclass(frozen=True)
class LaunchSpace:
    """The config space of one Triton launch."""

    launch: str
    params: tuple[Param, ...]
    constraints: tuple[Constraint, ...] = field(default=())

    def default(self) -> LaunchConfig:
        return {p.name: p.default for p in self.params}

    def violations(self, config: Mapping[str, int], shape: WorkloadShape) -> list[str]:
        return [c.description for c in self.constraints if not c.holds(config, shape)]

    def candidates(self, shape: WorkloadShape) -> Iterator[LaunchConfig]:
        """Every combination of parameter values that satisfies the constraints for ``shape``."""
        names = [p.name for p in self.params]
        for values in itertools.product(*(p.values for p in self.params)):
            cfg = dict(zip(names, values))
            if not self.violations(cfg, shape):
                yield cfg

    def check(self, overrides: Mapping[str, int] | None) -> None:
        """Unknown parameter names and values outside the declared ones raise (no shape needed)."""
        known = {p.name: p for p in self.params}
        for key, value in (overrides or {}).items():
            if key not in known:
                raise ConfigError(
                    f"launch {self.launch!r} has no parameter {key!r}: known are {', '.join(known)}"
                )
            if value not in known[key].values:
                raise ConfigError(
                    f"{self.launch}.{key}={value} is not allowed: choose from {list(known[key].values)}"
                )

    def resolve(self, overrides: Mapping[str, int] | None, shape: WorkloadShape) -> LaunchConfig:
        """Default config updated with ``overrides``; unknown keys and values, and violations, raise."""
        self.check(overrides)
        cfg = self.default() | {k: int(v) for k, v in (overrides or {}).items()}
        bad = self.violations(cfg, shape)
        if bad:
            raise ConfigError(f"{self.launch} config {cfg} is invalid for {shape}: {'; '.join(bad)}")
        return cfg


def check_overrides(spaces: Mapping[str, LaunchSpace], overrides: Mapping[str, Mapping[str, int]] | None) -> None:
    """Overrides name declared launches, parameters and values (the shape's constraints aside)."""
    overrides = dict(overrides or {})
    unknown = set(overrides) - set(spaces)
    if unknown:
        raise ConfigError(
            f"unknown launch(es) {', '.join(sorted(unknown))}: "
            f"this method has {', '.join(spaces) or 'no tunable launches'}"
        )
    for name, params in overrides.items():
        spaces[name].check(params)


def resolve_method_config(
    spaces: Mapping[str, LaunchSpace], overrides: Mapping[str, Mapping[str, int]] | None, shape: WorkloadShape
) -> MethodConfig:
    """Full per-launch config from declared spaces and (possibly partial) user overrides."""
    check_overrides(spaces, overrides)
    overrides = dict(overrides or {})
    return {name: space.resolve(overrides.get(name), shape) for name, space in spaces.items()}


def parse_overrides(items: tuple[str, ...] | list[str]) -> dict[str, dict[str, int]]:
    """Parse ``launch.PARAM=value`` strings (the CLI's ``--set``) into a nested override dict."""
    out: dict[str, dict[str, int]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        launch, dot, param = key.partition(".")
        if not sep or not dot or not launch or not param:
            raise ConfigError(f"bad override {item!r}: write it as LAUNCH.PARAM=VALUE, e.g. partial.BLOCK_N=64")
        try:
            out.setdefault(launch, {})[param] = int(value)
        except ValueError:
            raise ConfigError(f"bad override {item!r}: the value must be an integer") from None
    return out
