"""``kprof stages``: isolated per-launch timings plus a direct complete-operator measurement."""

from __future__ import annotations

from kprof.progress import Progress
from kprof.results import Result
from kprof.runner import StageRunner, TimedOp
from kprof.session import MeasurementSession
from kprof.summarize import summarize

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
    tele = telemetry.report()
    notes = list(session.notes) + [NOT_ADDITIVE]
    if tele.throttled_rounds:
        notes.append(f"throttled rounds: {tele.throttled_rounds}")
    return Result(
        kind="stages",
        environment=session.environment.to_dict(),
        workload=session.workload_doc(),
        protocol=p.to_dict(),
        clock=session.clock().name,
        mode=session.mode,
        methods=[pm.record],
        summaries={label: summarize(o, p) for label, o in observations.items()},
        telemetry=tele.to_dict(),
        notes=notes,
        kprof_version=session.environment.kprof,
        git_revision=session.environment.git_revision,
        observations=observations,
    )
