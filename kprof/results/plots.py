"""Plots of Results (matplotlib, optional): round-median drift, speedup forest, stage medians,
and a chain's marginal launch costs."""

from __future__ import annotations

from pathlib import Path

from kprof.core.errors import KprofError
from kprof.results.result import Result


def plot_results(results: list[Result], path: str | Path) -> Path:
    """One PNG: per Result, round medians over rounds (drift) and speedups (or stages) with intervals."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise KprofError("plots need matplotlib: pip install 'kprof[plot]'") from None
    fig, axes = plt.subplots(len(results), 2, figsize=(12, 3.6 * len(results)), squeeze=False)
    for (ax_drift, ax_right), res in zip(axes, results):
        for label, s in res.summaries.items():
            medians = [float("nan") if m is None else m for m in s.round_medians_us]
            ax_drift.plot(range(1, len(medians) + 1), medians, marker="o", ms=3, label=label)
        ax_drift.set_xlabel("round")
        ax_drift.set_ylabel("round median (us)")
        ax_drift.set_title(f"{res.workload.get('name')}: round medians ({res.mode})", fontsize=9)
        ax_drift.legend(fontsize=7)
        if res.kind == "compare" and res.speedups:
            labels = [s.candidate for s in res.speedups]
            est = [s.interval.estimate for s in res.speedups]
            err = [[e - (s.interval.low if s.interval.has_interval else e) for e, s in zip(est, res.speedups)],
                   [(s.interval.high if s.interval.has_interval else e) - e for e, s in zip(est, res.speedups)]]
            ax_right.errorbar(est, range(len(labels)), xerr=err, fmt="o", capsize=4)
            ax_right.axvline(1.0, color="grey", lw=1, ls="--")
            ax_right.set_yticks(range(len(labels)), labels, fontsize=8)
            ax_right.set_xlabel(f"speedup vs {res.speedups[0].baseline} (95% CI)")
            ax_right.set_title("speedup", fontsize=9)
        elif res.kind == "chain":  # one bar split into each launch's marginal cost: where the time goes
            left = 0.0
            for label, cost in res.chain_marginals_us().items():
                ax_right.barh(0, cost, left=left, label=label.split(" .. ")[-1])
                left += cost
            ax_right.set_yticks([])
            ax_right.set_xlabel("chain time (us), split by each launch's marginal cost")
            ax_right.set_title("chain", fontsize=9)
            ax_right.legend(fontsize=7, ncol=3)
        else:
            labels = list(res.summaries)
            ax_right.barh(range(len(labels)), [res.summaries[x].median_us.estimate for x in labels])
            ax_right.set_yticks(range(len(labels)), labels, fontsize=8)
            ax_right.set_xlabel("median of round medians (us); stages are not additive")
            ax_right.set_title("stages", fontsize=9)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
