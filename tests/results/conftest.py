"""A real CPU Result of three rows (SDPA math in place of flash, and math twice more)."""

import pytest

from kprof.measure.harness import Progress


@pytest.fixture(scope="module")
def cpu_result():
    from kprof.commands.compare import run_compare
    from kprof.commands.session import MeasurementSession

    session = MeasurementSession.open("cpu", "cpu-smoke",
                                      {"rounds": 3, "warmup_pairs": 0, "observations": 2, "evict_mib": 1})
    return run_compare(session, "flash", ["math", "math"], Progress())
