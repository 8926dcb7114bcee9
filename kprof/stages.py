"""``kprof stages``: isolated per-launch timings plus a direct complete-operator measurement."""

from __future__ import annotations

from kprof.progress import Progress
from kprof.results import Result
from kprof.runner import StageRunner, TimedOp
from kprof.session import MeasurementSession

COMPLETE = "complete operator"
NOT_ADDITIVE = ("stage medians are measured with upstream eviction and their own timing boundaries: "
                "they are not additive and do not sum to the complete operator")


def run_stages(session: MeasurementSession, method: str, progress: Progress | None = None, overrides=None) -> Result:
    progress = progress or Progress()
    progress.status(f"preparing and validating {method}")
    pm = session.prepare(method, method, "subject", overrides)
    stages = [TimedOp(s.name, s.launch) for s in pm.prepared.stages]
    complete = session.timed_op(COMPLETE, pm.prepared.run)
    p = session.protocol
    progress.status(f"timing {len(stages)} stages + complete operator: {p.rounds} rounds x {p.stage_observations} each, {session.mode}")
    with session.telemetry() as telemetry:
        runner = StageRunner(p, session.clock(), session.eviction(), telemetry, progress.round_done)
        progress.start_rounds(p.rounds)
        obs = runner.run(stages, complete)
    labels = [s.label for s in stages] + [COMPLETE]
    observations = {label: obs[i] for i, label in enumerate(labels)}
    return session.result("stages", [pm.record], observations, telemetry.report(), session.notes + [NOT_ADDITIVE])
