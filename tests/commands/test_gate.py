"""The history policy of ``kprof gate --update-baseline``, as a use case: a growing history takes
any comparable run, a full one only SAME runs (or any but INCOMPARABLE with force)."""

import pytest

from kprof.commands.gate import MIN_HISTORY, start_history, update_history
from kprof.results.gate import GateReport
from kprof.results.store import save_result
from tests.results.test_gate import synthetic


def _report(verdict: str) -> GateReport:
    return GateReport(verdict, [], [], [], "speedup", 0.03, "test")


@pytest.fixture
def candidate(real_result, tmp_path):
    return str(save_result(synthetic(real_result, seed=7), tmp_path / "cand.json"))


def test_a_new_history_starts_with_the_candidate_and_an_existing_one_does_not(candidate, tmp_path):
    started = start_history(candidate, tmp_path / "h")
    assert started.added.is_file() and started.added.with_suffix(".obs.npz").is_file()
    assert start_history(candidate, tmp_path / "h") is None


@pytest.mark.parametrize("verdict", ["FASTER", "SLOWER", "UNCERTAIN", "SAME"])
def test_a_growing_history_takes_any_comparable_run_and_cannot_fail_the_job(candidate, tmp_path, verdict):
    update = update_history(_report(verdict), candidate, tmp_path / "h", force=False)
    assert update.added is not None and update.exit_code == 0 and verdict in update.message


def test_a_growing_history_refuses_an_incomparable_run(candidate, tmp_path):
    update = update_history(_report("INCOMPARABLE"), candidate, tmp_path / "h", force=True)
    assert update.added is None and update.exit_code == 4 and "INCOMPARABLE" in update.message


def test_a_full_history_takes_same_runs_and_others_only_when_forced(real_result, tmp_path):
    folder = tmp_path / "h"
    runs = iter(str(save_result(synthetic(real_result, seed=s), tmp_path / f"run{s}.json")) for s in range(20))
    for _ in range(MIN_HISTORY):
        update_history(_report("SAME"), next(runs), folder, force=False)
    same = update_history(_report("SAME"), next(runs), folder, force=False)
    assert same.added is not None and same.exit_code is None  # exit with the verdict's code
    slower = update_history(_report("SLOWER"), next(runs), folder, force=False)
    assert slower.added is None and slower.exit_code == 1 and "--force" in slower.message
    forced = update_history(_report("SLOWER"), next(runs), folder, force=True)
    assert forced.added is not None and forced.exit_code is None
    assert update_history(_report("INCOMPARABLE"), next(runs), folder, force=True).added is None


def test_a_run_already_in_the_history_is_not_added_again(candidate, tmp_path):
    """Added twice, one run would count as two that agree exactly and narrow every interval."""
    folder = tmp_path / "h"
    first = update_history(_report("SAME"), candidate, folder, force=False)
    again = update_history(_report("SAME"), candidate, folder, force=True)
    assert again.added is None and f"already holds this run as {first.added}" in again.message
    assert len(list(folder.glob("*.json"))) == 1


def test_a_candidate_found_in_its_history_is_left_out_of_it(real_result, tmp_path):
    from kprof.commands.gate import against_history

    runs = [str(save_result(synthetic(real_result, seed=s), tmp_path / f"run{s}.json")) for s in range(4)]
    report = against_history(runs, runs[3], 0.03, "speedup")
    assert report.warnings[0] == f"the candidate is the run in {runs[3]}: left out of the history it is judged against"
    assert report.rows[0].ratio.n == 3, "judged against the three other runs"
    alone = against_history(runs[3:], runs[3], 0.03, "speedup")
    assert "compares the run with itself" in alone.warnings[0]
