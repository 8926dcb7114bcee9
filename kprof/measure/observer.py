"""RunObserver: the hooks the harness calls around its rounds, for what watches or guards them.

Telemetry (:class:`kprof.measure.telemetry.Telemetry`) and the stream hold
(:class:`kprof.measure.stream_hold.StreamHold`) are observers the harness is given; the harness
itself only clocks, evicts and invokes. Hooks run outside the timed regions: once per run and
once per round. ``hold`` and ``release`` are the exception: they bracket every timed region
(eviction, start mark, invocation, stop mark), so they sit in the timed loop; an observer sets
them only when it must act per region, and the harness binds them once, not per call.
"""

from __future__ import annotations

from typing import Callable


class RunObserver:
    """Does nothing by default; override the hooks that matter."""

    hold: Callable[[], None] | None = None  # before a timed region is enqueued
    release: Callable[[], None] | None = None  # after it is enqueued (also when it raised)

    def run_started(self) -> None:
        """Before the first round of a run."""

    def round_started(self, r: int) -> None:
        """Before round ``r``'s warm-up."""

    def round_finished(self, r: int) -> None:
        """After round ``r``, its device work synchronised."""

    def throttled_flags(self, rounds: int) -> list[bool] | None:
        """Which of the first ``rounds`` rounds ran throttled (None: this observer cannot say)."""
        return None

    def run_finished(self) -> None:
        """After the last round, also when the run ended in an exception: release what the run held."""

    def annotate(self, measurement) -> None:
        """Put what this observer saw into the run's :class:`~kprof.measure.harness.Measurement`."""
