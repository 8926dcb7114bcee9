"""One launch's tune as a search strategy sees it, and the steps strategies share.

A strategy (:mod:`kprof.tuning.strategies`) gets a :class:`LaunchJob`: the request, the launch's
config space and its open cache file. It picks what to screen; screening an order on the worker
pool (:meth:`LaunchJob.screen`) and the paired confirmation of finalists (:func:`finalize`) are
the same for every strategy.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from kprof.core.config_space import LaunchSpace
from kprof.core.errors import KprofError
from kprof.core.target import resolve_target
from kprof.measure.protocol import TimingProtocol
from kprof.measure.stats import paired_speedup
from kprof.tuning.cache import CandidateRecord, TuneFile
from kprof.tuning.pool import WorkerPool
from kprof.tuning.request import LaunchOutcome, TuneRequest
from kprof.tuning.worker import CandidateWorker, WorkerSpec

FINALIST_FLOOR = 0.9  # a finalist screened slower than this share of the default's speed is not re-timed


def screening_order(candidates: list[dict], default: dict, max_configs: int | None, seed: int,
                    sample: bool) -> list[dict]:
    """The default first, then the rest: a seeded sample when ``sample`` or when capped (a capped
    screen never takes the space's first corner), else the space in its order."""
    rest = [c for c in candidates if c != default]
    if sample or (max_configs is not None and max_configs - 1 < len(rest)):
        random.Random(seed).shuffle(rest)
    if max_configs is not None:
        rest = rest[: max(0, max_configs - 1)]
    return [default] + rest


def config_text(cfg: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in cfg.items())


@dataclass
class LaunchJob:
    """``progress(launch, done, total, message="")`` hears every candidate and finalist."""

    req: TuneRequest
    launch: str
    space: LaunchSpace
    file: TuneFile
    path: Path
    progress: Callable[..., None]

    def order(self, sample: bool) -> list[dict]:
        """The screening order of this launch's space under the request's cap and seed."""
        return screening_order(list(self.space.candidates(self.req.shape)), self.space.default(),
                               self.req.max_configs, self.req.seed, sample)

    def save(self) -> None:
        self.file.save(self.req.out_dir)

    def pool(self, devices: Sequence[str]):
        """Workers on ``devices`` (the request's backend): local processes or Ray actors."""
        req = self.req
        spec = WorkerSpec(req.method, req.workload, req.device, self.launch, req.rounds, req.observations, req.warmup,
                          req.evict_mib, eviction=req.eviction)
        if req.backend == "ray":
            from kprof.tuning.ray_pool import RayPool

            return RayPool(spec, req.timeout_s, req.ray_address, workers=len(devices) or None)
        return WorkerPool(spec, devices, req.timeout_s, pin=resolve_target(req.device).is_gpu)

    def outcome(self, measured: int, seconds: float, left: int = 0) -> LaunchOutcome:
        return LaunchOutcome(self.launch, self.path, self.file, measured, seconds, left)

    def screen(self, order: list[dict],
               refine: Callable[[LaunchJob, object, Callable[[str], None]], None] | None = None) -> LaunchOutcome:
        """Screen the candidates of ``order`` the cache lacks on the request's devices (until the
        budget runs out), ``refine`` the screened ones on the same pool, then confirm finalists."""
        req, tf, launch = self.req, self.file, self.launch
        # a candidate optuna pruned early was never fully screened: screen it now if ordered
        tf.candidates = [c for c in tf.candidates if c.status != "pruned" or c.config not in order]
        todo = [c for c in order if tf.measured(c) is None]
        if len(todo) < len(order) and todo:
            self.progress(launch, len(order) - len(todo), len(order),
                          f"{launch}: resuming: {len(order) - len(todo)} of {len(order)} measured ({self.path.name})")
        pool = self.pool(req.devices)
        t0 = time.perf_counter()
        done = len(order) - len(todo)

        def record(rec: CandidateRecord) -> None:
            nonlocal done
            if rec.status == "failed" and "timeout" in rec.reason and rec.config == tf.default:
                raise KprofError(f"{req.method}.{launch}: the default config itself took longer than --timeout-s "
                                 f"{req.timeout_s:g}: raise --timeout-s (nothing was cached for it)")
            tf.candidates.append(rec)
            self.save()  # after every candidate: an interruption loses at most the ones running
            done += 1
            self.progress(launch, done, len(order), f"{launch} {done}/{len(order)} {rec.describe()}")

        def note(msg: str) -> None:
            self.progress(launch, done, len(order), msg)

        try:
            pool.start(expected_device=tf.key.device)
            if len(pool.workers) > 1:
                note(f"{launch}: screening on {len(pool.workers)} devices ({', '.join(pool.devices)}); finalists are "
                     f"confirmed on device {pool.devices[0]} alone (rounds interleaved across devices are not a "
                     "paired design)")
            self.progress(launch, done, len(order))
            pool.measure(todo, record, more=lambda: req.budget_s is None or time.perf_counter() - t0 <= req.budget_s)
            self.progress(launch, done, len(order))
            if refine is not None:
                refine(self, pool, note)
            finalize(tf, pool.confirmer, req, note)
            self.save()
        finally:
            pool.close()
        measured_now = done - (len(order) - len(todo))
        return self.outcome(measured_now, time.perf_counter() - t0, len(todo) - measured_now)


def finalize(tf: TuneFile, worker: CandidateWorker, req: TuneRequest, note: Callable[[str], None]) -> None:
    """Paired complete-operation comparison of the best candidates against the default; one
    replaces it only when the lower bound of its speedup interval is above 1."""
    if req.finalists == 0:  # no confirmation asked for: an earlier one stands, the cache keeps its choice
        tf.best = tf.best or tf.default
        note(f"{tf.key.launch}: --finalists 0: no finalist confirmed now; the cache keeps its choice "
             f"({'the default' if tf.best in (None, tf.default) else config_text(tf.best)})")
        return
    tf.finalists = []
    best = None
    default = tf.measured(tf.default)
    protocol = TimingProtocol(**{**req.paired, "eviction": req.eviction})
    length = (f"until within +-{protocol.precision:.1%} or {protocol.max_time_s:g} s of timing"
              if protocol.precision else f"{protocol.rounds} rounds")
    for rec in [r for r in tf.ok() if r.config != tf.default][: req.finalists]:
        if default is not None and default.status == "ok" and rec.median_us > default.median_us / FINALIST_FLOOR:
            ratio = default.median_us / rec.median_us
            tf.finalists.append({"config": rec.config, "status": "skipped", "reason": f"screened at {ratio:.2f}x"})
            note(f"{tf.key.launch} finalist {config_text(rec.config)}: screened at {ratio:.2f}x the default, "
                 f"below {FINALIST_FLOOR:g}x: not re-timed")
            continue
        note(f"{tf.key.launch} finalist {config_text(rec.config)}: paired complete-operation protocol vs default, "
             f"{length}")
        got = worker.paired(rec.config, {**req.paired, "eviction": req.eviction})
        if isinstance(got, str):
            tf.finalists.append({"config": rec.config, "status": "failed", "reason": got})
            note(f"{tf.key.launch} finalist {config_text(rec.config)}: failed ({got[:80]})")
            continue
        obs, orders, cycle = got
        level = protocol.interval_level
        iv = paired_speedup(obs[0], obs[1], orders, 0, 1, cycle, level)  # default / candidate
        tf.finalists.append({"config": rec.config, "status": "ok", "speedup": iv.estimate, "low": iv.low,
                             "high": iv.high, "cycles": iv.n, "interval": iv.method, "note": iv.note})
        note(f"{tf.key.launch} finalist {config_text(rec.config)}: {iv.text()}")
        if iv.has_interval and iv.low > 1.0 and (best is None or iv.estimate > best[1]):
            best = (rec.config, iv.estimate)
    tf.best = best[0] if best else tf.default
