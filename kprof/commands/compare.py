"""``kprof compare``: methods timed in the same rounds of a balanced design, speedups per pair."""

from __future__ import annotations

import copy

from kprof.commands.session import MeasurementSession, refuse_invalid
from kprof.core.errors import KprofError
from kprof.measure.harness import Progress, TimedOp, stopping_rule
from kprof.measure.host_cost import host_us_per_call
from kprof.methods import get_method
from kprof.methods.validation import compare_outputs
from kprof.results.schema import Result
from kprof.results.summarise import build_result

CPU_BASELINE_SUBSTITUTE = "math"
def unique_labels(names: list[str]) -> list[str]:
    """Method specs as row labels; a repeated spec gets ``#2``, ``#3``..."""
    seen: dict[str, int] = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n}#{seen[n]}")
    return out


def check_same_copies(names: list[str], labels: list[str] | None = None) -> None:
    """Every ``=REF`` row names an earlier row's label (checked before anything is prepared)."""
    labels = labels or unique_labels(names)
    for i, name in enumerate(names):
        if name.startswith("=") and name[1:] not in labels[:i]:
            raise KprofError(f"--method {name} names no earlier row: put --method {name[1:]} (or the baseline) "
                             "before it")


def same_copy(prepared: list, labels: list[str], ref: str, label: str, role: str):
    """Row ``=REF``: the already prepared (and validated) row REF, timed again as another row. Two
    rows of one prepared copy differ only by where they sit in the rounds: an A/A check that
    separates measurement effects from placement of the method's buffers (``check_same_copies`` has
    made sure REF is an earlier row)."""
    original = prepared[labels.index(ref)]
    record = copy.deepcopy(original.record)
    record.label, record.role = label, role
    return type(original)(record, original.prepared, original.output)


def run_pairs(session: MeasurementSession, names: list[str], pairs: list[tuple[int, int]],
              progress: Progress | None = None, labels: list[str] | None = None) -> Result:
    """Prepare and validate every method, time them all in one paired run, and give the speedup
    of each ``(baseline index, candidate index)`` pair."""
    progress = progress or Progress()
    labels = labels or unique_labels(names)
    check_same_copies(names, labels)
    baselines = {b for b, _ in pairs}
    prepared = []
    for i, (name, label) in enumerate(zip(names, labels)):
        role = "baseline" if i in baselines else "candidate"
        if name.startswith("="):  # the prepared copy of an earlier row, timed again as its own row
            prepared.append(same_copy(prepared, labels[:i], name[1:], label, role))
            continue
        progress.status(f"preparing and validating {label}")
        prepared.append(session.prepare(name, label, role))
    replays = {i: labels.index(name[1:]) for i, name in enumerate(names) if name.startswith("=")}
    if not session.keep_invalid:
        refuse_invalid([pm.record for pm in prepared])
    return run_prepared(session, prepared, pairs, progress, replays)


def run_prepared(session: MeasurementSession, prepared: list, pairs: list[tuple[int, int]],
                 progress: Progress | None = None, replays: dict[int, int] | None = None) -> Result:
    """Time already prepared and validated rows in one paired run. ``replays`` maps a row to an
    earlier row whose op (and CUDA graph) it replays: a ``=LABEL`` row."""
    progress = progress or Progress()
    replays = replays or {}
    for b, c in pairs:
        out_c, out_b = prepared[c].output, prepared[b].output
        if out_c.numel() and out_c.shape == out_b.shape:
            prepared[c].record.validation.error_vs_baseline = compare_outputs(out_c, out_b.double()).rel_error
    harness = session.harness(progress, keep_on_interrupt=True)
    ops = []
    for i, pm in enumerate(prepared):
        ops.append(TimedOp(pm.record.label, ops[replays[i]].invoke) if i in replays
                   else harness.op(pm.record.label, pm.prepared.run))
    p = session.protocol
    progress.status(f"timing {len(ops)} methods in a balanced design: ({p.warmup_pairs} warm-up + {p.observations} "
                    f"timed) per method per round, {session.mode}")
    m = harness.paired(ops, stop=stopping_rule(p, pairs))
    session.collect_faults(prepared)
    # After timing and its fault count: what was timed is what was validated, and the bursts'
    # extra calls change neither.
    for pm in prepared if not m.interrupted else ():
        with session.phase("host cost"):
            pm.record.host_us = host_us_per_call(pm.prepared.run, session.target.device)
    return build_result("compare", m, [pm.record for pm in prepared], session.context(), p.interval_level, pairs,
                        session.notes)


def timed_baseline(baseline: str, on_gpu: bool) -> str:
    """The baseline a run times: on the CPU a GPU-only one becomes SDPA math."""
    return CPU_BASELINE_SUBSTITUTE if get_method(baseline).needs_cuda and not on_gpu else baseline


def baseline_for(session: MeasurementSession, baseline: str) -> tuple[str, list[str]]:
    """The baseline this session times (:func:`timed_baseline`) and a note when it was substituted."""
    timed = timed_baseline(baseline, session.target.is_gpu)
    if timed != baseline:
        return timed, [f"baseline {baseline!r} needs a GPU; substituted {timed!r} (SDPA math) on the CPU"]
    return baseline, []


def run_compare(session: MeasurementSession, baseline: str, candidates: list[str],
                progress: Progress | None = None) -> Result:
    """Candidates against one baseline (on the CPU a GPU-only baseline becomes SDPA math)."""
    if not candidates:
        raise KprofError("no candidate method: pass --method M (repeatable)")
    baseline, notes = baseline_for(session, baseline)
    names = [baseline] + list(candidates)
    labels = unique_labels(names)
    pairs = [(0, k) for k in range(1, len(names))]
    # a repeated spec, or =LABEL (the prepared copy timed again), is an A/A check: also its
    # speedup against the row it repeats
    for k, label in enumerate(labels):
        original = label[1:] if label.startswith("=") else label.split("#")[0] if "#" in label else None
        if original in labels and labels.index(original) not in (0, k):
            pairs.append((labels.index(original), k))
    result = run_pairs(session, names, pairs, progress, labels)
    result.notes = notes + result.notes
    return result
