"""Parents and teams (SANTA++ Algorithms 2-4): tie rules, partition property, k-means settings."""

import pytest
import torch

from kprof.kernels.santa import reference as ref
from kprof.kernels.santa.reference import build_teams, contiguous_parents, kmeans_parents


def _keys(*rows):
    return torch.tensor(rows, dtype=torch.float64)


def _as_lists(teams):
    return [t.tolist() for t in teams.members], teams.representatives.tolist()


def test_first_representative_nearest_the_mean_ties_by_token_index():
    # tokens 0 and 1 are equally near the mean (0, 0): token 0 wins
    teams = build_teams(_keys([-1.0, 0.0], [1.0, 0.0]), [torch.tensor([0, 1])], r=1)
    assert _as_lists(teams) == ([[0, 1]], [0])


def test_farthest_first_ties_by_token_index():
    # mean is token 0; tokens 1 and 2 are equally far from it: token 1 is chosen second
    teams = build_teams(_keys([0.0], [2.0], [-2.0]), [torch.tensor([0, 1, 2])], r=2)
    members, reps = _as_lists(teams)
    assert reps == [0, 1]
    assert members == [[0, 2], [1]]  # token 2 is nearer rep 0 (4) than rep 1 (16)


def test_assignment_ties_go_to_the_earlier_selected_representative():
    # reps in selection order: t2 (nearest mean), t0 (tie with t1, lower index), t1
    # t3 = 2.5 is 6.25 from both t2 and t0: it joins t2's team (selected first)
    teams = build_teams(_keys([0.0], [10.0], [5.0], [2.5]), [torch.tensor([0, 1, 2, 3])], r=3)
    members, reps = _as_lists(teams)
    assert reps == [2, 0, 1]
    assert members == [[2, 3], [0], [1]]


def test_duplicate_keys_representatives_own_themselves():
    teams = build_teams(torch.ones(6, 4, dtype=torch.float64), [torch.arange(6)], r=3)
    members, reps = _as_lists(teams)
    assert reps == [0, 1, 2]
    assert members == [[0, 3, 4, 5], [1], [2]]
    assert teams.sizes.tolist() == [4, 1, 1]


def test_parent_smaller_than_r_gets_one_team_per_member():
    teams = build_teams(_keys([0.0], [1.0]), [torch.tensor([0, 1])], r=4)
    assert sorted(teams.representatives.tolist()) == [0, 1]
    assert len(teams) == 2


def _check_partition(teams, n):
    seen = torch.cat(teams.members)
    assert sorted(seen.tolist()) == list(range(n)), "each prompt index in exactly one team"
    assert all(m.numel() > 0 for m in teams.members), "no empty team"
    for m, rep in zip(teams.members, teams.representatives.tolist()):
        assert rep in m.tolist(), "each representative in its own team"
        assert torch.equal(m, torch.sort(m).values), "members ascending"
    assert teams.sizes.tolist() == [m.numel() for m in teams.members]


@pytest.mark.parametrize("policy", ["contiguous", "kmeans"])
def test_partition_property_on_random_keys_with_duplicates(policy):
    g = torch.Generator().manual_seed(7)
    keys = torch.randn(300, 8, generator=g)
    keys[50:60] = keys[5]  # a block of exact duplicates
    keys[200:203] = 0.0
    parents = contiguous_parents(300, 16) if policy == "contiguous" else kmeans_parents(keys, 16, seed=0)
    assert sorted(torch.cat(parents).tolist()) == list(range(300))
    teams = build_teams(keys, parents, r=4)
    _check_partition(teams, 300)
    assert len(teams) <= 4 * len(parents)


def test_contiguous_parents_cover_tokens_in_order():
    parents = contiguous_parents(37, 16)
    assert [p.tolist() for p in parents] == [list(range(0, 16)), list(range(16, 32)), list(range(32, 37))]
    with pytest.raises(ValueError):
        contiguous_parents(0, 16)


def test_kmeans_uses_the_papers_minibatch_settings(monkeypatch):
    import sklearn.cluster

    seen = {}
    real = sklearn.cluster.MiniBatchKMeans

    class Spy(real):
        def __init__(self, **kw):
            seen.update(kw)
            super().__init__(**kw)

    monkeypatch.setattr(sklearn.cluster, "MiniBatchKMeans", Spy)
    keys = torch.randn(200, 4, generator=torch.Generator().manual_seed(1))
    parents = kmeans_parents(keys, 16, seed=3)
    assert seen == {"n_clusters": 12, "batch_size": 4096, "n_init": 1, "max_iter": 100, "max_no_improvement": 10,
                    "reassignment_ratio": 0.01, "tol": 0.0, "init": "k-means++", "random_state": 3}
    assert 1 <= len(parents) <= 12
    assert ref.KMEANS_SETTINGS["batch_size"] == 4096


def test_kmeans_parent_count_rule_and_determinism():
    keys = torch.randn(64, 4, generator=torch.Generator().manual_seed(2))
    a = kmeans_parents(keys, 100)  # N/P < 2: at least 2 centres
    assert 1 <= len(a) <= 2
    b1 = [p.tolist() for p in kmeans_parents(keys, 8, seed=0)]
    b2 = [p.tolist() for p in kmeans_parents(keys, 8, seed=0)]
    assert b1 == b2
