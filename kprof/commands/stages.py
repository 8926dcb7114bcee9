"""``kprof stages``: isolated per-launch timings plus a direct complete-operator measurement, or
(``chain``) the chain's prefixes, whose differences are each launch's marginal cost in the chain."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from kprof.commands import preflight
from kprof.commands.session import MeasurementSession
from kprof.core.config_space import parse_overrides
from kprof.core.target import resolve_target
from kprof.measure.harness import Progress, TimedOp
from kprof.results.schema import Result
from kprof.results.summarise import build_result

COMPLETE = "complete operator"
NOT_ADDITIVE = ("stage times are measured with upstream eviction and their own timing boundaries: "
                "they are not additive and do not sum to the complete operator")


CHAIN_NOTE = ("chain prefixes: each row times launches 1..k from a cold cache; the difference to the "
              "row above is that launch's marginal cost inside the running chain (the rows add up)")


def prefix_label(names: list[str], k: int) -> str:
    return names[0] if k == 0 else f"{names[0]} .. {names[k]}"


def _run_prefix(launches, k: int) -> None:
    for launch in launches[: k + 1]:
        launch()


def run_chain(session: MeasurementSession, pm, progress: Progress) -> Result:
    names = [s.name for s in pm.prepared.stages]
    launches = [s.launch for s in pm.prepared.stages]
    harness = session.harness(progress)
    prefixes = [harness.op(prefix_label(names, k), functools.partial(_run_prefix, launches, k))
                for k in range(len(names))]
    p = session.protocol
    progress.status(f"timing {len(prefixes)} chain prefixes: {p.stage_observations} each per round, {session.mode}")
    m = harness.chain(prefixes)
    session.collect_faults([pm])
    return build_result("chain", m, [pm.record], session.context(), p.interval_level,
                        notes=session.notes + [CHAIN_NOTE])


def run_stages(session: MeasurementSession, method: str, progress: Progress | None = None, overrides=None,
               chain: bool = False) -> Result:
    progress = progress or Progress()
    progress.status(f"preparing and validating {method}")
    pm = session.prepare(method, method, "subject", overrides)
    if chain:
        return run_chain(session, pm, progress)
    harness = session.harness(progress)
    stages = [TimedOp(s.name, s.launch) for s in pm.prepared.stages]
    complete = harness.op(COMPLETE, pm.prepared.run)
    p = session.protocol
    progress.status(f"timing {len(stages)} stages + complete operator: {p.stage_observations} each per round, "
                    f"{session.mode}")
    m = harness.stages(stages, complete)
    session.collect_faults([pm])
    return build_result("stages", m, [pm.record], session.context(), p.interval_level,
                        notes=session.notes + [NOT_ADDITIVE])


@dataclass
class StagesRequest:
    """A checked ``kprof stages``: one method's launches on one workload."""

    method: str
    launch_overrides: dict | None
    workload: str | None
    device: str
    overrides: dict
    config_mode: str = "auto"
    chain: bool = False


def stages_request(method: str, settings: list[str], workload: str | None, device: str, overrides: dict,
                   config_mode: str = "auto", chain: bool = False, out: str | None = None,
                   force: bool = False) -> StagesRequest:
    """The method, its ``--set LAUNCH.PARAM=V`` settings, the workload, protocol and output path
    checked before anything loads (UsageError, exit 2)."""
    from kprof.commands.report import check_destination

    check_destination(out, force)
    launch_overrides = parse_overrides(settings) or None
    preflight.check_methods([method], launch_overrides)
    preflight.check_config(config_mode, [method])
    preflight.check_workloads([workload])
    preflight.check_protocol(resolve_target(device).is_gpu, overrides)
    return StagesRequest(method, launch_overrides, workload, device, overrides, config_mode, chain)


def run_stages_request(req: StagesRequest, progress: Progress | None = None) -> Result:
    session = MeasurementSession.open(req.device, req.workload, req.overrides,
                                      progress.status if progress else (lambda s: None), req.config_mode)
    return run_stages(session, req.method, progress, req.launch_overrides, chain=req.chain)
