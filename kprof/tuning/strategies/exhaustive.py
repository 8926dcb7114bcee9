"""``--strategy exhaustive``: screen every candidate of the space in its order (a seeded sample
of it under ``--max-configs``), then confirm finalists."""

from __future__ import annotations

from kprof.tuning.launch_job import LaunchJob

SAMPLES = False


def tune(job: LaunchJob):
    return job.screen(job.order(sample=SAMPLES))
