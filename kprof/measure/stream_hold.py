"""StreamHold: the host gate (:mod:`kprof.measure.blocking_kernel`) as a harness observer.

Every timed region is enqueued between the gate's hold and release, so the device runs the
eviction and the region back to back. After each round the regions whose gate gave up are
counted and warned about: their times include host time.
"""

from __future__ import annotations

import warnings

from kprof.measure.blocking_kernel import MAX_WAIT_NS
from kprof.measure.observer import RunObserver


class StreamHold(RunObserver):
    """``gate``: a :class:`~kprof.measure.blocking_kernel.BlockingKernel` (or anything with ``hold``,
    ``release`` and ``new_expiries``)."""

    def __init__(self, gate):
        self.gate = gate
        self.hold, self.release = gate.hold, gate.release  # bound once: they run for every timed region
        self.expiries = 0

    def run_started(self) -> None:
        self.expiries = 0

    def round_finished(self, r: int) -> None:
        if expired := self.gate.new_expiries():
            self.expiries += expired
            warnings.warn(f"round {r}: the host gate gave up on {expired} timed region(s) after "
                          f"{MAX_WAIT_NS / 1e9:g} s: the timed call synchronises with the device, "
                          "launches a kernel for the first time (its module load waits for the held "
                          "stream) or takes that long to enqueue, so those times include host time",
                          stacklevel=4)

    def annotate(self, measurement) -> None:
        measurement.gate_expiries = self.expiries
