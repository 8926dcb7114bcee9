"""--strategy halving re-measures the better half, again and again, down to the finalists."""

from kprof.tuning.cache import CandidateRecord
from kprof.tuning.strategies import halving


class _Pool:
    """Answers each re-measurement with one more round at the candidate's true time."""

    def __init__(self, truth):
        self.truth, self.batches = truth, []

    def measure(self, configs, on_result):
        self.batches.append([c["A"] for c in configs])
        for c in configs:
            on_result(CandidateRecord(c, "ok", self.truth[c["A"]], [self.truth[c["A"]]]))


def test_screens_a_sample_and_refines_it_by_halving(job):
    j = job(strategy="halving", max_configs=6)
    halving.tune(j)
    order, refine = j.screened
    assert order[0] == j.space.default() and len(order) == 6 and refine is halving.halve


def test_each_pass_keeps_the_faster_half_until_the_finalists_remain(job):
    j = job(strategy="halving", finalists=2)
    truth = {a: 10.0 + a for a in range(6)}
    # screening was noisy: candidate 5 looked fastest, 0 slowest
    j.file.candidates = [CandidateRecord({"A": a, "B": 2}, "ok", 20.0 - a, [20.0 - a]) for a in range(6)]
    notes = []
    halving.halve(j, pool := _Pool(truth), notes.append)
    assert pool.batches == [[5, 4, 3]], "one pass: the better half of six, then the two finalists are left"
    rec = j.file.measured({"A": 5, "B": 2})
    assert rec.round_medians_us == [15.0, 15.0] and rec.median_us == 15.0, "the new round joins the record"
    assert notes == ["main halving: re-measuring 3 candidates"]
    assert (j.path.parent / j.file.key.filename).exists(), "saved after each pass"


def test_a_negative_finalist_count_ends(job):
    j = job(strategy="halving", finalists=-1)
    j.file.candidates = [CandidateRecord({"A": a, "B": 2}, "ok", 10.0 + a, [10.0 + a]) for a in range(4)]
    halving.halve(j, _Pool({a: 10.0 + a for a in range(4)}), lambda msg: None)
