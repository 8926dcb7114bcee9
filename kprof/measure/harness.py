"""Harness: the one place that builds the timing machinery and runs rounds.

It builds the clock (CUDA events on a GPU, the host clock on the CPU), the L2 eviction buffer,
the host gate and the NVML telemetry sampler from a :class:`TimingProtocol`, and runs rounds of
them for every way kprof times things: paired comparisons in a balanced design, isolated stages,
chain prefixes, one launch of a tuning candidate, or one callable. It never knows what it times.
Telemetry and the host gate's stream hold are observers of the rounds
(:class:`~kprof.measure.observer.RunObserver`): the harness calls them, it does not know them.

Within a round every op is invoked in the round's order, first ``warmup_pairs`` times untimed,
then ``observations`` times timed (A, B, C, A, B, C, ...). Before each invocation the eviction
buffer is read and written outside the timed interval; the interval covers exactly one
invocation. The host synchronises once per round, after all intervals were recorded. On a GPU
each timed region is enqueued behind the host gate (:mod:`kprof.measure.blocking_kernel`).

A call can run at one of two speeds depending on the parity of its first kernel's position in
the stream's launch sequence. Interleaving fixes each row's parity for a whole round, so a row
would be measured in one state only. With ``protocol.launch_phase`` a one-element kernel runs,
untimed, before every observation cycle j with j % 2 == 1: the pads so far then run 0, 1, 1, 0, 0, 1, ...
(period 4), so whatever parity a row's regions have by themselves (fixed, or alternating with j
when a cycle launches an odd number of kernels) each row meets each parity in exactly half of
its observations of every round (with observations a multiple of 4).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import torch

from kprof.core.errors import KprofError
from kprof.measure.blocking_kernel import blocking_kernel_for
from kprof.measure.clocks import Clock, CudaEventClock, IntervalRecorder, clock_for
from kprof.measure.complete_cycles import CompleteCycles, Filled
from kprof.measure.design import BalancedDesign
from kprof.measure.eviction import EvictionBuffer
from kprof.measure.host_heap import steady_heap
from kprof.measure.observer import RunObserver
from kprof.measure.precision import Look, PrecisionStop
from kprof.measure.protocol import TimingProtocol
from kprof.measure.stats import RoundTable, round_table
from kprof.measure.stream_hold import StreamHold
from kprof.measure.telemetry import (
    Telemetry,
    TelemetryReport,
    TelemetrySampler,  # noqa: F401 - tests stop a run through harness.TelemetrySampler
)

AUTO = "auto"


@dataclass
class Progress:
    """Observer of a long measurement: status lines, the rounds to come, each round done (the CLI
    renders them; the default is silent)."""

    status: Callable[[str], None] = lambda msg: None
    start_rounds: Callable[[int], None] = lambda total: None
    round_done: Callable[[int], None] = lambda r: None


@dataclass(frozen=True)
class TimedOp:
    """One thing to time: a label and a callable that issues one complete invocation."""

    label: str
    invoke: Callable[[], object]


@dataclass
class Measurement:
    """What a run of rounds produced. ``observations[i, r, j]`` is row i's j-th interval of
    round r in microseconds, raw (bad values included: :func:`kprof.measure.stats.clean` drops them)."""

    labels: list[str]
    observations: np.ndarray
    orders: list[tuple[int, ...]] = field(default_factory=list)  # paired runs: each round's order
    cycle: int = 0  # paired runs: rounds in one cycle of the design
    telemetry: TelemetryReport | None = None
    gate_expiries: int = 0
    eviction_mib: float = 0.0
    notes: list[str] = field(default_factory=list)
    looks: list[Look | Filled] = field(default_factory=list)  # a run with a stopping rule: what each look saw
    rule: str = ""  # that rule's name: "precision" or "complete cycles"
    wall_s: float = 0.0  # wall time of the rounds
    interrupted: bool = False  # Ctrl-C ended the run: only the rounds finished before it are here

    def rows(self) -> dict[str, np.ndarray]:
        return {label: self.observations[i] for i, label in enumerate(self.labels)}

    @functools.cached_property
    def table(self) -> RoundTable:
        """Round summaries of every row and the bad rounds among them (throttled rounds included)."""
        rounds = self.observations.shape[1]
        throttled = self.telemetry.throttled_flags(rounds) if self.telemetry is not None else None
        return round_table(self.observations, throttled, self.orders or None)


def capture_graph(invoke: Callable[[], object], device: torch.device, warmup: int = 3) -> Callable[[], None]:
    """Capture ``invoke`` into a CUDA graph and return its ``replay``; the op must be capturable."""
    if device.type != "cuda":
        raise KprofError("--graph needs a CUDA device: drop --graph on the CPU")
    stream = torch.cuda.Stream(device)
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        for _ in range(warmup):
            invoke()
    torch.cuda.current_stream(device).wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            invoke()
    except RuntimeError as exc:
        raise KprofError(f"this method cannot be captured in a CUDA graph ({str(exc).splitlines()[0]}): "
                         "drop --graph") from None
    return graph.replay


def rotation(n: int, shift: int) -> list[int]:
    """Indices ``0..n-1`` rotated so that ``shift % n`` goes first (stage and chain rows)."""
    shift = shift % n
    return list(range(shift, n)) + list(range(shift))


class Harness:
    """``Harness(device, protocol)`` then ``paired(ops)``, ``stages(...)``, ``chain(...)``,
    ``launch(...)`` or ``time(fn)``; each returns a :class:`Measurement`.

    ``clock``, ``eviction`` and ``gate`` are built from the device and protocol unless given
    (tests pass recording fakes). ``progress`` hears how many rounds start and each that ends.
    ``observers`` watch or guard the rounds; without them, the stream hold of ``gate`` (a GPU's
    host gate by default) and NVML telemetry (on a GPU, unless ``telemetry`` is False).
    """

    def __init__(self, device: torch.device | str, protocol: TimingProtocol, *, telemetry: bool = True,
                 progress: Progress | None = None, clock: Clock | None = None,
                 eviction: EvictionBuffer | None | str = AUTO, gate=AUTO, keep_on_interrupt: bool = False,
                 observers: Sequence[RunObserver] | None = None):
        self.device = torch.device(device)
        self.protocol = protocol
        self.clock = clock or clock_for(self.device)
        if isinstance(eviction, str):
            eviction = (None if protocol.host_bound or protocol.evict_mib == 0
                        else EvictionBuffer(self.device, protocol.evict_mib, protocol.eviction))
        if eviction is None and not protocol.host_bound and protocol.evict_mib > 0:
            raise ValueError("an eviction buffer is required unless the protocol is host-bound")
        self.eviction = None if protocol.host_bound else eviction
        self.telemetry = telemetry and self.device.type == "cuda"
        if self.device.type == "cpu":
            steady_heap()  # CPU calls that allocate megabytes time the same in every process
        if observers is None:
            if isinstance(gate, str):
                event_device = self.device if isinstance(self.clock, CudaEventClock) else None
                gate = blocking_kernel_for(event_device, protocol.host_bound)
            observers = ([StreamHold(gate)] if gate is not None else []) + [
                Telemetry((self.device.index or 0) if self.telemetry else None)]
        self.observers = tuple(observers)
        self._hold, self._release = _region_hooks(self.observers)
        self.progress = progress or Progress()
        self.keep_on_interrupt = keep_on_interrupt  # Ctrl-C after a finished round returns the finished rounds
        self._pad = (torch.zeros(1, dtype=torch.int32, device=self.device)
                     if protocol.launch_phase and self.device.type == "cuda" else None)

    @property
    def gate(self):
        """The host gate whose stream hold observes this harness (None without one)."""
        return next((o.gate for o in self.observers if isinstance(o, StreamHold)), None)

    # ------------------------------------------------------------------ what callers time

    def op(self, label: str, invoke: Callable[[], object]) -> TimedOp:
        """A timed op; with ``protocol.graph`` its invocation is the replay of a captured graph."""
        return TimedOp(label, capture_graph(invoke, self.device) if self.protocol.graph else invoke)

    def rounds_for(self, design: BalancedDesign) -> int:
        """The protocol's rounds, or the design's default, rounded up to whole design cycles."""
        if self.protocol.rounds is None:
            return design.default_rounds(self.protocol.min_rounds, self.protocol.min_pair_cycles)
        return design.whole_cycles(self.protocol.rounds)

    def paired(self, ops: Sequence[TimedOp], design: BalancedDesign | None = None,
               stop: PrecisionStop | CompleteCycles | None = None) -> Measurement:
        """Ops interleaved within each round, rounds ordered by a balanced design; with ``stop``,
        whole design cycles run until its rule is met (a precision target, or every interval's
        cycles), its time is up or its cap is reached."""
        p = self.protocol
        design = design or BalancedDesign.williams(len(ops))
        notes = []
        if stop is None:
            rounds = self.rounds_for(design)
            if p.rounds is not None and rounds != p.rounds:
                notes.append(f"rounds rounded up from {p.rounds} to {rounds}: whole cycles of the balanced "
                             f"{design.cycle}-round design for {len(ops)} methods")
        else:
            rounds = stop.first_look(design)

        def one_round(r: int, recorders: list[IntervalRecorder]) -> None:
            order = design.order(r)
            for _ in range(p.warmup_pairs if r else max(p.warmup_pairs, p.initial_warmup_pairs)):
                for i in order:
                    self._evict()
                    ops[i].invoke()
            for j in range(p.observations):
                self._phase(j)
                for i in order:
                    self._timed(recorders[i], j, ops[i])

        m = self._run([op.label for op in ops], rounds, p.observations, one_round,
                      None if stop is None else _Looks(stop, design))
        m.orders, m.cycle, m.notes = design.orders(m.observations.shape[1]), design.cycle, notes + m.notes
        return m

    def time(self, fn: Callable[[], object], label: str = "op",
             stop: PrecisionStop | CompleteCycles | None = None) -> Measurement:
        """One callable under the protocol (rounds of warm-up, then timed calls)."""
        return self.paired([self.op(label, fn)], stop=stop)

    def stages(self, stages: Sequence[TimedOp], complete: TimedOp) -> Measurement:
        """Each stage timed alone after its upstream stages ran untimed, then the eviction; the
        complete operator the same way as the last row. The order rotates every observation."""
        p = self.protocol
        items = list(stages) + [complete]
        n = len(items)

        def one_round(r: int, recorders: list[IntervalRecorder]) -> None:
            for _ in range(min(p.warmup_pairs, p.stage_observations)):
                complete.invoke()
            for j in range(p.stage_observations):
                self._phase(j)
                for k in rotation(n, r * p.stage_observations + j):
                    for upstream in stages[:k] if k < len(stages) else ():
                        upstream.invoke()
                    self._timed(recorders[k], j, items[k])

        return self._run([it.label for it in items], self._plain_rounds(), p.stage_observations, one_round)

    def chain(self, prefixes: Sequence[TimedOp]) -> Measurement:
        """Prefixes of a launch chain, each timed whole after the eviction with nothing untimed
        before it: consecutive differences are each launch's marginal cost inside the chain."""
        p = self.protocol
        n = len(prefixes)

        def one_round(r: int, recorders: list[IntervalRecorder]) -> None:
            for _ in range(min(p.warmup_pairs, p.stage_observations)):
                prefixes[-1].invoke()
            for j in range(p.stage_observations):
                self._phase(j)
                for k in rotation(n, r * p.stage_observations + j):
                    self._timed(recorders[k], j, prefixes[k])

        return self._run([op.label for op in prefixes], self._plain_rounds(), p.stage_observations, one_round)

    def launch(self, stages: Sequence[TimedOp], index: int, per_round: int) -> Measurement:
        """``stages[index]`` timed alone: upstream stages untimed, eviction, the timed launch."""

        def one_round(r: int, recorders: list[IntervalRecorder]) -> None:
            for j in range(per_round):
                self._phase(j)
                for upstream in stages[:index]:
                    upstream.invoke()
                self._timed(recorders[0], j, stages[index])

        return self._run([stages[index].label], self._plain_rounds(), per_round, one_round)

    # ------------------------------------------------------------------ the round loop

    def _plain_rounds(self) -> int:
        return self.protocol.rounds or self.protocol.min_rounds

    def _phase(self, j: int) -> None:
        """Before observation cycle j: the untimed pad launch that balances launch parity."""
        if self._pad is not None and j % 2 == 1:
            self._pad.add_(1)

    def _evict(self) -> None:
        if self.eviction is not None:
            self.eviction.evict()

    def _timed(self, recorder: IntervalRecorder, slot: int, op: TimedOp) -> None:
        """Evict, then one interval around exactly one invocation; all enqueued between the
        observers' hold and release (the host gate's)."""
        hold = self._hold
        if hold is not None:
            hold()
        try:
            self._evict()
            recorder.start(slot)
            op.invoke()
            recorder.stop(slot)
        finally:
            if hold is not None:
                self._release()

    def _run(self, labels: list[str], rounds: int, per_round: int,
             body: Callable[[int, list[IntervalRecorder]], None], looks: "_Looks | None" = None) -> Measurement:
        """Run ``rounds`` rounds; with ``looks``, ``rounds`` is the first look and the run goes on
        from look to look until the stopping rule is met or its time is up."""
        done: list[np.ndarray] = []  # one [rows, per_round] array per round
        recorders = [self.clock.recorder(per_round) for _ in labels]
        observers = self.observers
        self.progress.start_rounds(rounds)
        t0 = time.monotonic()
        interrupted = False
        started: list[RunObserver] = []
        try:
            for o in observers:
                o.run_started()
                started.append(o)
            r = 0
            try:
                while r < rounds:
                    for o in observers:
                        o.round_started(r)
                    body(r, recorders)
                    self.clock.synchronize()
                    for o in observers:
                        o.round_finished(r)
                    done.append(np.stack([rec.elapsed_us(per_round) for rec in recorders]))
                    self.progress.round_done(r)
                    r += 1
                    if looks is not None and r == rounds:
                        rounds = looks.after(np.stack(done, axis=1), _throttled(observers, r), time.monotonic() - t0)
                        if rounds > r:
                            self.progress.start_rounds(rounds)
            except KeyboardInterrupt:
                if not (self.keep_on_interrupt and done):
                    raise
                interrupted = True
        finally:
            for o in reversed(started):
                o.run_finished()
        notes = [] if looks is None or not looks.stop.looks else looks.notes(interrupted)
        if self.eviction is not None and self.eviction.nbytes < self.eviction.requested_bytes:
            notes.append(f"eviction buffer reduced to {self.eviction.nbytes / 2**20:.0f} MiB (low memory)")
        out = np.stack(done, axis=1) if done else np.empty((len(labels), 0, per_round))
        m = Measurement(labels, out, eviction_mib=self.eviction.nbytes / 2**20 if self.eviction is not None else 0.0,
                        notes=notes, looks=[] if looks is None else list(looks.stop.looks),
                        rule="" if looks is None else looks.stop.name,
                        wall_s=time.monotonic() - t0, interrupted=interrupted)
        for o in observers:
            o.annotate(m)
        return m


def _throttled(observers: Sequence[RunObserver], rounds: int) -> list[bool]:
    """Rounds any observer saw throttled."""
    flags = [False] * rounds
    for o in observers:
        for r, hot in enumerate(o.throttled_flags(rounds) or ()):
            flags[r] = flags[r] or hot
    return flags


def _region_hooks(observers: Sequence[RunObserver]):
    """One hold and one release for every timed region (None, None: nothing holds regions):
    the observers' own bound methods when one holds them, so the timed loop pays no more."""
    holders = [o for o in observers if o.hold is not None]
    if len(holders) <= 1:
        return (holders[0].hold, holders[0].release) if holders else (None, None)

    def hold() -> None:
        for o in holders:
            o.hold()

    def release() -> None:
        for o in reversed(holders):
            o.release()

    return hold, release


def stopping_rule(protocol: TimingProtocol, pairs: list[tuple[int, int]]) -> PrecisionStop | CompleteCycles | None:
    """How a paired run under ``protocol`` ends: at its precision target, after its default rounds
    plus what bad rounds cost the intervals (no ``rounds`` given), or after exactly its ``rounds``."""
    if protocol.precision is not None:
        return PrecisionStop(protocol.precision, pairs, protocol.level, protocol.max_time_s)
    if protocol.rounds is None:
        return CompleteCycles(pairs, protocol.level, protocol.min_rounds, protocol.min_pair_cycles)
    return None


class _Looks:
    """A stopping rule inside a run (:class:`~kprof.measure.precision.PrecisionStop` or
    :class:`~kprof.measure.complete_cycles.CompleteCycles`): after each look, the rounds to run to
    (the current count when done, out of time or at the rule's cap)."""

    def __init__(self, stop, design: BalancedDesign):
        self.stop, self.design = stop, design
        self.elapsed_s = 0.0

    def after(self, observations: np.ndarray, throttled, elapsed_s: float) -> int:
        rounds = observations.shape[1]
        self.elapsed_s = elapsed_s
        look = self.stop.look(observations, self.design.orders(rounds), self.design.cycle, throttled)
        if look.done or elapsed_s >= self.stop.max_time_s:
            return rounds
        return self.stop.next_look(rounds, self.design.cycle)

    def notes(self, interrupted: bool) -> list[str]:
        return self.stop.notes(self.elapsed_s, interrupted)
