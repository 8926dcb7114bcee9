"""Sweeps: one comparison over several workloads and over values of a method option, one Result.

Each workload is its own paired run (every row of that run shares the workload's tensors and
its balanced design); the runs are then joined into one Result whose rows carry the workload
they ran on, so one table and one file hold the whole grid. A ``--vary`` value becomes one more
row of every run, so the variants of a method are paired with the baseline like any candidate.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Callable

from kprof.commands.compare import baseline_for, run_compare
from kprof.commands.session import MeasurementSession
from kprof.core.errors import KprofError, MethodUnavailable
from kprof.measure.harness import Progress
from kprof.methods import get_method
from kprof.results.result import Result, Speedup


def expand_vary(text: str) -> list[str]:
    """``"santa:s=32,64"`` -> ``["santa:s=32", "santa:s=64"]``: the part after the last ``:`` is
    ``KEY=V1,V2,...``; everything before it is the method spec the values are added to."""
    base, sep, varied = text.rpartition(":")
    key, eq, values = varied.partition("=")
    items = [v.strip() for v in values.split(",") if v.strip()]
    if not sep or not base or not eq or not key.strip() or not items:
        raise KprofError(f"--vary {text!r}: write SPEC:KEY=V1,V2,... (for example santa:s=32,64,124 or "
                         "santa:attend.NUM_SPLITS=16,32)")
    joiner = "," if _has_options(base) else ":"
    return [f"{base}{joiner}{key.strip()}={v}" for v in items]


def _has_options(spec: str) -> bool:
    """Whether a method spec already carries options (``NAME:k=v`` or ``MODULE:NAME:k=v``)."""
    return "=" in spec


def with_variants(candidates: list[str], vary: list[str]) -> list[str]:
    """The candidate rows: the given specs, then every ``--vary`` value, each once, in order."""
    rows = list(candidates)
    for text in vary:
        rows += [v for v in expand_vary(text) if v not in rows]
    return rows


def run_sweep(open_session: Callable[[str | None], MeasurementSession], workloads: list[str | None],
              baseline: str, candidates: list[str], progress: Progress | None = None) -> Result:
    """Compare ``candidates`` with ``baseline`` on each workload, one paired run each; one Result.

    Every workload is loaded and every method checked on each before anything is timed, so a
    method that cannot run on one of them stops the sweep at once, not after the others' runs."""
    progress = progress or Progress()
    if len(set(workloads)) != len(workloads):
        raise KprofError(f"--workload names one workload twice ({', '.join(map(str, workloads))}): pass each once")
    if len(workloads) == 1:
        return run_compare(open_session(workloads[0]), baseline, candidates, progress)
    sessions = []
    for i, name in enumerate(workloads):
        progress.status(f"workload {i + 1}/{len(workloads)}: loading {name}")
        sessions.append(open_session(name))
    tags = workload_tags(sessions)
    check_every_pair(sessions, tags, baseline, candidates)
    runs = []
    for i, session in enumerate(sessions):
        progress.status(f"workload {i + 1}/{len(sessions)}: {tags[i]}")
        runs.append(run_compare(session, baseline, candidates, progress))
    return join_runs(runs, tags)


def workload_tags(sessions: list[MeasurementSession]) -> list[str]:
    """A unique tag per workload for row labels: its name, with a short content hash where two
    different workloads share a name; the same content twice is refused."""
    hashes = [s.workload.content_hash() for s in sessions]
    names = [s.workload.name for s in sessions]
    if len(set(hashes)) != len(hashes):
        twice = [n for n, h in zip(names, hashes) if hashes.count(h) > 1]
        raise KprofError(f"--workload names the same workload content twice ({', '.join(twice)}): pass each once")
    return [f"{n}-{h[:8]}" if names.count(n) > 1 else n for n, h in zip(names, hashes)]


def check_every_pair(sessions: list[MeasurementSession], tags: list[str], baseline: str,
                     candidates: list[str]) -> None:
    """Raise, before any timing, if a method cannot run on one of the workloads."""
    problems = []
    for session, tag in zip(sessions, tags):
        for spec in [baseline_for(session, baseline)[0], *candidates]:
            if spec.startswith("="):
                continue
            try:
                get_method(spec).check_available(session.workload, session.target)
            except MethodUnavailable as exc:
                problems.append(f"{spec} on {tag}: {exc}")
    if problems:
        raise KprofError(f"not every method runs on every workload ({'; '.join(problems)}): drop that method or "
                         "that workload from the sweep")


def join_runs(runs: list[Result], tags: list[str]) -> Result:
    """Paired runs of the same rows on different workloads as one Result: row ``L @ W`` is row
    ``L`` of the run on workload ``W`` (``tags``); speedups stay within their run."""
    first = runs[0]

    def at(label: str, w: str) -> str:
        return f"{label} @ {w}"

    methods, summaries, speedups, observations = [], {}, [], {}
    for run, w in zip(runs, tags):
        for rec in run.methods:
            methods.append(replace(rec, label=at(rec.label, w), workload=w))
        summaries |= {at(k, w): v for k, v in run.summaries.items()}
        observations |= {at(k, w): v for k, v in run.observations.items()}
        speedups += [Speedup(at(s.candidate, w), at(s.baseline, w), s.interval, s.position_effect, s.cycle_log_ratios)
                     for s in run.speedups]
    shared = [n for n in dict.fromkeys(first.notes) if all(n in r.notes for r in runs)]
    notes = shared + [f"{w}: {n}" for r, w in zip(runs, tags) for n in r.notes if n not in shared]
    content = hashlib.sha256("".join(str(r.workload.get("content_hash")) for r in runs).encode()).hexdigest()[:16]
    return Result(
        kind=first.kind, environment=first.environment,
        workload={"name": " + ".join(tags), "content_hash": content, "shape": None, "metadata": {},
                  "points": [r.workload | {"name": tag} for r, tag in zip(runs, tags)]},
        protocol=first.protocol, clock=first.clock, mode=first.mode, methods=methods, summaries=summaries,
        speedups=speedups, design={"kind": "one paired run per workload",
                                   "runs": [{"workload": w, **r.design} for r, w in zip(runs, tags)]},
        telemetry={"runs": [{"workload": w, **r.telemetry} for r, w in zip(runs, tags)]},
        notes=notes, kprof_version=first.kprof_version, git_revision=first.git_revision,
        observations=observations,
    )

