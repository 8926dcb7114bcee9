"""--strategy random screens a seeded sample: the default first, the same sample for the same seed."""

from kprof.tuning.strategies import random


def test_a_seeded_sample_the_default_first(job):
    orders = []
    for seed in (0, 0, 1):
        j = job(strategy="random", seed=seed, max_configs=5)
        assert random.tune(j) == "outcome"
        order, refine = j.screened
        assert order[0] == j.space.default() and len(order) == 5 and refine is None
        orders.append(order)
    assert orders[0] == orders[1] and orders[0] != orders[2]


def test_uncapped_it_still_shuffles_the_whole_space(job):
    j = job(strategy="random")
    random.tune(j)
    order, _ = j.screened
    space = [c for c in j.space.candidates(j.req.shape)]
    assert sorted(map(str, order)) == sorted(map(str, space)) and order[1:] != [c for c in space
                                                                               if c != j.space.default()]
