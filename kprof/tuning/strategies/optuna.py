"""``--strategy optuna``: TPE over a launch's parameters with successive-halving pruning.

For spaces too large to screen whole (Fathom's scan has 2,720 candidates), Optuna's TPE sampler
proposes the next config from what was measured so far; each proposal is screened one round at
a time and Optuna's successive-halving pruner stops a candidate whose early rounds are already
worse than the rung's best. Configs outside the launch's constraints are told to Optuna as
failed without being run. Earlier screenings in the tuning cache (a resumed tune, or another
strategy's) are given to the sampler first, so nothing is measured twice. Each round is its own
worker request (prepare, validate, warm up, one round), which costs a little more per round than
the other strategies' single request: pruning has to win that back on large spaces.
"""

from __future__ import annotations

import json
import time
from typing import Callable

import numpy as np

from kprof.core.errors import KprofError
from kprof.tuning.cache import CandidateRecord, TuneFile
from kprof.tuning.launch_job import LaunchJob, finalize
from kprof.tuning.worker import CandidateWorker

DEFAULT_TRIALS = 64  # screened candidates when neither --max-configs nor --budget-s is given
MAX_ASKS_PER_TRIAL = 20  # proposals per new candidate before giving up (TPE repeats itself in tiny spaces)
SAMPLES = True  # kprof.tune's in-process tuner has no TPE: it screens a seeded sample


def _optuna():
    try:
        import optuna
    except ImportError:
        raise KprofError("--strategy optuna needs Optuna: pip install 'kprof[optuna]'") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def check_available() -> None:
    """Fail before a tune starts, not after its first launch."""
    _optuna()


def tune(job: LaunchJob):
    """TPE-proposed screening with pruning on one device, then the finalists."""
    req, launch = job.req, job.launch
    pool = job.pool(req.devices[:1])  # TPE proposes one config at a time: one device
    worker = pool.confirmer
    t0 = time.perf_counter()
    if len(req.devices) > 1:
        job.progress(launch, 0, 0, f"{launch}: --strategy optuna proposes one config at a time, so it screens on "
                                   f"device {req.devices[0]} only")
    try:
        measured, left = screen_with_optuna(
            job.file, job.space, req.shape, worker, req.rounds, req.max_configs, req.budget_s, req.seed, job.save,
            lambda done, total, msg: job.progress(launch, done, total, msg))
        finalize(job.file, worker, req, lambda msg: job.progress(launch, measured, measured, msg))
        job.save()
    finally:
        pool.close()
    return job.outcome(measured, time.perf_counter() - t0, left)


def _key(cfg: dict) -> str:
    return json.dumps(cfg, sort_keys=True)


def screen_with_optuna(tf: TuneFile, space, shape, worker: CandidateWorker, rounds: int, trials: int | None,
                       budget_s: float | None, seed: int, save: Callable[[], None],
                       progress: Callable[[int, int, str], None]) -> tuple[int, int]:
    """Screen up to ``trials`` new candidates of ``space`` proposed by TPE (fewer if the space runs
    out); returns (measured now, trials the budget left). Every record goes into ``tf`` and is saved as it is made."""
    optuna = _optuna()
    trials = trials or DEFAULT_TRIALS
    valid = {_key(c) for c in space.candidates(shape)}
    dists = {p.name: optuna.distributions.CategoricalDistribution(list(p.values)) for p in space.params}
    study = optuna.create_study(direction="minimize", sampler=optuna.samplers.TPESampler(seed=seed),
                                pruner=optuna.pruners.SuccessiveHalvingPruner())
    for rec in tf.candidates:  # what the cache already knows teaches the sampler first
        state = {"ok": optuna.trial.TrialState.COMPLETE, "pruned": optuna.trial.TrialState.PRUNED}.get(
            rec.status, optuna.trial.TrialState.FAIL)
        if set(rec.config) == set(dists):
            study.add_trial(optuna.trial.create_trial(
                params=rec.config, distributions=dists, state=state,
                value=rec.median_us if state == optuna.trial.TrialState.COMPLETE else None))
    if tf.measured(space.default()) is None:
        study.enqueue_trial(space.default())  # the default is always measured
    t0, measured, asks, out_of_time = time.perf_counter(), 0, 0, False
    while measured < trials and asks < MAX_ASKS_PER_TRIAL * trials and len(tf.candidates) < len(valid):
        if budget_s is not None and time.perf_counter() - t0 > budget_s:
            out_of_time = True
            break
        asks += 1
        trial = study.ask(dists)
        cfg = dict(trial.params)
        known = tf.measured(cfg)
        if _key(cfg) not in valid:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
            continue
        if known is not None:
            study.tell(trial, known.median_us if known.status == "ok" else None,
                       state=None if known.status == "ok" else optuna.trial.TrialState.FAIL)
            continue
        progress(measured, trials, "")
        rec = _screen(trial, cfg, worker, rounds)
        tf.candidates.append(rec)
        save()
        measured += 1
        if rec.status == "ok":
            study.tell(trial, rec.median_us)
        elif rec.status == "pruned":
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        else:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
        progress(measured, trials, f"{measured}/{trials} " + rec.describe())
    return measured, trials - measured if out_of_time else 0


def _screen(trial, cfg: dict, worker: CandidateWorker, rounds: int) -> CandidateRecord:
    """One round at a time; after each, the pruner may stop the candidate."""
    medians, seconds = [], 0.0
    for r in range(rounds):
        rec = worker.measure(cfg, rounds=1)
        seconds += rec.seconds
        if rec.status != "ok":
            return rec
        medians += rec.round_medians_us
        trial.report(float(np.median(medians)), step=r)
        if r + 1 < rounds and trial.should_prune():
            return CandidateRecord(cfg, "pruned", float(np.median(medians)), medians,
                                   reason=f"pruned after {r + 1} of {rounds} rounds (successive halving)",
                                   seconds=seconds)
    return CandidateRecord(cfg, "ok", float(np.median(medians)), medians, seconds=seconds)

