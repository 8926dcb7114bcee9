"""Sweeps: one comparison over several workloads and over values of a method option, one Result.

Each workload is its own paired run (every row of that run shares the workload's tensors and
its balanced design); the runs are then joined into one Result whose rows carry the workload
they ran on, so one table and one file hold the whole grid. A ``--vary`` value becomes one more
row of every run, so the variants of a method are paired with the baseline like any candidate.
"""

from __future__ import annotations

import hashlib
import multiprocessing as mp
from dataclasses import replace
from multiprocessing import connection as mp_connection
from typing import Callable, Sequence

from kprof.commands.compare import baseline_for, run_compare
from kprof.commands.session import KEEP_INVALID, MeasurementSession
from kprof.core import device_pinning
from kprof.core.errors import InvalidOutput, KprofError, MethodUnavailable
from kprof.core.target import cuda_available
from kprof.measure.harness import Progress
from kprof.methods import get_method
from kprof.results.schema import Result, Speedup


def expand_vary(text: str) -> list[str]:
    """``"santa:s=32,64"`` -> ``["santa:s=32", "santa:s=64"]``: the part after the last ``:`` is
    ``KEY=V1,V2,...``; everything before it is the method spec the values are added to."""
    base, sep, varied = text.rpartition(":")
    key, eq, values = varied.partition("=")
    items = [v.strip() for v in values.split(",")]
    if not sep or not base or not eq or not key.strip() or not any(items):
        raise KprofError(f"--vary {text!r}: write SPEC:KEY=V1,V2,... (for example santa:s=32,64,124 or "
                         "santa:attend.NUM_SPLITS=16,32)")
    if not all(items):
        raise KprofError(f"--vary {text!r} has an empty value (two commas, or one at an end): write each value once, "
                         "e.g. santa:s=32,64")
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
              baseline: str, candidates: list[str], progress: Progress | None = None,
              devices: Sequence[str] = (), session_args: dict | None = None) -> Result:
    """Compare ``candidates`` with ``baseline`` on each workload, one paired run each; one Result.

    Every workload is loaded and every method checked on each before anything is timed, so a
    method that cannot run on one of them stops the sweep at once, not after the others' runs.
    With ``devices`` the workloads' runs go to those GPUs at once (``session_args``: what
    :meth:`MeasurementSession.open` takes, for the worker processes)."""
    progress = progress or Progress()
    if len(set(workloads)) != len(workloads):
        raise KprofError(f"--workload names one workload twice ({', '.join(map(str, workloads))}): pass each once")
    if len(workloads) < 2:
        raise KprofError("a sweep needs two or more workloads: time one with run_compare")
    sessions = []
    for i, name in enumerate(workloads):
        progress.status(f"workload {i + 1}/{len(workloads)}: loading {name}")
        sessions.append(open_session(name))
    tags = workload_tags(sessions)
    check_every_pair(sessions, tags, baseline, candidates)
    if len(devices) > 1:
        runs = run_on_devices(devices, session_args or {}, workloads, baseline, candidates, progress)
        models = {(r.environment.get("gpu") or {}).get("name") for r in runs}
        if len(models) > 1:
            raise KprofError(f"--devices ran the workloads on different GPU models ({', '.join(map(str, models))}): "
                             "pass GPUs of one model")
        joined = join_runs(runs, tags)
        joined.notes.append(f"workloads ran at once on devices {', '.join(devices)}; each workload's rows are one "
                            "paired run on one device")
        return joined
    runs = []
    for i, session in enumerate(sessions):
        progress.status(f"workload {i + 1}/{len(sessions)}: {tags[i]}")
        try:
            runs.append(run_compare(session, baseline, candidates, progress))
        except InvalidOutput as exc:  # validation needs each workload prepared: keep the ones timed before
            if not runs:
                raise
            kept = join_runs(runs, tags[:len(runs)])
            kept.partial = f"workload {i + 1} of {len(sessions)} ({tags[i]}) failed validation"
            raise InvalidOutput(f"on workload {i + 1} of {len(sessions)} ({tags[i]}), {exc.problem}: it and the "
                                f"workloads after it were not timed; {KEEP_INVALID}", kept=kept,
                                problem=exc.problem) from None
        if runs[-1].partial:  # Ctrl-C: keep what was measured, run nothing more
            break
    joined = join_runs(runs, tags[:len(runs)])
    if runs[-1].partial:
        joined.partial = f"{runs[-1].partial} of workload {len(runs)} of {len(sessions)}"
    return joined


def run_on_devices(devices: Sequence[str], session_args: dict, workloads: list[str | None], baseline: str,
                   candidates: list[str], progress: Progress) -> list[Result]:
    """Each workload's paired run in a worker process pinned to one of ``devices`` (workloads
    dealt round-robin); the Results in workload order. A run that fails stops the sweep with its
    one line once the other devices' current runs end."""
    ctx = mp.get_context("spawn")
    pin = session_args.get("device", "auto") != "cpu" and cuda_available()
    procs, conns, assigned = [], [], {}
    for i, device in enumerate(devices):
        mine = workloads[i::len(devices)]
        if not mine:
            continue
        assigned[device] = mine
        parent, child = ctx.Pipe()
        visible = device_pinning.physical_device(device) if pin else None
        proc = ctx.Process(target=device_pinning.start, daemon=True,
                           args=(visible, f"{__name__}:compare_in_process", child, session_args, mine, baseline,
                                 candidates))
        proc.start()
        child.close()
        procs.append((device, proc))
        conns.append(parent)
    results: dict = {}
    failure = None
    open_conns = dict(zip(conns, [d for d, _ in procs]))
    try:
        while open_conns:
            for conn in mp_connection.wait(list(open_conns)):
                device = open_conns[conn]
                try:
                    kind, name, payload = conn.recv()
                except EOFError:
                    del open_conns[conn]
                    if any(name not in results for name in assigned[device]) and failure is None:
                        failure = f"the worker on device {device} ended before its runs did"
                    continue
                if kind == "status":
                    progress.status(f"device {device}: {payload}")
                elif kind == "ok":
                    results[name] = payload
                    progress.status(f"device {device}: {name} done")
                else:
                    failure = failure or f"{name} on device {device}: {payload}"
    finally:
        for _, proc in procs:
            proc.join(5)
            if proc.is_alive():
                proc.kill()
    if failure is not None:
        raise KprofError(f"sweep over devices stopped: {failure}")
    return [results[name] for name in workloads]


def compare_in_process(conn, session_args: dict, workloads: list[str | None], baseline: str,
                       candidates: list[str]) -> None:
    """A sweep worker's body: one paired run per workload, each Result sent back as it ends."""
    for name in workloads:
        try:
            session = MeasurementSession.open(
                session_args.get("device", "auto"), name, session_args.get("overrides", {}),
                lambda msg, name=name: conn.send(("status", name, f"{name}: {msg}")),
                session_args.get("config_mode", "auto"), session_args.get("keep_invalid", False))
            conn.send(("ok", name, run_compare(session, baseline, candidates)))
        except Exception as exc:  # noqa: BLE001 - one line to the parent, which stops the sweep
            text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            conn.send(("error", name, text))
            return
    conn.close()


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
    rounds = [r.protocol.get("rounds") for r in runs]
    protocol = first.protocol
    if len(set(rounds)) > 1:  # each run stopped on its own (precision, or cycles added for bad rounds)
        protocol = first.protocol | {"rounds": max(rounds)}
        notes.append("rounds per workload: " + ", ".join(f"{w} {n}" for w, n in zip(tags, rounds))
                     + f" (the header's {max(rounds)} is the most)")
    content = hashlib.sha256("".join(str(r.workload.get("content_hash")) for r in runs).encode()).hexdigest()[:16]
    return Result(
        kind=first.kind, environment=first.environment,
        workload={"name": " + ".join(tags), "content_hash": content, "shape": None, "metadata": {},
                  "points": [r.workload | {"name": tag} for r, tag in zip(runs, tags)]},
        protocol=protocol, clock=first.clock, mode=first.mode, methods=methods, summaries=summaries,
        speedups=speedups, design={"kind": "one paired run per workload",
                                   "runs": [{"workload": w, **r.design} for r, w in zip(runs, tags)]},
        telemetry={"runs": [{"workload": w, **r.telemetry} for r, w in zip(runs, tags)]},
        notes=notes, kprof_version=first.kprof_version, git_revision=first.git_revision,
        observations=observations,
    )

