"""``kprof methods``, ``check`` and ``validate`` as use cases: what can be timed, and whether a
method's output is right (poisoned output, fp64 reference, launch catalog)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kprof.commands import preflight
from kprof.core.config_space import parse_overrides


@dataclass
class MethodCard:
    """One registered method as ``kprof methods`` lists it."""

    name: str
    module: str
    origin: str
    summary: str
    needs_cuda: bool
    launches: dict[str, dict[str, dict]]  # launch -> parameter -> {"values", "default"}
    source_hash: str | None = None  # asked for: it needs the kernels' code, so torch and Triton
    options: dict[str, str] = field(default_factory=dict)  # name:key=value options -> "values: meaning"

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def cards(source_hash: bool = False) -> list[MethodCard]:
    """Every registered method (built-in, entry points, KPROF_PLUGINS), sorted by name. Without
    plugins and without ``source_hash`` the built-ins' stored listing answers, loading no torch."""
    from kprof.methods.catalogue import plugins_present, stored

    if not source_hash and not plugins_present():
        return [MethodCard(c["name"], c["module"], "built-in", c["summary"], c["needs_cuda"], c["launches"],
                           options=c.get("options", {})) for c in stored()]
    from kprof.methods import registered
    from kprof.methods.registry import origin
    from kprof.tuning.source_key import source_hash as hash_of

    out = []
    for name, cls in sorted(registered().items()):
        m = cls()
        launches = {launch: {p.name: {"values": list(p.values), "default": p.default} for p in space.params}
                    for launch, space in m.config_space().items()}
        out.append(MethodCard(name, cls.__module__, origin(name), m.summary, m.needs_cuda, launches,
                              hash_of(m) if source_hash else None, dict(cls.options)))
    return out


@dataclass
class Check:
    """One validation run of a method: its record (validation, catalog, faults) and where it ran."""

    spec: str
    workload: str
    shape: str
    target_label: str
    on_gpu: bool
    record: object  # MethodRecord

    @property
    def passed(self) -> bool:
        v, c = self.record.validation, self.record.catalog
        return v.passed and c.matches_expected is not False and not self.record.faults


def check(method: str, workload: str | None, device: str, settings: list[str] = ()) -> Check:
    """``method`` run once, with ``--set`` launch settings, against its fp64 reference."""
    from kprof.commands.session import MeasurementSession

    launch_overrides = parse_overrides(settings)
    preflight.check_methods([method], launch_overrides)
    preflight.check_workloads([workload])
    session = MeasurementSession.open(device, workload, {})
    pm = session.prepare(method, method, "subject", launch_overrides)
    return Check(method, session.workload.name, str(session.workload.shape), session.target.label,
                 session.target.is_gpu, pm.record)


def validate(method: str, workload: str | None, device: str, realisations: int = 3) -> list[Check]:
    """As ``kprof compare`` validates before timing, over ``realisations`` noise seeds of a
    sampling method (one run otherwise)."""
    from kprof.commands.session import MeasurementSession
    from kprof.methods import get_method

    preflight.check_methods([method])
    preflight.check_workloads([workload])
    session = MeasurementSession.open(device, workload, {})
    sep = "," if ":" in method else ":"
    specs = [f"{method}{sep}noise_seed={i}" for i in range(realisations)] if get_method(method).sampled else [method]
    return [Check(spec, session.workload.name, str(session.workload.shape), session.target.label,
                  session.target.is_gpu, session.prepare(spec, spec, "subject").record) for spec in specs]
