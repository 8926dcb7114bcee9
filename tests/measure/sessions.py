"""Simulated timing sessions with known truth, for checking kprof's intervals for coverage.

Written from the measurement spec alone (it does not import kprof), so that a flaw shared by the
estimator and its own model of the data cannot hide itself. Each (method, round) gets
``observations`` times whose log is

    log t = mu_i + S_r + D_ir + P_ir + C_ir + B_ir + eps_irj

mu: the method's own log time; S: shared drift, trend and step; D: the method's own stationary
AR(1) drift; P: the first-position effect; C: carry-over from the cyclic predecessor; B: a slow
bimodal state; eps: observation noise (normal or Student-t), plus spikes and one bad round.

The truth is what a good estimator should target: the method's location with every effect the
design balances averaged over the session's rounds, and every zero-mean random part and every
outlier left out. See ``_truth``. Noise is on the log scale, so the truth is the median of the
lognormal (its location), not its mean: an estimator of mean time would be biased by noise**2/2.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

SPIKE_FACTOR = 1.5
MIN_GRID_STEPS = 4.0  # base times must span at least this many timer grid steps


@dataclass(frozen=True)
class Effects:
    """What a simulated GPU does. Sizes are on the log scale unless named otherwise."""

    methods: int = 2
    rounds: int = 20
    observations: int = 100
    base_us: float = 50.0            # time of methods 1..m-1 before effects; method 0 takes base_us * true_speedup
    true_speedup: float = 1.2        # method 0 (the baseline) is this much slower than the others
    spread: float = 0.05             # methods 1..m-1 spread evenly over [-spread/2, spread/2] in log time (m > 2)
    shared_drift_sd: float = 0.0     # iid N(0, sd) log shift per round, shared by all methods of that round
    shared_trend: float = 0.0        # linear log ramp from 0 (first round) to this (last round), shared
    shared_step: float = 0.0         # log step added to all methods from round rounds//2 on
    method_drift_sd: float = 0.0     # per-method stationary AR(1) log drift across rounds: marginal sd
    method_drift_rho: float = 0.9    # its lag-1 autocorrelation per round
    first_position: float = 0.0      # extra log time of the method at position 0 of a round
    carry_sd: float = 0.0            # log effect of each ordered (cyclic predecessor, method) pair, N(0, sd)
    noise: float = 0.02              # per-observation log sd
    tail_df: float = 0.0             # if > 0: log noise is noise * Student-t(tail_df) instead of normal
    spikes: float = 0.0              # share of observations multiplied by SPIKE_FACTOR (outliers)
    bad_round: float = 0.0           # if > 0: one round of method 1 (uniform per session) is multiplied by 1 + this
    bimodal_share: float = 0.0       # per (method, round): probability the round is in a slow state ...
    bimodal_size: float = 0.0        # ... adding this log amount to every observation of that (method, round)
    grid_ns: float = 0.0             # if > 0: observations read as CUDA event intervals on this grid (ns)

    def method_log_us(self) -> np.ndarray:
        """mu_i: method 0 is the baseline, true_speedup slower; methods 1..m-1 are spread around base_us."""
        m = self.methods
        mu = np.full(m, np.log(self.base_us))
        if m > 2:
            mu[1:] += self.spread * np.arange(m - 1) / max(1, m - 2) - self.spread / 2
        mu[0] = np.log(self.base_us * self.true_speedup)
        return mu

    def shared_balanced(self) -> np.ndarray:
        """The deterministic shared parts per round (trend + step); they stay in the truth as their mean."""
        r = np.arange(self.rounds)
        trend = self.shared_trend * r / (self.rounds - 1) if self.rounds > 1 else np.zeros(self.rounds)
        return trend + self.shared_step * (r >= self.rounds // 2)


@dataclass(frozen=True)
class Sessions:
    """Simulated sessions and the truth they were drawn around."""

    observations: np.ndarray  # [sessions, methods, rounds, observations], microseconds, float64, all > 0
    log_speedup: np.ndarray   # [sessions, methods, methods]: true log(time_a / time_b)
    log_latency: np.ndarray   # [sessions, methods]: true log latency (log microseconds)


def _layout(orders: list[tuple[int, ...]], e: Effects) -> tuple[np.ndarray, np.ndarray]:
    """first[i, r]: method i opens round r; pred[i, r]: its cyclic predecessor (the last method
    for position 0, since the round's order repeats for every observation)."""
    if len(orders) != e.rounds:
        raise ValueError(f"{len(orders)} orders for {e.rounds} rounds")
    m = e.methods
    first = np.zeros((m, e.rounds), dtype=bool)
    pred = np.zeros((m, e.rounds), dtype=np.intp)
    for r, order in enumerate(orders):
        if sorted(order) != list(range(m)):
            raise ValueError(f"round {r}: order {order} is not a permutation of range({m})")
        first[order[0], r] = True
        for k, i in enumerate(order):
            pred[i, r] = order[k - 1]
    return first, pred


def _check(e: Effects, sessions: int) -> None:
    if e.methods < 1 or e.rounds < 1 or e.observations < 1 or sessions < 1:
        raise ValueError("methods, rounds, observations and sessions must be at least 1")
    if not 0.0 <= e.spikes <= 1.0 or not 0.0 <= e.bimodal_share <= 1.0:
        raise ValueError("spikes and bimodal_share are probabilities")
    if not -1.0 <= e.method_drift_rho <= 1.0:
        raise ValueError("method_drift_rho must lie in [-1, 1]")
    if e.bad_round > 0 and e.methods < 2:
        raise ValueError("bad_round applies to method 1, so it needs at least two methods")
    if e.grid_ns > 0 and np.exp(e.method_log_us().min()) < MIN_GRID_STEPS * e.grid_ns / 1000:
        raise ValueError(f"base times must span at least {MIN_GRID_STEPS} grid steps of {e.grid_ns} ns")


def _truth(e: Effects, first: np.ndarray, carry_ir: np.ndarray) -> np.ndarray:
    """log_latency [S, m]: mu + the session's round mean of position, carry-over and shared
    trend/step, + the expected bimodal shift. Excludes zero-mean random parts (shared drift, method
    drift, noise) and outliers (spikes, bad round)."""
    balanced = e.first_position * first.mean(axis=1) + carry_ir.mean(axis=2)  # [S, m]
    return (e.method_log_us() + balanced + e.shared_balanced().mean()
            + e.bimodal_share * e.bimodal_size)


def _quantise(t: np.ndarray, grid_us: float, rng: np.random.Generator) -> np.ndarray:
    """A CUDA event interval of true length t starting at a uniform phase u in [0, g): it reads
    g * (floor((u + t) / g) - floor(u / g)), floor or ceil of t / g, equal to t on average."""
    u = rng.uniform(0.0, grid_us, size=t.shape)
    q = grid_us * (np.floor((u + t) / grid_us) - np.floor(u / grid_us))
    # Only a far-fetched noise draw (t below one step) reads 0; a timer shows such an interval as one step.
    return np.maximum(q, grid_us)


def simulate(e: Effects, orders: list[tuple[int, ...]], sessions: int, rng: np.random.Generator) -> Sessions:
    """Draw ``sessions`` independent sessions run in ``orders`` (one order per round)."""
    _check(e, sessions)
    first, pred = _layout(orders, e)
    S, m, R, n = sessions, e.methods, e.rounds, e.observations

    # Per (session, method, round) log parts, [S, m, R].
    carry = rng.normal(0.0, e.carry_sd, size=(S, m, m)) if e.carry_sd > 0 else np.zeros((S, m, m))
    carry[:, np.arange(m), np.arange(m)] = 0.0  # no pair with itself (m == 1)
    carry_ir = carry[:, pred, np.arange(m)[:, None]]  # carry[s, pred[i, r], i]
    shared = e.shared_balanced()[None, :] + (rng.normal(0.0, e.shared_drift_sd, size=(S, R))
                                             if e.shared_drift_sd > 0 else 0.0)
    drift = np.zeros((S, m, R))
    if e.method_drift_sd > 0:
        z = rng.standard_normal((S, m, R))
        drift[..., 0] = e.method_drift_sd * z[..., 0]
        innovation = np.sqrt(1.0 - e.method_drift_rho ** 2) * e.method_drift_sd
        for r in range(1, R):
            drift[..., r] = e.method_drift_rho * drift[..., r - 1] + innovation * z[..., r]
    bimodal = e.bimodal_size * (rng.random((S, m, R)) < e.bimodal_share) if e.bimodal_share > 0 else 0.0
    per_round = (e.method_log_us()[None, :, None] + shared[:, None, :] + drift
                 + e.first_position * first[None] + carry_ir + bimodal)

    # Per observation, [S, m, R, n].
    if e.tail_df > 0:
        eps = e.noise * rng.standard_t(e.tail_df, size=(S, m, R, n))
    else:
        eps = rng.normal(0.0, e.noise, size=(S, m, R, n))
    if e.spikes > 0:
        eps += np.log(SPIKE_FACTOR) * (rng.random((S, m, R, n)) < e.spikes)
    if e.bad_round > 0:
        bad = rng.integers(0, R, size=S)
        eps[np.arange(S), 1, bad, :] += np.log1p(e.bad_round)
    eps += per_round[..., None]
    t = np.exp(eps, out=eps)
    if e.grid_ns > 0:
        t = _quantise(t, e.grid_ns / 1000.0, rng)  # drawn last, so the same seed gives the same true times

    log_latency = _truth(e, first, carry_ir)
    return Sessions(observations=t, log_speedup=log_latency[:, :, None] - log_latency[:, None, :],
                    log_latency=log_latency)


def _williams(m: int) -> list[tuple[int, ...]]:
    """Williams rows (first row 0, 1, m-1, 2, m-2, ...; mirrored rows for odd m), for the self-check."""
    row, low, high = [0], 1, m - 1
    while len(row) < m:
        if len(row) % 2:
            row.append(low)
            low += 1
        else:
            row.append(high)
            high -= 1
    rows = [tuple((x + i) % m for x in row) for i in range(m)]
    return rows + [tuple(reversed(r)) for r in rows] if m % 2 and m > 1 else rows


def _orders(m: int, rounds: int) -> list[tuple[int, ...]]:
    rows = _williams(m)
    return [rows[r % len(rows)] for r in range(rounds)]


def _self_check() -> None:
    """Print sanity statistics: each should read close to what it is compared with."""
    import time

    rng = np.random.default_rng(1)
    m, R, n, S = 4, 40, 100, 400
    orders = _orders(m, R)

    start = time.perf_counter()
    e = Effects(methods=m, rounds=R, observations=n, first_position=0.03, carry_sd=0.05, shared_trend=0.1,
                shared_step=0.05, bimodal_share=0.2, bimodal_size=0.1, shared_drift_sd=0.0)
    s = simulate(e, orders, S, rng)
    took = time.perf_counter() - start
    print(f"timing: {S} x {m} x {R} x {n} in {took:.2f} s")
    resid = np.log(s.observations).mean(axis=(2, 3)) - s.log_latency
    mc = np.sqrt(e.noise ** 2 / (R * n) + e.bimodal_size ** 2 * e.bimodal_share * (1 - e.bimodal_share) / R)
    print(f"balanced effects: mean(log obs) - log_latency: mean {resid.mean():+.5f} "
          f"(MC se {mc / np.sqrt(resid.size):.5f}), sd {resid.std():.5f} (expected {mc:.5f})")
    print(f"  true log speedup 0 over 1: mean {s.log_speedup[:, 0, 1].mean():.4f}, "
          f"sd over sessions {s.log_speedup[:, 0, 1].std():.4f} (carry/position vary per session)")

    e = Effects(methods=m, rounds=R, observations=n, method_drift_sd=0.1, method_drift_rho=0.8, shared_drift_sd=0.05)
    s = simulate(e, orders, S, rng)
    d = np.log(s.observations).mean(axis=3)[:, 1, :] - s.log_latency[:, 1, None]
    rho = (d[:, 1:] * d[:, :-1]).sum() / (d[:, :-1] ** 2).sum()
    print(f"drift: lag-1 autocorrelation of method-1 log round means, net of shared drift: "
          f"{_net_rho(s):.3f} (rho {e.method_drift_rho}); raw incl. shared drift {rho:.3f}")
    print(f"  truth identical over sessions (drift excluded): {np.ptp(s.log_latency, axis=0).max():.2e}")
    print(f"  marginal sd of method drift at first/last round: {_method_sd(s)[0]:.4f} / {_method_sd(s)[1]:.4f} "
          f"(sd {e.method_drift_sd})")

    e = Effects(methods=2, rounds=20, observations=100, grid_ns=500.0, base_us=5.0, noise=0.05)
    exact = simulate(replace(e, grid_ns=0.0), _orders(2, 20), S, np.random.default_rng(7))
    grid = simulate(e, _orders(2, 20), S, np.random.default_rng(7))
    diff = grid.observations - exact.observations
    print(f"grid 500 ns: mean(quantised) - mean(exact) = {diff.mean() * 1000:+.3f} ns "
          f"(MC se {diff.std() / np.sqrt(diff.size) * 1000:.3f} ns), max |diff| {np.abs(diff).max() * 1000:.1f} ns")

    e = Effects(methods=3, rounds=20, observations=50, bad_round=0.5, noise=0.02)
    s = simulate(e, _orders(3, 20), S, rng)
    med = np.median(np.log(s.observations[:, 1]), axis=2)
    excess = med - s.log_latency[:, 1, None]
    slow = excess > np.log1p(e.bad_round) / 2
    print(f"bad round: slow rounds per session min {slow.sum(1).min()} max {slow.sum(1).max()}; "
          f"their ratio {np.exp(excess[slow]).mean():.4f} (1 + bad_round = {1 + e.bad_round})")


def _net_rho(s: Sessions) -> float:
    """Method 1's drift, with the shared drift removed by differencing against method 2 (both AR(1)
    with the same rho, so the difference is too)."""
    lr = np.log(s.observations).mean(axis=3)
    d = (lr[:, 1] - lr[:, 2]) - (s.log_latency[:, 1] - s.log_latency[:, 2])[:, None]
    return float((d[:, 1:] * d[:, :-1]).sum() / (d[:, :-1] ** 2).sum())


def _method_sd(s: Sessions) -> tuple[float, float]:
    lr = np.log(s.observations).mean(axis=3)
    d = (lr[:, 1] - lr[:, 2]) - (s.log_latency[:, 1] - s.log_latency[:, 2])[:, None]
    return float(d[:, 0].std() / np.sqrt(2)), float(d[:, -1].std() / np.sqrt(2))


if __name__ == "__main__":
    _self_check()
