"""``kprof compare``: candidates against a baseline under the paired-round protocol."""

from __future__ import annotations

import numpy as np

from kprof.errors import KprofError
from kprof.methods import get_method
from kprof.progress import Progress
from kprof.results import Result, Speedup
from kprof.runner import PairedRoundRunner, goes_before
from kprof.session import MeasurementSession
from kprof.stats import paired_bootstrap, start_order_effect
from kprof.validation import compare_outputs

CPU_BASELINE_SUBSTITUTE = "math"
ORDER_EFFECT_NOTE = 0.01  # report an invoking-order effect above 1%


def _labels(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n}#{seen[n]}")
    return out


def run_compare(session: MeasurementSession, baseline: str, candidates: list[str],
                progress: Progress | None = None) -> Result:
    progress = progress or Progress()
    if not candidates:
        raise KprofError("no candidate method: pass --method M (repeatable)")
    notes: list[str] = []  # compare's own; the session's (CPU default, tuned configs) are added at the end
    if get_method(baseline).needs_cuda and not session.target.is_gpu:
        notes.append(f"baseline {baseline!r} needs a GPU; substituted {CPU_BASELINE_SUBSTITUTE!r} (SDPA math) on the CPU")
        baseline = CPU_BASELINE_SUBSTITUTE
    names = [baseline] + list(candidates)
    labels = _labels(names)
    prepared = []
    for i, (name, label) in enumerate(zip(names, labels)):
        progress.status(f"preparing and validating {label}")
        prepared.append(session.prepare(name, label, "baseline" if i == 0 else "candidate"))
    base_out = prepared[0].output
    for pm in prepared[1:]:
        pm.record.validation.error_vs_baseline = compare_outputs(pm.output, base_out.double()).rel_error

    ops = [session.timed_op(pm.record.label, pm.prepared.run) for pm in prepared]
    p = session.protocol
    progress.status(f"timing: {p.rounds} rounds x ({p.warmup_pairs} warm-up + {p.observations} timed) per method, {session.mode}")
    eviction = session.eviction()
    with session.telemetry() as telemetry:
        runner = PairedRoundRunner(p, session.clock(), eviction, telemetry, progress.round_done)
        progress.start_rounds(p.rounds)
        obs = runner.run(ops)
    session.collect_faults(prepared)
    if eviction is not None and eviction.nbytes < eviction.requested_bytes:
        notes.append(f"eviction buffer reduced to {eviction.mib:.0f} MiB (low memory)")
    observations = {op.label: obs[i] for i, op in enumerate(ops)}
    shifts = np.broadcast_to(np.arange(p.rounds)[:, None], (p.rounds, p.observations))  # round r starts with op r % n
    speedups = []
    for k, label in enumerate(labels[1:], start=1):
        base_obs, cand_obs = observations[labels[0]], observations[label]
        effect = start_order_effect(base_obs, cand_obs, goes_before(len(ops), shifts, 0, k))
        speedups.append(Speedup(
            candidate=label, baseline=labels[0],
            interval=paired_bootstrap(base_obs, cand_obs, p.bootstrap_resamples, p.level, p.seed),
            start_order_effect=effect))
        if abs(effect) > ORDER_EFFECT_NOTE:
            notes.append(f"{label}: invoking order matters ({100 * effect:+.1f}% in the ratio when {labels[0]} goes "
                         "first); alternation cancels it in the estimate but it widens the interval "
                         "(an eager-launch artifact seen on the H200; see README, 'Known artifact')")
    return session.result("compare", [pm.record for pm in prepared], observations, telemetry.report(),
                          session.notes + notes, speedups)
