"""`kprof tune`: search each launch's declared config space, validated, cached, crash-proof.

Screening times each candidate's launch in isolation (upstream launches untimed, eviction, the
timed launch) in a worker process; wrong answers are rejected, crashes and hangs recorded as
failed. The best screened candidates are then re-measured against the default with the paired
protocol on the complete operation (both in the same rounds of a balanced design); a finalist
replaces the default only when the lower bound of its speedup interval is above 1. What is
screened is the strategy's choice (:mod:`kprof.tuning.strategies`, one module each).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from kprof.core.errors import KprofError
from kprof.methods import get_method
from kprof.tuning.cache import StaleTuneFile, TuneFile, load_tune_file, tune_key
from kprof.tuning.launch_job import FINALIST_FLOOR, LaunchJob, screening_order
from kprof.tuning.request import LaunchOutcome, TuneRequest
from kprof.tuning.strategies import STRATEGIES, strategy

# FINALIST_FLOOR and choose are imported from here by kprof.commands.tune_callable, STRATEGIES by the CLI's test
__all__ = ["FINALIST_FLOOR", "STRATEGIES", "LaunchOutcome", "TuneRequest", "choose", "tune_launch"]


def choose(candidates: list[dict], default: dict, strategy_name: str, max_configs: int | None,
           seed: int) -> list[dict]:
    """The screening order: the default first, then the strategy's pick of the rest."""
    return screening_order(candidates, default, max_configs, seed, sample=strategy(strategy_name).SAMPLES)


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
    """Open the launch's cache and run the request's strategy on it. ``progress(launch, done,
    total, message="")`` is called as each candidate finishes; ``message`` says what just finished
    (one line, so a log of a run that is cut short still shows how far it got)."""
    method = get_method(req.method)
    spaces = method.config_space()
    if launch not in spaces:
        raise KprofError(f"{req.method} has no launch {launch!r}: tunable launches are {', '.join(spaces) or 'none'}")
    space = spaces[launch]
    search = strategy(req.strategy)
    key = tune_key(req.method, launch, req.shape)
    path = req.out_dir / key.filename

    def say(msg: str) -> None:
        progress(launch, 0, 0, msg)

    tf = _open_cache(path, key, req.replace_stale, say)
    if tf is not None and tf.eviction != req.eviction:
        if not req.replace_stale:
            raise KprofError(f"tuning cache {path} was measured with --eviction {tf.eviction}, not {req.eviction}: "
                             f"pass --eviction {tf.eviction} to resume it, --replace-stale to tune afresh (the old "
                             "file is kept as *.stale.json), or another --out-dir")
        _set_aside(path, [f"eviction: cached {tf.eviction!r} vs now {req.eviction!r}"], say)
        tf = None
    tf = tf or TuneFile(key=key, default=space.default(), eviction=req.eviction)
    if req.retry_failed:
        tf.candidates = [c for c in tf.candidates if c.status != "failed"]
    return search.tune(LaunchJob(req, launch, space, tf, path, progress))
