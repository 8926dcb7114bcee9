"""The SANTA++ estimator (Algorithm 1): exactness at K = M, unbiasedness, sampling law, access."""

import math

import pytest
import torch

from kprof.kernels.santa.reference import (
    Selection,
    Teams,
    build_teams,
    contiguous_parents,
    estimate_sums,
    gumbel,
    inclusion_probability,
    kv_access,
    log_inclusion_probability,
    routing_logits,
    sample_teams,
    santa_attention,
    team_budget,
)
from kprof.methods.dense_reference import dense_attention_fp64
from kprof.workloads import Workload


def _problem(n=48, d=8, hq=4, hkv=2, seed=0, p=8, r=2, suffix=0):
    g = torch.Generator().manual_seed(seed)
    q = 0.8 * torch.randn(hq, d, generator=g, dtype=torch.float64)
    k = torch.randn(hkv, n + suffix, d, generator=g, dtype=torch.float64)
    v = torch.randn(hkv, n + suffix, d, generator=g, dtype=torch.float64)
    teams = [build_teams(k[h, :n], contiguous_parents(n, p), r) for h in range(hkv)]
    return q, k, v, teams


def test_k_equals_m_is_dense_attention():
    q, k, v, teams = _problem()
    m = len(teams[0])
    out = santa_attention(q, k, v, teams, m, torch.Generator().manual_seed(0))
    dense = dense_attention_fp64(Workload(q=q.float(), k=k.float(), v=v.float(), positions=torch.arange(48),
                                          query_position=47))
    w_exact = torch.softmax(torch.einsum("hd,hnd->hn", q, k.repeat_interleave(2, 0)) / math.sqrt(8), -1)
    exact = torch.einsum("hn,hnd->hd", w_exact, v.repeat_interleave(2, 0))
    assert torch.allclose(out.output, exact, atol=1e-12, rtol=0)
    assert torch.allclose(out.output, dense, atol=1e-6)
    assert all(torch.equal(c, torch.ones_like(c)) for c in out.corrections)


def test_exact_suffix_is_always_included():
    q, k, v, teams = _problem(suffix=5)
    full = santa_attention(q, k, v, teams, len(teams[0]), torch.Generator().manual_seed(0), suffix=5)
    w = torch.softmax(torch.einsum("hd,hnd->hn", q, k.repeat_interleave(2, 0)) / math.sqrt(8), -1)
    assert torch.allclose(full.output, torch.einsum("hn,hnd->hd", w, v.repeat_interleave(2, 0)), atol=1e-12)


def test_z_and_u_hats_are_unbiased():
    q, k, v, teams = _problem(n=40, hq=1, hkv=1, seed=3, p=8, r=2)
    t = teams[0]
    phi = routing_logits(q[0], k[0], t)
    s = k[0] @ q[0] / math.sqrt(8)
    shift = float(s.max())
    z_exact = torch.exp(s - shift).sum()
    u_exact = torch.exp(s - shift) @ v[0]
    g = torch.Generator().manual_seed(11)
    draws = 6000
    zs = torch.empty(draws, dtype=torch.float64)
    us = torch.empty(draws, 8, dtype=torch.float64)
    for i in range(draws):
        sums = estimate_sums(q[0], k[0], v[0], t, sample_teams(phi, 3, generator=g))
        zs[i], us[i] = sums.z_hat, sums.u_hat
    se_z = zs.std() / math.sqrt(draws)
    assert abs(zs.mean() - z_exact) < 4 * se_z, (zs.mean(), z_exact, se_z)
    se_u = us.std(0) / math.sqrt(draws)
    assert torch.all((us.mean(0) - u_exact).abs() < 4 * se_u + 1e-12)
    # and the estimator is genuinely random (not trivially exact)
    assert zs.std() > 1e-3 * z_exact


def test_k1_selection_frequency_matches_first_draw_probability():
    q, k, v, teams = _problem(n=32, hq=1, hkv=1, seed=5, p=8, r=2)
    phi = routing_logits(q[0], k[0], teams[0])
    p_first = torch.softmax(phi, 0)
    g = torch.Generator().manual_seed(2)
    draws = 20000
    counts = torch.zeros_like(phi)
    for _ in range(draws):
        counts[sample_teams(phi, 1, generator=g).teams[0]] += 1
    freq = counts / draws
    se = torch.sqrt(p_first * (1 - p_first) / draws)
    assert torch.all((freq - p_first).abs() < 4.5 * se + 1e-4)


def test_sample_teams_threshold_and_corrections():
    phi = torch.tensor([2.0, 1.0, 0.5, -1.0, 0.0], dtype=torch.float64)
    noise = torch.tensor([0.0, 0.3, 0.1, 0.2, -0.4], dtype=torch.float64)  # Y = 2, 1.3, 0.6, -0.8, -0.4
    sel = sample_teams(phi, 2, noise=noise)
    assert sel.teams.tolist() == [0, 1]
    tau = 0.6
    assert torch.allclose(sel.corrections, 1 - torch.exp(-torch.exp(phi[[0, 1]] - tau)))


def test_inclusion_probability_is_stable_at_extremes():
    x = torch.tensor([-800.0, -50.0, -1e-3, 0.0, 5.0, 50.0, 800.0], dtype=torch.float64)
    c = inclusion_probability(x, 0.0)
    assert torch.all(torch.isfinite(c)) and torch.all(c >= 0) and torch.all(c <= 1)
    assert c[-1] == 1.0 and c[-2] == 1.0
    assert math.isclose(float(c[1]), math.exp(-50), rel_tol=1e-12)  # no cancellation for tiny c
    logc = log_inclusion_probability(x, 0.0)
    assert math.isclose(float(logc[0]), -800.0, rel_tol=1e-12)  # log c ~ x where c underflows
    assert torch.allclose(logc[1:5], torch.log(c[1:5]))


def test_team_budget_rule_and_errors():
    assert team_budget(16, 4, 124, 10_000) == 31
    assert team_budget(16, 4, 128, 10) == 10
    with pytest.raises(ValueError, match="not divisible by R"):
        team_budget(16, 3, 124, 100)
    with pytest.raises(ValueError, match="not divisible by P/R"):
        team_budget(16, 4, 126, 100)


def test_kv_access_hand_computed():
    # one KV head, N=10, three teams; two query heads select {0} and {0, 2}; suffix of 2 rows
    t = Teams(members=[torch.tensor([0, 1, 2]), torch.tensor([3, 4, 5, 6]), torch.tensor([7, 8, 9])],
              representatives=torch.tensor([1, 3, 8]), sizes=torch.tensor([3, 4, 3]))
    pct = kv_access([t], [torch.tensor([0]), torch.tensor([0, 2])], suffix=2)
    # numerator: 3 representatives + 2 * (union {0,1,2,7,8,9} = 6 rows + 2 suffix) = 19; denominator 2 * 12 = 24
    assert pct == pytest.approx(100 * 19 / 24)


def test_gumbel_draws_have_the_right_law():
    x = gumbel((200_000,), torch.Generator().manual_seed(0))
    assert abs(float(x.mean()) - 0.5772156649) < 0.01  # Euler-Mascheroni
    assert abs(float(x.var()) - math.pi**2 / 6) < 0.03


def test_given_selection_matches_manual_sum():
    q, k, v, teams = _problem(hq=1, hkv=1)
    sel = Selection(torch.tensor([1, 4]), torch.tensor([0.5, 0.25], dtype=torch.float64))
    sums = estimate_sums(q[0], k[0], v[0], teams[0], sel)
    s = k[0] @ q[0] / math.sqrt(8)
    a = torch.exp(s - s.max())
    z = a[teams[0].members[1]].sum() / 0.5 + a[teams[0].members[4]].sum() / 0.25
    assert torch.isclose(sums.z_hat, z)
