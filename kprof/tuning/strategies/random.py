"""``--strategy random``: screen a seeded sample of the space (the default first), then confirm finalists."""

from __future__ import annotations

from kprof.tuning.launch_job import LaunchJob

SAMPLES = True


def tune(job: LaunchJob):
    return job.screen(job.order(sample=SAMPLES))
