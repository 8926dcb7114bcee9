"""``--strategy halving``: screen a seeded sample, then re-measure the better half again and
again (more rounds for fewer candidates) down to the finalists, which are then confirmed."""

from __future__ import annotations

from typing import Callable

from kprof.tuning.cache import CandidateRecord
from kprof.tuning.launch_job import LaunchJob

SAMPLES = True


def tune(job: LaunchJob):
    return job.screen(job.order(sample=SAMPLES), refine=halve)


def survivors(records: list[CandidateRecord], keep: int) -> list[dict]:
    """The ``keep`` fastest screened candidates."""
    ok = sorted((r for r in records if r.status == "ok"), key=lambda r: r.median_us)
    return [r.config for r in ok[:keep]]


def halve(job: LaunchJob, pool, note: Callable[[str], None]) -> None:
    """Re-measure the better half repeatedly, merging the new rounds into each record."""
    tf, finalists = job.file, job.req.finalists
    left = survivors(tf.candidates, max(finalists, len(tf.ok()) // 2))
    while len(left) > max(finalists, 0):  # a negative count must not loop forever
        note(f"{tf.key.launch} halving: re-measuring {len(left)} candidate{'s' * (len(left) != 1)}")

        def merge(extra: CandidateRecord) -> None:
            if extra.status == "ok":
                rec = tf.measured(extra.config)
                rec.round_medians_us += extra.round_medians_us
                rec.median_us = float(sorted(rec.round_medians_us)[len(rec.round_medians_us) // 2])

        pool.measure(left, merge)
        job.save()
        left = survivors([tf.measured(c) for c in left], max(finalists, len(left) // 2))
