"""--strategy exhaustive screens the whole space in its order, the default first."""

from kprof.tuning.strategies import exhaustive


def test_every_candidate_in_the_spaces_order_the_default_first(job):
    j = job(strategy="exhaustive")
    assert j.order(sample=False) == [j.space.default()] + [c for c in j.space.candidates(j.req.shape)
                                                              if c != j.space.default()]
    assert exhaustive.tune(j) == "outcome"
    order, refine = j.screened
    assert order == j.order(sample=False) and len(order) == 18 and refine is None


def test_a_cap_samples_the_space_instead_of_taking_its_first_corner(job):
    j = job(strategy="exhaustive", max_configs=4)
    exhaustive.tune(j)
    order, _ = j.screened
    corner = [c for c in j.space.candidates(j.req.shape) if c != j.space.default()][:3]
    assert order[0] == j.space.default() and len(order) == 4 and order[1:] != corner
