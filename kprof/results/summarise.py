"""A Measurement becomes a Result here, and only here: every row's latency interval, noise and
drift, every pair's speedup interval, and the notes they call for, computed once from the run's
round table."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from kprof.measure.stats import (
    SPEEDUP,
    RoundTable,
    clean,
    drift,
    log_interval,
    method_latency,
    pair_values,
    position_effect,
    round_noise,
    round_table,
)
from kprof.results.schema import MethodRecord, Result, Speedup, Summary

if TYPE_CHECKING:
    from kprof.measure.harness import Measurement

POSITION_NOTE = 0.01  # name a position effect above 1%


@dataclass
class RunContext:
    """What a Result says about where and how it was measured; the measuring session supplies it."""

    environment: dict
    workload: dict
    protocol: dict
    clock: str
    mode: str
    kprof_version: str = ""
    git_revision: str | None = None
    phases_s: dict[str, float] = field(default_factory=dict)  # wall seconds of the setup phases


def summarise_row(observations: np.ndarray, level: float = 0.95, table: RoundTable | None = None, row: int = 0,
                  cycle: int = 1) -> Summary:
    """The summary of one row's raw observations ``[rounds, observations]``: row ``row`` of ``table``
    when the run's round table is given, whose design cycles are ``cycle`` rounds."""
    _, bad = clean(observations)
    table = table or round_table([observations])
    summaries = np.exp(table.log_summaries[row])
    valid = summaries[np.isfinite(summaries)]
    noise = round_noise(observations)
    noise = noise[np.isfinite(noise)]
    return Summary(
        median_us=method_latency(table, row, cycle, level),
        round_median_min_us=float(valid.min()) if valid.size else float("nan"),
        round_median_max_us=float(valid.max()) if valid.size else float("nan"),
        noise=float(np.median(noise)) if noise.size else float("nan"),
        drift=drift(summaries),
        round_summaries_us=[float(m) if np.isfinite(m) else None for m in summaries],
        observations=int(np.asarray(observations).size),
        bad_observations=bad,
        bad_rounds=[int(r) for r in np.flatnonzero(table.bad[row] & np.isfinite(table.log_summaries[row]))],
    )


def pair_speedup(m: Measurement, baseline: int, candidate: int, level: float) -> Speedup:
    """Speedup of row ``candidate`` over row ``baseline`` from one paired measurement."""
    values, left_out = pair_values(m.table, m.orders, baseline, candidate, m.cycle)
    return Speedup(candidate=m.labels[candidate], baseline=m.labels[baseline],
                   interval=log_interval(values, level, SPEEDUP, left_out),
                   position_effect=position_effect(m.table, m.orders, baseline, candidate),
                   cycle_log_ratios=[float(v) for v in values])


def build_result(kind: str, measurement: Measurement, methods: list[MethodRecord], context: RunContext,
                 level: float, pairs: list[tuple[int, int]] = (), notes: list[str] = ()) -> Result:
    """The Result of one run: ``kind`` "compare" (with the speedup of each ``(baseline, candidate)``
    row pair), "stages" or "chain"."""
    m = measurement
    observations = m.rows()
    square = len(m.labels) if m.orders else 1  # rounds in which every row held every position
    summaries = {label: summarise_row(o, level, m.table, i, square)
                 for i, (label, o) in enumerate(observations.items())}
    speedups = [pair_speedup(m, b, c, level) for b, c in pairs]
    return Result(
        kind=kind, environment=context.environment, workload=context.workload,
        protocol=context.protocol | {"rounds": m.observations.shape[1]}, clock=context.clock, mode=context.mode,
        methods=methods, summaries=summaries, speedups=speedups, design=_design(m),
        telemetry=m.telemetry.to_dict() if m.telemetry is not None else {},
        notes=list(notes) + _notes(m, summaries, speedups),
        kprof_version=context.kprof_version, git_revision=context.git_revision, observations=observations,
        phases_s={k: round(v, 3) for k, v in context.phases_s.items()} | {"timing": round(m.wall_s, 3)},
        partial=f"stopped by Ctrl-C after {m.observations.shape[1]} round(s)" if m.interrupted else None,
    )


def _design(m: Measurement) -> dict:
    """The paired design the rounds followed, and the looks of its stopping rule (the precision
    stop, or the cycles added for bad rounds) with the rule's name."""
    design = {}
    if m.orders:
        design = {"kind": "williams", "cycle": m.cycle, "orders": [[m.labels[i] for i in order] for order in m.orders]}
    if m.looks:
        design["looks"] = [asdict(look) for look in m.looks]
        design["stop_rule"] = m.rule
    return design


ROUNDS_NAMED = 12  # a note names at most this many rounds; the Result's list holds them all


def _round_numbers(indices: list[int]) -> str:
    """Rounds as progress and plots count them, from 1 (the Result's lists hold indices from 0)."""
    named = ", ".join(str(i + 1) for i in indices[:ROUNDS_NAMED])
    return named + (f" and {len(indices) - ROUNDS_NAMED} more" if len(indices) > ROUNDS_NAMED else "")


def _notes(m: Measurement, summaries: dict[str, Summary], speedups: list[Speedup]) -> list[str]:
    """What a reader of the numbers should know: position effects, drift, bad rounds and values."""
    notes = [f"{sp.candidate}: the order within a round moves its ratio to {sp.baseline} by "
             f"{100 * sp.position_effect:+.1f}%; the balanced design cancels that in the estimate"
             for sp in speedups if abs(sp.position_effect) > POSITION_NOTE]
    notes += m.notes
    notes += [f"{label}: {s.drift.note} (a trend, not a bad round: these rounds stay in its intervals)"
              for label, s in summaries.items() if s.drift.flagged]
    notes += [f"{label}: {s.bad_observations} of {s.observations} observations were not finite or not positive "
              "and were left out" for label, s in summaries.items() if s.bad_observations]
    rounds = m.observations.shape[1]
    notes += [f"{label}: round{'s' * (len(s.bad_rounds) > 1)} {_round_numbers(s.bad_rounds)} of {rounds} left out "
              "of its intervals (far from its neighbouring rounds, or throttled)"
              for label, s in summaries.items() if s.bad_rounds]
    if m.telemetry is not None and m.telemetry.throttled_rounds:
        notes.append(f"throttled: round{'s' * (len(m.telemetry.throttled_rounds) > 1)} "
                     f"{_round_numbers(m.telemetry.throttled_rounds)} of {rounds}")
    return notes
