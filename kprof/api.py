"""The Python API: time your own callables with the same harness and protocol as the CLI.

::

    import kprof, torch
    a, b = torch.randn(4096, 4096, device="cuda"), torch.randn(4096, 4096, device="cuda")
    res = kprof.compare({"mine": my_mm}, baseline=torch.mm, inputs={"input": a, "mat2": b},
                        reference=torch.mm)        # the reference runs on fp64 CPU copies
    res.speedup("mine")          # Interval: estimate, low, high (baseline time / candidate time)
    res.save("runs/mine.json")   # a Result file kprof report and kprof gate read
    res.frame()                  # a pandas DataFrame, one row per timed row
    kprof.time(lambda: my_mm(a, b)).median_us

A candidate or the baseline is a callable (any GPU work, not only attention) or a method spec
(``"santa"``, ``"pkg.mod:fn"``) that runs on a kprof ``workload`` and is validated as in the CLI.
"""

from __future__ import annotations

import functools
import inspect
from typing import Callable, Mapping, Sequence

from kprof.commands.callables import (  # noqa: F401 (check_output, expected_output: public)
    Result,
    Summary,
    check_output,
    compare_callables,
    expected_output,
    time_callable,
)
from kprof.commands.errors import UsageError
from kprof.commands.protocols import default_protocol

Op = Callable[[], object] | str


def _protocol_overrides(rounds, observations, warmup_pairs, evict_mib, graph, host_bound, eviction=None,
                        precision=None, max_time=None) -> dict:
    return {"rounds": rounds, "observations": observations, "warmup_pairs": warmup_pairs, "evict_mib": evict_mib,
            "eviction": eviction, "precision": precision, "max_time_s": max_time,
            "graph": graph or None, "host_bound": host_bound or None}


def check_arguments(function: str, *args, **kwargs) -> None:
    """Refuse what ``kprof.<function>(*args, **kwargs)`` would fail at, before anything runs: an
    unknown keyword, a missing argument, or a protocol number of the wrong type or range (the
    pytest fixtures check their arguments here even under --benchmark-disable)."""
    fn = {"time": time, "compare": compare}[function]
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as exc:
        raise UsageError(f"kprof.{function}: {exc}: see help(kprof.{function}) for its arguments") from None
    kw = bound.arguments
    default_protocol(False).with_overrides(**_protocol_overrides(
        kw.get("rounds"), kw.get("observations"), kw.get("warmup_pairs"), kw.get("evict_mib"), kw.get("graph"),
        kw.get("host_bound"), kw.get("eviction"), kw.get("precision"), kw.get("max_time")))


def _check_inputs(inputs, tolerance) -> None:
    """``inputs`` named tensors and ``tolerance`` a relative error: what a call would fail at late."""
    if inputs is not None and not isinstance(inputs, Mapping):
        raise UsageError(f"inputs is a {type(inputs).__name__}: pass a dict of argument name -> tensor, as the "
                         "callables take them (fn(**inputs))")
    if tolerance is not None and (isinstance(tolerance, bool) or not isinstance(tolerance, (int, float))
                                  or not 0 < tolerance < float("inf")):
        raise UsageError(f"tolerance={tolerance!r}: pass a positive relative L2 error, e.g. 1e-3")


def _label(op: Op, fallback: str) -> str:
    if isinstance(op, str):
        return op
    return getattr(op, "__name__", fallback) if getattr(op, "__name__", "<lambda>") != "<lambda>" else fallback


def compare(candidates: Mapping[str, Op] | Sequence[Op], baseline: Op, *, inputs: Mapping[str, object] | None = None,
            reference=None, tolerance: float | None = None, workload: str | None = None, name: str = "callables",
            rounds: int | None = None, observations: int | None = None, warmup_pairs: int | None = None,
            evict_mib: int | None = None, eviction: str | None = None, graph: bool = False,
            host_bound: bool = False, strict: bool = True, device: str = "auto", precision: float | None = None,
            max_time: float | None = None, flops=None, bytes=None) -> Result:
    """Time ``candidates`` against ``baseline`` in the same rounds of a balanced design.

    A callable is zero-argument, or, with ``inputs`` (named tensors: a generic workload), called as
    ``fn(**inputs)``. ``reference`` is the expected output: a tensor, or a callable run on float64
    CPU copies of ``inputs`` (zero-argument without them). A method spec (``"santa"``,
    ``"pkg.mod:fn"``) runs on ``workload`` and is validated as in the CLI. With ``strict`` a row
    whose output differs from the reference beyond ``tolerance`` stops the call before timing.
    ``name`` names the setup in the Result: the gate compares only Results of one name.
    ``precision`` (0.005 = +-0.5%) runs until every speedup interval is that narrow, for at most
    ``max_time`` seconds; ``rounds`` fixes the run's length instead. ``flops`` and ``bytes`` (numbers,
    or functions of ``inputs``) are the work of one call of every callable row: the table then shows
    TFLOP/s and GB/s against the measured roofs (``kprof env --measure-peak``). Protocol defaults
    are the CLI's (``kprof compare --help``).
    """
    if isinstance(candidates, str) or callable(candidates):  # one candidate, not a sequence of them
        candidates = [candidates]
    if not isinstance(candidates, (Mapping, Sequence)):
        raise UsageError(f"kprof.compare: candidates is a {type(candidates).__name__}: pass a callable, a list of "
                         "them, or a dict of label -> callable")
    items = (list(candidates.items()) if isinstance(candidates, Mapping)
             else [(_label(op, f"candidate{i + 1}"), op) for i, op in enumerate(candidates)])
    if not items:
        raise UsageError("kprof.compare needs at least one candidate")
    if bad := [label for label, _ in items if not isinstance(label, str) or not label]:
        raise UsageError(f"kprof.compare: labels {bad!r} are not names: a dict's keys label the rows, write e.g. "
                         "{'mine': fn}")
    _check_inputs(inputs, tolerance)
    ops = [(_label(baseline, "baseline"), baseline)] + items
    for label, op in ops:
        if not (isinstance(op, str) or callable(op)):
            raise UsageError(f"kprof.compare: {label} is a {type(op).__name__}, not a callable or a method spec: "
                             "pass a function (e.g. lambda: a @ b) or a name such as 'triton-dense'")
    if inputs is not None:
        ops = [(label, op if isinstance(op, str) or not callable(op) else functools.partial(op, **inputs))
               for label, op in ops]
    overrides = _protocol_overrides(rounds, observations, warmup_pairs, evict_mib, graph, host_bound, eviction,
                                    precision, max_time)
    return compare_callables(ops, inputs, reference, tolerance, workload, name, overrides, strict, device, flops,
                             bytes)

def time(fn: Callable[[], object], *, rounds: int | None = None, observations: int | None = None,
         warmup_pairs: int | None = None, evict_mib: int | None = None, eviction: str | None = None,
         graph: bool = False, host_bound: bool = False, device: str = "auto", precision: float | None = None,
         max_time: float | None = None, flops: float | None = None, bytes: float | None = None) -> Summary:
    """One callable under the protocol: its time per call with an interval, spread, noise and
    drift (microseconds). ``precision`` runs until the interval is that narrow (GPU default +-0.5%).
    With ``flops`` or ``bytes`` (per call) the Summary also gives ``tflops`` and ``gb_per_s``."""
    if not callable(fn):
        raise UsageError(f"kprof.time needs a callable, got a {type(fn).__name__} ({fn!r:.40}): pass the function "
                         "itself, e.g. kprof.time(lambda: a @ b)")
    overrides = _protocol_overrides(rounds, observations, warmup_pairs, evict_mib, graph, host_bound, eviction,
                                    precision, max_time)
    return time_callable(fn, overrides, device, flops, bytes)

def tune(fn: Callable[..., object], *, space=None, default: Mapping[str, int] | None = None, constraints=(),
         inputs: Mapping[str, object] | None = None, reference=None, tolerance: float | None = None,
         workload: str | None = None, strategy: str = "random", max_configs: int | None = None, finalists: int = 3,
         seed: int = 0, precision: float | None = None, max_time: float | None = None, rounds: int | None = None,
         device: str = "auto"):
    """Tune ``fn``'s launch parameters in this process; the chosen config and its interval.

    The space is ``fn``'s own (``@kprof.tunable``) or given here as in ``@kprof.tunable``
    (``space=``, ``default=``, ``constraints=``; ``space`` may be a ``@triton.autotune`` kernel).
    ``fn(**inputs, **config)`` is checked against ``reference`` (a tensor, or a function run on fp64
    CPU copies of ``inputs``); without ``inputs``, ``fn(q, k, v, **config)`` runs on ``workload``
    and is checked against fp64 dense attention, and constraints read the workload's shape. Wrong
    candidates are rejected, the rest screened, finalists confirmed against the default with the
    precision stop (``precision``, ``max_time``; ``rounds`` fixes their run's length instead). Returns a
    :class:`kprof.commands.tune_callable.CallableTuning`: ``.config``, ``.speedup`` (None when the
    default stays), ``.screened``, ``.result`` (the finalists' paired Result).
    """
    from kprof.commands.tune_callable import tune_function

    if not callable(fn):
        raise UsageError(f"kprof.tune needs a callable, got a {type(fn).__name__}: pass the function itself")
    _check_inputs(inputs, tolerance)
    overrides = _protocol_overrides(rounds, None, None, None, False, False, None, precision, max_time)
    return tune_function(fn, space, default, constraints, inputs, reference, tolerance, workload, strategy,
                         max_configs, finalists, seed, overrides, device)

def load_result(path) -> Result:
    """A Result file written by the CLI or :meth:`Result.save`."""
    from kprof.commands.report import load

    return load([path])[0]
