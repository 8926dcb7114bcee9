"""``kprof.tune``: tune a Python callable's launch parameters in this process.

The callable is ``fn(**inputs, **config)``. Every candidate of the declared space (a sample of
it under ``max_configs``) runs once and is checked against the reference, a wrong one rejected;
the rest are screened with a short protocol. Finalists screened at least ``FINALIST_FLOOR`` of
the default's speed are then timed against the default in one paired run with the precision
stop, and the fastest whose speedup interval lies above 1 is chosen. ``kprof tune`` does the same
for a method spec in worker processes (crash and hang isolation); this one shares the caller's
process, so a candidate that crashes the process ends the tune.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable, Mapping

import torch

from kprof.commands.callables import callable_method, check_output
from kprof.commands.compare import run_prepared
from kprof.commands.session import MeasurementSession
from kprof.core.config_space import LaunchSpace
from kprof.core.errors import KprofError
from kprof.measure.harness import Harness, Progress
from kprof.measure.protocol import TimingProtocol
from kprof.measure.stats import Interval, method_latency
from kprof.results.schema import Result
from kprof.tuning.search import FINALIST_FLOOR, choose

SCREEN_GPU = TimingProtocol(rounds=3, warmup_pairs=10, observations=50)
# five calls a round, so that a round's fenced mean can drop a call the host preempted
SCREEN_CPU = TimingProtocol(rounds=2, warmup_pairs=0, observations=5, evict_mib=8)


@dataclass
class Screened:
    """One candidate's screening: ``ok`` with its time per call, ``rejected`` (wrong output) or
    ``failed`` (raised)."""

    config: dict
    status: str
    us: float | None = None
    reason: str = ""


@dataclass
class CallableTuning:
    """The chosen config, its speedup over the default (None when the default stays without a
    finalist to compare), every screened candidate and the finalists' paired Result."""

    config: dict
    default: dict
    speedup: Interval | None
    screened: list[Screened] = field(default_factory=list)
    result: Result | None = None


def _screen(fn: Callable, cfg: dict, inputs: Mapping, expected, tolerance, harness: Harness,
            is_gpu: bool) -> Screened:
    call = functools.partial(fn, **inputs, **cfg)
    try:
        out = call()
        if is_gpu:
            torch.cuda.synchronize()
        check = check_output("candidate", out, expected, tolerance)
        if not check.passed:
            return Screened(cfg, "rejected", reason=f"wrong output (relative error {check.rel_error:.1e})")
        return Screened(cfg, "ok", method_latency(harness.time(call).table, 0).estimate)
    except KprofError:
        raise
    except Exception as exc:  # noqa: BLE001 - a candidate that does not compile or run is recorded and skipped
        return Screened(cfg, "failed", reason=f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:120]}")


def tune_callable(fn: Callable, space: LaunchSpace, session: MeasurementSession, inputs: Mapping, shape,
                  expected: torch.Tensor | None, tolerance: float | None, strategy: str, max_configs: int | None,
                  finalists: int, seed: int, progress: Progress) -> CallableTuning:
    """Screen, then confirm finalists against the default in one paired run of ``session``;
    ``shape`` is what the space's constraints read (a workload's shape, or the inputs)."""
    candidates = list(space.candidates(shape))
    if not candidates:
        raise KprofError("no config of the declared space satisfies its constraints for these inputs: loosen them")
    default = space.default()
    order = choose(candidates, default, strategy, max_configs, seed)
    screen = Harness(session.target.device, SCREEN_GPU if session.target.is_gpu else SCREEN_CPU, telemetry=False)
    screened = []
    for i, cfg in enumerate(order):
        rec = _screen(fn, cfg, inputs, expected, tolerance, screen, session.target.is_gpu)
        screened.append(rec)
        progress.status(f"{i + 1}/{len(order)} {cfg}: " + (f"{rec.us:.2f} us" if rec.status == "ok"
                                                             else f"{rec.status} ({rec.reason})"))
    base = next(r for r in screened if r.config == default)
    if base.status != "ok":
        raise KprofError(f"the default config {default} itself {base.status}: {base.reason}: fix the function or "
                         "declare another default")
    ok = sorted((r for r in screened if r.status == "ok" and r.config != default), key=lambda r: r.us)
    chosen = [r for r in ok[:finalists] if r.us <= base.us / FINALIST_FLOOR]
    if not chosen:
        return CallableTuning(default, default, None, screened)
    rows = [callable_method(session, "default", "baseline", functools.partial(fn, **inputs, **default),
                            expected, tolerance)]
    rows += [callable_method(session, ",".join(f"{k}={v}" for k, v in r.config.items()), "candidate",
                             functools.partial(fn, **inputs, **r.config), expected, tolerance) for r in chosen]
    for row, cfg in zip(rows, [default] + [r.config for r in chosen]):
        row.record.config = {"call": cfg}
    progress.status(f"confirming {len(chosen)} finalist(s) against the default in one paired run")
    result = run_prepared(session, rows, [(0, k) for k in range(1, len(rows))], progress)
    best = max(((sp.interval, r.config) for sp, r in zip(result.speedups, chosen)
                if sp.interval.has_interval and sp.interval.low > 1), key=lambda t: t[0].estimate, default=None)
    if best is None:
        return CallableTuning(default, default, None, screened, result)
    return CallableTuning(best[1], default, best[0], screened, result)


def tune_function(fn: Callable, space, default: Mapping[str, int] | None, constraints, inputs: Mapping | None,
                  reference, tolerance: float | None, workload: str | None, strategy: str, max_configs: int | None,
                  finalists: int, seed: int, overrides: dict, device: str) -> CallableTuning:
    """:func:`kprof.tune` once its arguments are checked: the declared space (``@kprof.tunable``, a
    mapping or a ``@triton.autotune`` kernel), the reference, then :func:`tune_callable`."""
    from kprof.commands.callables import callables_session, expected_output
    from kprof.core.target import resolve_target
    from kprof.methods.dense_reference import dense_attention_fp64
    from kprof.methods.tunable import TunableFunction, space_from_autotune, space_from_mapping

    if space is not None:
        declared = (space_from_autotune(space, constraints) if hasattr(space, "configs")
                    else space_from_mapping(space, default, constraints))
    elif isinstance(fn, TunableFunction):
        declared = fn.space
    else:
        raise KprofError("kprof.tune needs a space: decorate the function with @kprof.tunable or pass space=")
    call = fn.fn if isinstance(fn, TunableFunction) else fn
    target = resolve_target(device)
    session = callables_session(device, workload, overrides, inputs is None)
    if inputs is None:
        w = session.workload.to(target.device)
        inputs, shape = {"q": w.q, "k": w.k, "v": w.v}, w.shape
        expected = dense_attention_fp64(session.workload) if reference is None else expected_output(reference, inputs)
    else:
        shape, expected = inputs, expected_output(reference, inputs)
    if expected is None:
        raise KprofError("kprof.tune needs reference=: a candidate that computes the wrong thing must not win")
    return tune_callable(call, declared, session, inputs, shape, expected, tolerance, strategy, max_configs,
                         finalists, seed, Progress())

