"""``kprof stages``: isolated per-launch timings plus a direct complete-operator measurement, or
(``chain``) the chain's prefixes, whose differences are each launch's marginal cost in the chain."""

from __future__ import annotations

import functools

from kprof.commands.session import MeasurementSession
from kprof.measure.harness import Progress, TimedOp
from kprof.results.result import Result

COMPLETE = "complete operator"
NOT_ADDITIVE = ("stage medians are measured with upstream eviction and their own timing boundaries: "
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
    return session.result("chain", [pm.record], m, session.notes + [CHAIN_NOTE])


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
    return session.result("stages", [pm.record], m, session.notes + [NOT_ADDITIVE])
