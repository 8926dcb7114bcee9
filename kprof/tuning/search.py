"""`kprof tune`: search each launch's declared config space, validated, cached, crash-proof.

Screening times each candidate's launch in isolation (upstream launches untimed, eviction, the
timed launch) in a worker process; wrong answers are rejected, crashes and hangs recorded as
failed. The best screened candidates are then re-measured against the default with the paired
protocol on the complete operation (both in the same rounds of a balanced design); a finalist
replaces the default only when the lower bound of its speedup interval is above 1.
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from kprof.core.errors import KprofError
from kprof.core.paths import tuned_dir
from kprof.core.target import resolve_target
from kprof.measure.protocol import TimingProtocol
from kprof.measure.stats import paired_speedup
from kprof.methods import get_method
from kprof.tuning.cache import (
    CandidateRecord,
    StaleTuneFile,
    TuneFile,
    load_tune_file,
    tune_key,
)
from kprof.tuning.pool import WorkerPool
from kprof.tuning.worker import CandidateWorker, WorkerSpec
from kprof.workloads.workload import WorkloadShape

STRATEGIES = ("exhaustive", "random", "halving", "optuna")


@dataclass
class TuneRequest:
    method: str
    workload: str
    shape: WorkloadShape
    device: str
    launches: Sequence[str] = ()
    strategy: str = "halving"
    max_configs: int | None = None
    budget_s: float | None = None
    rounds: int = 3
    observations: int = 100
    warmup: int = 10
    evict_mib: int = 512
    eviction: str = "read-write"  # kprof.measure.protocol.EVICTION_MODES: screening and finalists alike
    timeout_s: float = 120.0
    finalists: int = 3
    paired: dict = field(default_factory=lambda: {"rounds": 10, "warmup_pairs": 50, "observations": 200})
    seed: int = 0
    out_dir: Path = field(default_factory=tuned_dir)
    replace_stale: bool = False  # move a cache measured under another key aside and tune afresh
    retry_failed: bool = False  # measure again the candidates cached as failed (crash, timeout, error)
    devices: tuple[str, ...] = ()  # screen on these GPUs of the host, one worker each (kprof.tuning.pool)
    backend: str = "local"  # "ray": one actor per GPU of a Ray cluster (kprof.tuning.ray_pool)
    ray_address: str | None = None  # None: a local Ray instance


@dataclass
class LaunchOutcome:
    launch: str
    path: Path
    file: TuneFile
    measured_now: int
    seconds: float
    left: int = 0  # candidates of the space not measured because the budget ran out (a rerun resumes them)


FINALIST_FLOOR = 0.9  # a finalist screened slower than this share of the default's speed is not re-timed


def choose(candidates: list[dict], default: dict, strategy: str, max_configs: int | None, seed: int) -> list[dict]:
    """The screening order: the default first, then the strategy's pick of the rest."""
    if strategy not in STRATEGIES:
        raise KprofError(f"unknown strategy {strategy!r}: use {', '.join(STRATEGIES)}")
    rest = [c for c in candidates if c != default]
    if strategy != "exhaustive" or (max_configs is not None and max_configs - 1 < len(rest)):
        random.Random(seed).shuffle(rest)  # a capped screen samples the space; it never takes its first corner
    if max_configs is not None:
        rest = rest[: max(0, max_configs - 1)]
    return [default] + rest


def _halving_survivors(records: list[CandidateRecord], keep: int) -> list[dict]:
    ok = sorted((r for r in records if r.status == "ok"), key=lambda r: r.median_us)
    return [r.config for r in ok[:keep]]


def _config_text(cfg: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in cfg.items())


def _open_cache(path: Path, key, replace_stale: bool, say: Callable[[str], None]) -> TuneFile | None:
    """The launch's cache file if it exists and matches ``key``. One measured under another key
    is refused, or with ``replace_stale`` renamed to ``*.stale.json`` (kept, never overwritten)."""
    if not path.exists():
        return None
    try:
        return load_tune_file(path, key)
    except StaleTuneFile as exc:
        if not replace_stale:
            raise
        _set_aside(path, exc.differences, say)
        return None


def _set_aside(path: Path, differences: list[str], say: Callable[[str], None]) -> None:
    """Rename a cache measured on another setup to ``*.stale.json`` (never overwriting an earlier one)."""
    aside, i = path.with_suffix(".stale.json"), 1
    while aside.exists():
        i += 1
        aside = path.with_suffix(f".stale-{i}.json")
    os.replace(path, aside)
    say(f"{path.name} was measured on another setup ({'; '.join(differences)}): kept as {aside.name}, tuning afresh")


def tune_launch(req: TuneRequest, launch: str, progress: Callable[..., None]) -> LaunchOutcome:
    """Screen, halve and finalise one launch. ``progress(launch, done, total, message="")`` is
    called as each candidate finishes; ``message`` says what just finished (one line, so a log of
    a run that is cut short still shows how far it got)."""
    method = get_method(req.method)
    spaces = method.config_space()
    if launch not in spaces:
        raise KprofError(f"{req.method} has no launch {launch!r}: tunable launches are {', '.join(spaces) or 'none'}")
    space = spaces[launch]
    key = tune_key(req.method, launch, req.shape)
    path = req.out_dir / key.filename
    optuna = req.strategy == "optuna"
    order = ([] if optuna else
             choose(list(space.candidates(req.shape)), space.default(), req.strategy, req.max_configs, req.seed))
    tf = _open_cache(path, key, req.replace_stale, lambda msg: progress(launch, 0, len(order), msg))
    if tf is not None and tf.eviction != req.eviction:
        if not req.replace_stale:
            raise KprofError(f"tuning cache {path} was measured with --eviction {tf.eviction}, not {req.eviction}: "
                             f"pass --eviction {tf.eviction} to resume it, --replace-stale to tune afresh (the old "
                             "file is kept as *.stale.json), or another --out-dir")
        _set_aside(path, [f"eviction: cached {tf.eviction!r} vs now {req.eviction!r}"],
                   lambda msg: progress(launch, 0, len(order), msg))
        tf = None
    tf = tf or TuneFile(key=key, default=space.default(), eviction=req.eviction)
    if req.retry_failed:
        tf.candidates = [c for c in tf.candidates if c.status != "failed"]
    if not optuna:  # a candidate optuna pruned early was never fully screened: screen it now if chosen
        tf.candidates = [c for c in tf.candidates if c.status != "pruned" or c.config not in order]
    if optuna:
        return _tune_with_optuna(req, launch, space, tf, path, progress)
    todo = [c for c in order if tf.measured(c) is None]
    if len(todo) < len(order) and todo:
        progress(launch, len(order) - len(todo), len(order),
                 f"{launch}: resuming: {len(order) - len(todo)} of {len(order)} measured ({path.name})")
    pool = _pool(req, launch, req.devices)
    t0 = time.perf_counter()
    done = len(order) - len(todo)

    def record(rec: CandidateRecord) -> None:
        nonlocal done
        if rec.status == "failed" and "timeout" in rec.reason and rec.config == tf.default:
            raise KprofError(f"{req.method}.{launch}: the default config itself took longer than --timeout-s "
                             f"{req.timeout_s:g}: raise --timeout-s (nothing was cached for it)")
        tf.candidates.append(rec)
        tf.save(req.out_dir)  # after every candidate: an interruption loses at most the ones running
        done += 1
        progress(launch, done, len(order), f"{launch} {done}/{len(order)} {rec.describe()}")

    try:
        pool.start(expected_device=key.device)
        if len(pool.workers) > 1:
            progress(launch, done, len(order),
                     f"{launch}: screening on {len(pool.workers)} devices ({', '.join(pool.devices)}); finalists are "
                     f"confirmed on device {pool.devices[0]} alone (rounds interleaved across devices are not a "
                     "paired design)")
        progress(launch, done, len(order))
        pool.measure(todo, record, more=lambda: req.budget_s is None or time.perf_counter() - t0 <= req.budget_s)
        progress(launch, done, len(order))
        if req.strategy == "halving":
            _halve(tf, pool, req, lambda msg: progress(launch, done, len(order), msg))
        _finalize(tf, pool.confirmer, req, lambda msg: progress(launch, done, len(order), msg))
        tf.save(req.out_dir)
    finally:
        pool.close()
    measured_now = done - (len(order) - len(todo))
    return LaunchOutcome(launch, path, tf, measured_now, time.perf_counter() - t0, len(todo) - measured_now)


def _pool(req: TuneRequest, launch: str, devices: Sequence[str]):
    spec = WorkerSpec(req.method, req.workload, req.device, launch, req.rounds, req.observations, req.warmup,
                      req.evict_mib, eviction=req.eviction)
    if req.backend == "ray":
        from kprof.tuning.ray_pool import RayPool

        return RayPool(spec, req.timeout_s, req.ray_address, workers=len(devices) or None)
    return WorkerPool(spec, devices, req.timeout_s, pin=resolve_target(req.device).is_gpu)


def _tune_with_optuna(req: TuneRequest, launch: str, space, tf: TuneFile, path: Path,
                      progress: Callable[..., None]) -> LaunchOutcome:
    """TPE-proposed screening with pruning (:mod:`kprof.tuning.optuna_search`), then the finalists."""
    from kprof.tuning.optuna_search import screen_with_optuna

    pool = _pool(req, launch, req.devices[:1])  # TPE proposes one config at a time: one device
    worker = pool.confirmer
    t0 = time.perf_counter()
    if len(req.devices) > 1:
        progress(launch, 0, 0, f"{launch}: --strategy optuna proposes one config at a time, so it screens on "
                               f"device {req.devices[0]} only")
    try:
        measured, left = screen_with_optuna(
            tf, space, req.shape, worker, req.rounds, req.max_configs, req.budget_s, req.seed,
            lambda: tf.save(req.out_dir), lambda done, total, msg: progress(launch, done, total, msg))
        _finalize(tf, worker, req, lambda msg: progress(launch, measured, measured, msg))
        tf.save(req.out_dir)
    finally:
        pool.close()
    return LaunchOutcome(launch, path, tf, measured, time.perf_counter() - t0, left)


def _halve(tf: TuneFile, pool, req: TuneRequest, note: Callable[[str], None]) -> None:
    """Re-measure the better half repeatedly (more rounds for fewer candidates) down to the finalists."""
    survivors = _halving_survivors(tf.candidates, max(req.finalists, len(tf.ok()) // 2))
    while len(survivors) > max(req.finalists, 0):  # a negative count must not loop forever
        note(f"{tf.key.launch} halving: re-measuring {len(survivors)} candidates")

        def merge(extra: CandidateRecord) -> None:
            if extra.status == "ok":
                rec = tf.measured(extra.config)
                rec.round_medians_us += extra.round_medians_us
                rec.median_us = float(sorted(rec.round_medians_us)[len(rec.round_medians_us) // 2])

        pool.measure(survivors, merge)
        tf.save(req.out_dir)
        survivors = _halving_survivors([tf.measured(c) for c in survivors], max(req.finalists, len(survivors) // 2))


def _finalize(tf: TuneFile, worker: CandidateWorker, req: TuneRequest, note: Callable[[str], None]) -> None:
    """Paired complete-operation comparison of the best candidates against the default."""
    tf.finalists = []
    best = None
    default = tf.measured(tf.default)
    for rec in [r for r in tf.ok() if r.config != tf.default][: req.finalists]:
        if default is not None and default.status == "ok" and rec.median_us > default.median_us / FINALIST_FLOOR:
            ratio = default.median_us / rec.median_us
            tf.finalists.append({"config": rec.config, "status": "skipped", "reason": f"screened at {ratio:.2f}x"})
            note(f"{tf.key.launch} finalist {_config_text(rec.config)}: screened at {ratio:.2f}x the default, "
                 f"below {FINALIST_FLOOR:g}x: not re-timed")
            continue
        note(f"{tf.key.launch} finalist {_config_text(rec.config)}: paired complete-operation protocol vs default")
        got = worker.paired(rec.config, {**req.paired, "eviction": req.eviction})
        if isinstance(got, str):
            tf.finalists.append({"config": rec.config, "status": "failed", "reason": got})
            note(f"{tf.key.launch} finalist {_config_text(rec.config)}: failed ({got[:80]})")
            continue
        obs, orders, cycle = got
        level = TimingProtocol(**{**req.paired, "eviction": req.eviction}).interval_level
        iv = paired_speedup(obs[0], obs[1], orders, 0, 1, cycle, level)  # default / candidate
        tf.finalists.append({"config": rec.config, "status": "ok", "speedup": iv.estimate, "low": iv.low,
                             "high": iv.high, "cycles": iv.n, "interval": iv.method, "note": iv.note})
        note(f"{tf.key.launch} finalist {_config_text(rec.config)}: {iv.text()}")
        if iv.has_interval and iv.low > 1.0 and (best is None or iv.estimate > best[1]):
            best = (rec.config, iv.estimate)
    tf.best = best[0] if best else tf.default
