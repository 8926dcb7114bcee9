"""Paired-round runner: the timing loop of the protocol, ignorant of what it times.

Within a round every method is invoked in turn (A, B, A, B, ...), first ``warmup_pairs``
untimed, then ``observations`` timed. The starting method rotates between rounds (A-first,
B-first, ... for two methods). Before each invocation the eviction buffer is read and written
*outside* the timed interval; the interval covers exactly one complete invocation. The host
synchronises once per round, after all intervals of the round were recorded.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch

from kprof.clocks import Clock, CudaEventClock, IntervalRecorder
from kprof.eviction import EvictionBuffer
from kprof.host_gate import MAX_WAIT_NS, gate_for
from kprof.protocol import TimingProtocol
from kprof.telemetry import TelemetrySampler


@dataclass(frozen=True)
class TimedOp:
    """One thing to time: a label and a callable that issues one complete invocation."""

    label: str
    invoke: Callable[[], object]


def round_order(n_ops: int, shift: int) -> list[int]:
    """Op indices rotated by ``shift``: ``shift % n_ops`` is the index of the op that goes first."""
    shift = shift % n_ops
    return list(range(shift, n_ops)) + list(range(shift))


def goes_before(n_ops: int, shift, a: int, b: int):
    """Whether op ``a`` precedes op ``b`` in ``round_order(n_ops, shift)`` (vectorises over ``shift``)."""
    return (a - shift) % n_ops < (b - shift) % n_ops


def _event_device(clock: Clock) -> torch.device | None:
    """The CUDA device whose stream event intervals are recorded on (none for a host clock)."""
    if isinstance(clock, CudaEventClock):
        return torch.device("cuda", torch.cuda.current_device())
    return None


class _RoundLoop:
    """What the runners share: eviction, the host gate, telemetry per round, one host sync per round."""

    def __init__(
        self,
        protocol: TimingProtocol,
        clock: Clock,
        eviction: EvictionBuffer | None,
        telemetry: TelemetrySampler | None = None,
        on_round: Callable[[int], None] | None = None,
    ):
        if eviction is None and not protocol.host_bound and protocol.evict_mib > 0:
            raise ValueError("an eviction buffer is required unless the protocol is host-bound")
        self.protocol = protocol
        self.clock = clock
        self.eviction = None if protocol.host_bound else eviction
        # event timing on a GPU: the device waits for the host before the eviction, never inside
        self.gate = gate_for(_event_device(clock), protocol.host_bound)
        self.telemetry = telemetry
        self.on_round = on_round

    def _evict(self) -> None:
        if self.eviction is not None:
            self.eviction.evict()

    def _timed(self, recorder: IntervalRecorder, slot: int, op: TimedOp) -> None:
        """Evict, then one interval around exactly one invocation; all enqueued before the gate opens."""
        if self.gate is not None:
            self.gate.hold()
        try:
            self._evict()
            recorder.start(slot)
            op.invoke()
            recorder.stop(slot)
        finally:
            if self.gate is not None:
                self.gate.release()

    def _rounds(self, n_rows: int, per_round: int, body: Callable[[int, list[IntervalRecorder]], None]) -> np.ndarray:
        """Run ``body(round, recorders)`` per round; return ``[n_rows, rounds, per_round]`` in us."""
        out = np.empty((n_rows, self.protocol.rounds, per_round), dtype=np.float64)
        recorders = [self.clock.recorder(per_round) for _ in range(n_rows)]
        for r in range(self.protocol.rounds):
            if self.telemetry:
                self.telemetry.begin_round(r)
            body(r, recorders)
            self.clock.synchronize()
            if self.gate is not None and (expired := self.gate.new_expiries()):
                warnings.warn(f"round {r}: the host gate gave up on {expired} timed region(s) after "
                              f"{MAX_WAIT_NS / 1e9:g} s: the timed call synchronises with the device, launches a kernel "
                              "for the first time (its module load waits for the held stream) or takes that "
                              "long to enqueue, so those times include host time", stacklevel=2)
            if self.telemetry:
                self.telemetry.end_round()
            for i, rec in enumerate(recorders):
                out[i, r] = rec.elapsed_us(per_round)
            if self.on_round:
                self.on_round(r)
        return out


class PairedRoundRunner(_RoundLoop):
    def run(self, ops: Sequence[TimedOp]) -> np.ndarray:
        """Return observations in microseconds, shape ``[len(ops), rounds, observations]``."""
        p = self.protocol
        n = len(ops)

        def one_round(r: int, recorders: list[IntervalRecorder]) -> None:
            order = round_order(n, r)
            for _ in range(p.warmup_pairs):
                for i in order:
                    self._evict()
                    ops[i].invoke()
            for j in range(p.observations):
                for i in order:
                    self._timed(recorders[i], j, ops[i])

        return self._rounds(n, p.observations, one_round)


class StageRunner(_RoundLoop):
    """Isolated per-stage timing: each stage timed alone, after its upstream stages ran untimed.

    For stage k the upstream stages ``0..k-1`` run (so its inputs are real), then the eviction
    buffer, then the timed stage. The complete operator is timed the same way as one more item.
    The order of items rotates with every observation. Medians of stages are not additive.
    """

    def run(self, stages: Sequence[TimedOp], complete: TimedOp) -> np.ndarray:
        """Observations ``[len(stages) + 1, rounds, stage_observations]``; the last row is ``complete``."""
        p = self.protocol
        items = list(stages) + [complete]
        n = len(items)

        def one_round(r: int, recorders: list[IntervalRecorder]) -> None:
            for _ in range(min(p.warmup_pairs, p.stage_observations)):
                complete.invoke()
            for j in range(p.stage_observations):
                for k in round_order(n, r * p.stage_observations + j):
                    for upstream in stages[:k] if k < len(stages) else ():
                        upstream.invoke()
                    self._timed(recorders[k], j, items[k])

        return self._rounds(n, p.stage_observations, one_round)


class ChainRunner(_RoundLoop):
    """Prefixes of a launch chain, each timed whole: launches 1..k after the eviction buffer.

    Unlike :class:`StageRunner`, nothing runs untimed before an item, so prefix k differs from
    prefix k-1 by exactly launch k as it runs inside the chain: overlapped with its predecessor
    (programmatic dependent launch), on a warm L2, without a boundary of its own. Differences of
    prefix medians are therefore each launch's marginal cost in the chain, and they add up to the
    whole chain run in stage order (for a pipelined method, such as Fathom's, its unpipelined
    order, not its ``run``). The order of prefixes rotates with every observation.
    """

    def run(self, prefixes: Sequence[TimedOp]) -> np.ndarray:
        """Observations ``[len(prefixes), rounds, stage_observations]``."""
        p = self.protocol
        n = len(prefixes)

        def one_round(r: int, recorders: list[IntervalRecorder]) -> None:
            for _ in range(min(p.warmup_pairs, p.stage_observations)):
                prefixes[-1].invoke()
            for j in range(p.stage_observations):
                for k in round_order(n, r * p.stage_observations + j):
                    self._timed(recorders[k], j, prefixes[k])

        return self._rounds(n, p.stage_observations, one_round)


class LaunchRunner(_RoundLoop):
    """One launch timed in isolation, as in :class:`StageRunner`: upstream launches run untimed,
    then the eviction buffer, then the timed launch. Used to screen tuning candidates."""

    def run(self, stages: Sequence[TimedOp], index: int, per_round: int) -> np.ndarray:
        """Observations ``[rounds, per_round]`` of ``stages[index]``."""

        def one_round(r: int, recorders: list[IntervalRecorder]) -> None:
            for j in range(per_round):
                for upstream in stages[:index]:
                    upstream.invoke()
                self._timed(recorders[0], j, stages[index])

        return self._rounds(1, per_round, one_round)[0]
