"""The rows of a comparison: =REF copies checked before anything is prepared, the CPU's baseline."""

import pytest

from kprof.commands.compare import check_same_copies, run_pairs, timed_baseline
from kprof.core.errors import KprofError


def test_a_copy_names_an_earlier_row_by_its_label():
    check_same_copies(["math", "triton-dense", "=triton-dense", "=math"])
    check_same_copies(["math", "math", "=math#2"])  # a repeated spec's second row is math#2
    for names in (["math", "=triton-dense", "triton-dense"], ["math", "=nothing"], ["=math", "math"]):
        with pytest.raises(KprofError, match="names no earlier row"):
            check_same_copies(names)
    check_same_copies(["math", "=base"], labels=["base", "copy"])  # labels a caller chose


def test_run_pairs_refuses_a_bad_copy_before_it_prepares_anything():
    class Session:  # preparing anything would fail the test
        def prepare(self, *args):
            raise AssertionError("prepared before the =REF check")

    with pytest.raises(KprofError, match="=later names no earlier row"):
        run_pairs(Session(), ["math", "=later", "later"], [(0, 1)])


def test_the_cpu_times_math_in_place_of_a_gpu_only_baseline():
    assert timed_baseline("flash", on_gpu=False) == "math" and timed_baseline("flash", on_gpu=True) == "flash"
    assert timed_baseline("math", on_gpu=False) == "math"
