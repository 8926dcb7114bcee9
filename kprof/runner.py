"""Paired-round runner: the timing loop of the protocol, ignorant of what it times.

Within a round every method is invoked in turn (A, B, A, B, ...), first ``warmup_pairs``
untimed, then ``observations`` timed. The starting method rotates between rounds (A-first,
B-first, ... for two methods). Before each invocation the eviction buffer is read and written
*outside* the timed interval; the interval covers exactly one complete invocation. The host
synchronises once per round, after all intervals of the round were recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from kprof.clocks import Clock
from kprof.eviction import EvictionBuffer
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


class PairedRoundRunner:
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
        self.telemetry = telemetry
        self.on_round = on_round

    def _evict(self) -> None:
        if self.eviction is not None:
            self.eviction.evict()

    def run(self, ops: Sequence[TimedOp]) -> np.ndarray:
        """Return observations in microseconds, shape ``[len(ops), rounds, observations]``."""
        p = self.protocol
        n = len(ops)
        out = np.empty((n, p.rounds, p.observations), dtype=np.float64)
        recorders = [self.clock.recorder(p.observations) for _ in ops]
        for r in range(p.rounds):
            order = round_order(n, r)
            if self.telemetry:
                self.telemetry.begin_round(r)
            for _ in range(p.warmup_pairs):
                for i in order:
                    self._evict()
                    ops[i].invoke()
            for j in range(p.observations):
                for i in order:
                    self._evict()
                    rec = recorders[i]
                    rec.start(j)
                    ops[i].invoke()
                    rec.stop(j)
            self.clock.synchronize()
            if self.telemetry:
                self.telemetry.end_round()
            for i in range(n):
                out[i, r] = recorders[i].elapsed_us(p.observations)
            if self.on_round:
                self.on_round(r)
        return out


class StageRunner:
    """Isolated per-stage timing: each stage timed alone, after its upstream stages ran untimed.

    For stage k the upstream stages ``0..k-1`` run (so its inputs are real), then the eviction
    buffer, then the timed stage. The complete operator is timed the same way as one more item.
    The order of items rotates with every observation. Medians of stages are not additive.
    """

    def __init__(self, protocol: TimingProtocol, clock: Clock, eviction: EvictionBuffer | None,
                 telemetry: TelemetrySampler | None = None, on_round: Callable[[int], None] | None = None):
        self.protocol = protocol
        self.clock = clock
        self.eviction = None if protocol.host_bound else eviction
        self.telemetry = telemetry
        self.on_round = on_round

    def run(self, stages: Sequence[TimedOp], complete: TimedOp) -> np.ndarray:
        """Observations ``[len(stages) + 1, rounds, stage_observations]``; the last row is ``complete``."""
        p = self.protocol
        items = list(stages) + [complete]
        n = len(items)
        out = np.empty((n, p.rounds, p.stage_observations), dtype=np.float64)
        recorders = [self.clock.recorder(p.stage_observations) for _ in items]

        def prefix(k: int) -> None:
            if k < len(stages):
                for s in stages[:k]:
                    s.invoke()

        for r in range(p.rounds):
            if self.telemetry:
                self.telemetry.begin_round(r)
            for w in range(min(p.warmup_pairs, p.stage_observations)):
                complete.invoke()
            for j in range(p.stage_observations):
                for k in round_order(n, r * p.stage_observations + j):
                    prefix(k)
                    if self.eviction is not None:
                        self.eviction.evict()
                    recorders[k].start(j)
                    items[k].invoke()
                    recorders[k].stop(j)
            self.clock.synchronize()
            if self.telemetry:
                self.telemetry.end_round()
            for k in range(n):
                out[k, r] = recorders[k].elapsed_us(p.stage_observations)
            if self.on_round:
                self.on_round(r)
        return out
