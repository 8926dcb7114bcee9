"""Coverage of kprof's intervals on simulated sessions, and of the precision stop.

Sessions come from :mod:`tests.measure.sessions` (written from the spec, without kprof's
estimators), in the round orders of kprof's balanced design. Every case is run through the same
functions ``kprof compare`` uses: round summaries and bad rounds (:mod:`kprof.measure.rounds`,
vectorised over sessions here), then per session the speedup of every candidate against the
baseline and the latency of every method (:mod:`kprof.measure.stats`).

Rerun the table in ``docs/statistics.md``::

    python -m tests.measure.calibration            # 1,000 sessions a case
    python -m tests.measure.calibration --sessions 400 --only drift
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, replace

import numpy as np

from kprof.measure.complete_cycles import CompleteCycles
from kprof.measure.design import BalancedDesign
from kprof.measure.precision import PrecisionStop
from kprof.measure.rounds import bad_rounds, fenced_mean, positions_of
from kprof.measure.stats import RoundTable, method_latency, speedup
from tests.measure.sessions import Effects, simulate

# What the H200 shows (docs/statistics.md): 2% observation noise, a 3% first-position effect,
# carry-over, 1% shared drift per round, spikes.
H200 = Effects(noise=0.02, first_position=0.03, carry_sd=0.005, shared_drift_sd=0.01, spikes=0.005)


def _cases() -> dict[str, Effects]:
    cases = {}
    for m in (2, 3, 4):
        for rounds in (10, 20, 40):
            if m == 4 and rounds == 10:
                continue  # 4 methods: a pair cycle is a whole 4-round cycle, so 20 rounds give the first interval
            tag = f"{m} methods, {rounds} rounds"
            cases[f"method AR(1) drift 0.5%, {tag}"] = replace(H200, methods=m, rounds=rounds, method_drift_sd=0.005)
    for rounds in (10, 20, 40):
        cases[f"method AR(1) drift 1% + all effects, {rounds} rounds"] = replace(
            H200, rounds=rounds, method_drift_sd=0.01, tail_df=3, bimodal_share=0.2, bimodal_size=0.01)
    cases["shared drift with a 5% mid-run step, 20 rounds"] = replace(H200, shared_step=0.05, shared_trend=0.02)
    cases["position 3% and carry-over 1%, 3 methods, 24 rounds"] = replace(H200, methods=3, rounds=24, carry_sd=0.01)
    cases["position 3% and carry-over 1%, 4 methods, 40 rounds"] = replace(H200, methods=4, rounds=40, carry_sd=0.01)
    cases["heavy tails (t3) and 2% spikes, 20 rounds"] = replace(H200, tail_df=3, spikes=0.02)
    cases["one round 30% slower, 20 rounds"] = replace(H200, bad_round=0.3)
    cases["32 ns timer grid, 4-5 us kernels, 20 rounds"] = replace(
        H200, base_us=4.2, true_speedup=1.08, noise=0.004, shared_drift_sd=0.002, grid_ns=32, observations=200)
    cases["bimodal round states (30% of rounds 2% slower), 20 rounds"] = replace(
        H200, bimodal_share=0.3, bimodal_size=0.02)
    cases["no effects but noise, 10 rounds"] = Effects(rounds=10, noise=0.02)
    return cases


CASES = _cases()


@dataclass(frozen=True)
class Coverage:
    """Share of intervals that held the truth, over sessions and pairs (or methods), with its
    Monte Carlo standard error, the median relative half-width and how many had no interval."""

    speedup: float
    speedup_se: float
    half_width: float
    latency: float
    latency_se: float
    missing: int

    def row(self, name: str) -> str:
        return (f"| {name} | {100 * self.speedup:.1f} +- {100 * self.speedup_se:.1f} | {100 * self.half_width:.2f}% "
                f"| {100 * self.latency:.1f} +- {100 * self.latency_se:.1f} |")


def tables(obs: np.ndarray, orders: list[tuple[int, ...]]) -> list[RoundTable]:
    """Round tables of ``obs[s, i, r, j]``, as :func:`kprof.measure.stats.round_table` builds one."""
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.log(fenced_mean(obs))
    bad = bad_rounds(y, positions=positions_of(orders, obs.shape[1]))
    return [RoundTable(y[s], bad[s]) for s in range(obs.shape[0])]


def _share(hits: list[bool]) -> tuple[float, float]:
    p = float(np.mean(hits)) if hits else math.nan
    return p, math.sqrt(p * (1 - p) / max(len(hits), 1))


def coverage(e: Effects, sessions: int = 1000, seed: int = 0, level: float = 0.95) -> Coverage:
    design = BalancedDesign.williams(e.methods)
    rounds = design.whole_cycles(e.rounds)
    e = replace(e, rounds=rounds)
    orders = design.orders(rounds)
    sim = simulate(e, orders, sessions, np.random.default_rng(seed))
    sp_hits, lat_hits, widths, missing = [], [], [], 0
    for s, table in enumerate(tables(sim.observations, orders)):
        for c in range(1, e.methods):
            iv = speedup(table, orders, 0, c, design.cycle, level)
            if not iv.has_interval:
                missing += 1
                continue
            sp_hits.append(iv.contains(math.exp(sim.log_speedup[s, 0, c])))
            widths.append(iv.half_width_rel)
        for i in range(e.methods):
            iv = method_latency(table, i, e.methods, level)
            if iv.has_interval:
                lat_hits.append(iv.contains(math.exp(sim.log_latency[s, i])))
    (sp, sp_se), (lat, lat_se) = _share(sp_hits), _share(lat_hits)
    return Coverage(sp, sp_se, float(np.median(widths)) if widths else math.nan, lat, lat_se, missing)


@dataclass(frozen=True)
class StoppedCoverage:
    coverage: float
    se: float
    median_rounds: float
    reached: float  # share of sessions that met the target before the round cap


def stopped_coverage(e: Effects, target: float, sessions: int = 400, seed: int = 0, max_rounds: int = 200,
                     level: float = 0.95) -> StoppedCoverage:
    """Coverage of the speedup interval of pair (0, 1) where :class:`PrecisionStop` stops the run
    (looks at the harness's schedule; a session that never meets the target stops at ``max_rounds``)."""
    design = BalancedDesign.williams(e.methods)
    rounds = design.whole_cycles(max_rounds)
    orders = design.orders(rounds)
    sim = simulate(replace(e, rounds=rounds), orders, sessions, np.random.default_rng(seed))
    pairs = [(0, c) for c in range(1, e.methods)]
    hits, used, reached = [], [], 0
    for s in range(sessions):
        stop = PrecisionStop(target, pairs, level, max_time_s=math.inf)
        r = stop.first_look(design)
        while True:
            look = stop.look(sim.observations[s, :, :r], orders[:r], design.cycle)
            if look.done or stop.next_look(r, design.cycle) > rounds:
                break
            r = stop.next_look(r, design.cycle)
        reached += look.done
        table = tables(sim.observations[s:s + 1, :, :r], orders[:r])[0]
        iv = speedup(table, orders[:r], 0, 1, design.cycle, stop.level)
        hits.append(iv.contains(math.exp(sim.log_speedup[s, 0, 1])))
        used.append(r)
    p, se = _share(hits)
    return StoppedCoverage(p, se, float(np.median(used)), reached / sessions)


STOP_CASES = {
    "H200 effects, target 0.5%": (H200, 0.005),
    "H200 effects, target 0.25%": (H200, 0.0025),
    "method AR(1) drift 0.3% (rho 0.9), target 0.5%": (replace(H200, method_drift_sd=0.003), 0.005),
    "method AR(1) drift 0.3% (rho 0.5), 3 methods, target 0.5%": (
        replace(H200, methods=3, method_drift_sd=0.003, method_drift_rho=0.5), 0.005),
    "32 ns grid, 4-5 us kernels, target 0.25%": (CASES["32 ns timer grid, 4-5 us kernels, 20 rounds"], 0.0025),
}


@dataclass(frozen=True)
class FilledCoverage:
    """The default fixed-round run with :class:`CompleteCycles`: coverage of pair (0, 1) where it
    has an interval, the same at the default rounds alone, and how often each had none."""

    coverage: float
    se: float
    fixed_coverage: float
    median_rounds: float
    missing: float
    missing_fixed: float


def filled_coverage(e: Effects, sessions: int = 400, seed: int = 0, level: float = 0.95, min_rounds: int = 12,
                    min_pair_cycles: int = 6) -> FilledCoverage:
    """Sessions run as ``kprof compare``'s CPU default: its rounds, then cycles added while bad
    rounds leave the speedup without MIN_CYCLES usable pair cycles, up to twice the rounds."""
    design = BalancedDesign.williams(e.methods)
    pairs = [(0, c) for c in range(1, e.methods)]
    first = design.default_rounds(min_rounds, min_pair_cycles)
    orders = design.orders(2 * first)
    sim = simulate(replace(e, rounds=2 * first), orders, sessions, np.random.default_rng(seed))
    hits, fixed_hits, used, missing, missing_fixed = [], [], [], 0, 0
    truth = np.exp(sim.log_speedup[:, 0, 1])
    for s in range(sessions):
        rule = CompleteCycles(pairs, level, min_rounds, min_pair_cycles)
        r = rule.first_look(design)
        while True:
            look = rule.look(sim.observations[s, :, :r], orders[:r], design.cycle)
            if look.done or rule.next_look(r, design.cycle) == r:
                break
            r = rule.next_look(r, design.cycle)
        for rounds, out in ((first, fixed_hits), (r, hits)):
            iv = speedup(tables(sim.observations[s:s + 1, :, :rounds], orders[:rounds])[0], orders[:rounds], 0, 1,
                         design.cycle, level)
            if iv.has_interval:
                out.append(iv.contains(truth[s]))
            elif out is fixed_hits:
                missing_fixed += 1
            else:
                missing += 1
        used.append(r)
    p, se = _share(hits)
    return FilledCoverage(p, se, _share(fixed_hits)[0], float(np.median(used)), missing / sessions,
                          missing_fixed / sessions)


# The CPU embedded default's host clock: 3 observations a round, 5% noise, and rounds where one
# method is far slower (another process, the allocator, the interpreter), which the bad-round
# rule leaves out.
CPU_HOST = Effects(observations=3, noise=0.05, shared_drift_sd=0.02, bimodal_share=0.12, bimodal_size=0.4)
FILL_CASES = {
    "CPU host clock, 12% of (method, round)s 50% slower": CPU_HOST,
    "CPU host clock, 3 methods": replace(CPU_HOST, methods=3),
    "H200 effects, one round 30% slower": replace(H200, bad_round=0.3),
}


def main() -> None:  # pragma: no cover - the table a reviewer reruns
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000, help="sessions per case (default 1000)")
    parser.add_argument("--only", default="", help="only cases whose name contains this")
    args = parser.parse_args()
    print("| case | speedup coverage % (+- MC se) | median half-width | latency coverage % |")
    print("|---|---|---|---|")
    for name, e in CASES.items():
        if args.only in name:
            print(coverage(e, args.sessions).row(name), flush=True)
    print("\n| precision stop | coverage % (+- MC se) | median rounds | target reached |")
    print("|---|---|---|---|")
    for name, (e, target) in STOP_CASES.items():
        if args.only in name:
            c = stopped_coverage(e, target, max(args.sessions // 2, 100))
            print(f"| {name} | {100 * c.coverage:.1f} +- {100 * c.se:.1f} | {c.median_rounds:g} | "
                  f"{100 * c.reached:.0f}% |", flush=True)
    print("\n| default rounds, cycles added for bad rounds | coverage % (+- MC se) | at the default rounds alone "
          "| median rounds | no interval | no interval at the default rounds |")
    print("|---|---|---|---|---|---|")
    for name, e in FILL_CASES.items():
        if args.only in name:
            c = filled_coverage(e, max(args.sessions // 2, 100))
            print(f"| {name} | {100 * c.coverage:.1f} +- {100 * c.se:.1f} | {100 * c.fixed_coverage:.1f} | "
                  f"{c.median_rounds:g} | {100 * c.missing:.1f}% | {100 * c.missing_fixed:.1f}% |", flush=True)


if __name__ == "__main__":
    main()
