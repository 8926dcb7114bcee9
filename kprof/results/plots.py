"""Plots of Results (matplotlib, optional): round-median drift, speedup forest, stage medians,
a chain's marginal launch costs; for a sweep, latency against context length (scaling), and
error against fp64 dense attention against latency (the accuracy-latency frontier)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from kprof.core.atomic import atomic_path
from kprof.core.errors import KprofError
from kprof.results.result import Result


def plot_results(results: list[Result], path: str | Path) -> Path:
    """One PNG: per Result, round means over rounds (drift) and speedups (or stages) with intervals."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise KprofError("plots need matplotlib: pip install 'kprof[plot]'") from None
    # a sweep adds a row of its scaling and frontier panels; one that has only one spans the row
    extra = [(res, [draw for draw, rows in ((_scaling, _scaling_rows), (_frontier, _frontier_rows),
                                            (_roofline, _roofline_rows)) if rows(res)])
             for res in results]
    extra = [(res, panels) for res, panels in extra if panels]
    fig = plt.figure(figsize=(12, 3.6 * (len(results) + len(extra))))
    grid = fig.add_gridspec(len(results) + len(extra), 2)
    axes = [(fig.add_subplot(grid[i, 0]), fig.add_subplot(grid[i, 1])) for i in range(len(results))]
    for i, (res, panels) in enumerate(extra, start=len(results)):
        spots = [grid[i, :]] if len(panels) == 1 else [grid[i, 0], grid[i, 1]]
        for draw, spot in zip(panels, spots):
            draw(fig.add_subplot(spot), res)
    for (ax_drift, ax_right), res in zip(axes, results):
        for label, s in res.summaries.items():
            medians = [float("nan") if m is None else m for m in s.round_summaries_us]
            ax_drift.plot(range(1, len(medians) + 1), medians, marker="o", ms=3, label=_shown(res, label))
        ax_drift.set_xlabel("round")
        ax_drift.set_ylabel("round mean (us)")
        # a sweep's name joins its workloads: wrap it rather than run past the panel
        ax_drift.set_title("\n".join(textwrap.wrap(f"{res.workload.get('name')}: round means ({res.mode})", 70)),
                           fontsize=9)
        ax_drift.legend(fontsize=7)
        if res.kind == "compare" and res.speedups:
            labels = [_shown(res, s.candidate) for s in res.speedups]
            est = [s.interval.estimate for s in res.speedups]
            err = [[e - (s.interval.low if s.interval.has_interval else e) for e, s in zip(est, res.speedups)],
                   [(s.interval.high if s.interval.has_interval else e) - e for e, s in zip(est, res.speedups)]]
            ax_right.errorbar(est, range(len(labels)), xerr=err, fmt="o", capsize=4)
            ax_right.axvline(1.0, color="grey", lw=1, ls="--")
            ax_right.set_yticks(range(len(labels)), labels, fontsize=8)
            against = ("each workload's baseline" if res.workload.get("points")
                       else res.speedups[0].baseline)
            ax_right.set_xlabel(f"speedup vs {against} (95% CI)")
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
            ax_right.set_xlabel("median of round means (us); stages are not additive")
            ax_right.set_title("stages", fontsize=9)
    fig.tight_layout()
    path = Path(path)
    with atomic_path(path) as tmp:  # a reader never sees half a picture
        fig.savefig(tmp, dpi=120, format=path.suffix.lstrip(".").lower())
    plt.close(fig)
    return path


def _shown(res: Result, label: str) -> str:
    """A row's label as plotted: FAIL marks one whose output failed validation or that faulted."""
    rec = next((m for m in res.methods if m.label == label), None)
    return f"{label} FAIL" if rec is not None and (not rec.validation.passed or rec.faults) else label


def _family(rec) -> str:
    """The method a row varies: ``santa:s=64`` -> ``santa``; ``pkg.mod:fn`` stays whole."""
    name = rec.method.split("@")[0]
    return name.rsplit(":", 1)[0] if "=" in name.rsplit(":", 1)[-1] else name


def _has_median(res: Result, label: str) -> bool:
    """False for a row that was not timed as a whole (stages) or whose observations were all bad."""
    if label not in res.summaries:
        return False
    m = res.summaries[label].median_us.estimate
    return m is not None and m == m


def _tokens(res: Result) -> dict[str, int]:
    return {w["name"]: (w.get("shape") or {}).get("n") for w in res.workload.get("points", [])}


def _scaling_rows(res: Result) -> dict[str, list[tuple[int, object]]]:
    """Per row label without its workload: (context tokens, Summary) over the sweep's workloads."""
    tokens = _tokens(res)
    if len(set(tokens.values())) < 2:
        return {}
    rows: dict[str, list] = {}
    for rec in res.methods:
        if rec.workload in tokens and tokens[rec.workload] and _has_median(res, rec.label):
            rows.setdefault(rec.label.removesuffix(f" @ {rec.workload}"), []).append(
                (tokens[rec.workload], res.summaries[rec.label]))
    return rows


def _frontier_rows(res: Result) -> list:
    """Rows with an error against fp64 dense attention, when some method was varied or is sparse."""
    rows = [rec for rec in res.methods if rec.validation.error_vs_dense is not None and _has_median(res, rec.label)]
    varied = len({_family(r) for r in rows}) < len(rows)
    sparse = any((r.validation.error_vs_dense or 0) > 1e-2 for r in rows)
    return rows if len(rows) >= 2 and (varied or sparse) else []


def _roofline_rows(res: Result) -> list:
    """Rows whose FLOPs and bytes per call are both known, with a time: where they sit on the roofline."""
    return [rec for rec in res.methods if rec.flops_per_call and rec.bytes_per_call and _has_median(res, rec.label)]


def _roofline(ax, res: Result) -> None:
    """Achieved TFLOP/s against arithmetic intensity (FLOP per byte), under the measured roofs:
    the copy peak's slope and the matmul peak of the dtype, where ``kprof env --measure-peak`` ran."""
    import numpy as np

    rows = _roofline_rows(res)
    points = [(rec.flops_per_call / rec.bytes_per_call, res.compute_rate(rec.label)[0], rec) for rec in rows]
    for ai, tflops, rec in points:
        ax.plot(ai, tflops, "o", ms=6, label=_shown(res, rec.label))
    gbs = res.environment.get("copy_peak_gbs")
    dtype = (res.workload.get("shape") or {}).get("dtype") or res.workload.get("dtype")
    peak = (res.environment.get("matmul_peak_tflops") or {}).get(dtype)
    lo, hi = min(p[0] for p in points) / 4, max(p[0] for p in points) * 4
    x = np.geomspace(lo, hi, 200)
    if gbs:
        roof = gbs * x / 1e3  # GB/s x FLOP/byte = GFLOP/s -> TFLOP/s
        ax.plot(x, np.minimum(roof, peak) if peak else roof, "k--", lw=1, label="measured roofs")
    elif peak:
        ax.axhline(peak, color="k", ls="--", lw=1, label="measured matmul peak")
    ax.set_xscale("log")
    ax.set_yscale("log")
    _plain_log_ticks(ax.xaxis)
    _plain_log_ticks(ax.yaxis)
    ax.set_xlabel("arithmetic intensity (FLOP per byte)")
    ax.set_ylabel("TFLOP/s")
    roofs = "" if gbs or peak else " (roofs not measured: kprof env --measure-peak)"
    ax.set_title(f"{res.workload.get('name')}: roofline{roofs}", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")


def _plain_log_ticks(axis) -> None:
    """Tick labels as plain numbers (20, 50, 100), not 2x10^1, on a log axis."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(FuncFormatter(lambda v, _: ""))


def _scaling(ax, res: Result) -> None:
    from matplotlib.ticker import FuncFormatter

    rows = _scaling_rows(res)
    for label, points in rows.items():
        points.sort(key=lambda p: p[0])
        n = [p[0] for p in points]
        est = [p[1].median_us.estimate for p in points]
        low = [e - (p[1].median_us.low if p[1].median_us.has_interval else e) for e, p in zip(est, points)]
        high = [(p[1].median_us.high if p[1].median_us.has_interval else e) - e for e, p in zip(est, points)]
        ax.errorbar(n, est, yerr=[low, high], marker="o", ms=4, capsize=3, label=label)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1024:g}K" if v >= 1024 else f"{v:g}"))
    ax.set_yscale("log")
    _plain_log_ticks(ax.yaxis)
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel("median of round means (us, 95% CI)")
    ax.set_title(f"scaling ({res.mode})", fontsize=9)
    ax.legend(fontsize=7)


def _frontier(ax, res: Result) -> None:
    rows = _frontier_rows(res)
    markers = "osD^v<>"
    workloads = list(dict.fromkeys(r.workload for r in rows))
    families: dict[str, list] = {}
    for r in rows:
        families.setdefault((_family(r), r.workload), []).append(r)
    for (family, workload), recs in families.items():
        recs.sort(key=lambda r: res.summaries[r.label].median_us.estimate)
        x = [res.summaries[r.label].median_us.estimate for r in recs]
        y = [max(r.validation.error_vs_dense, 1e-12) for r in recs]
        tag = family + (f" @ {workload}" if workload else "")
        ax.plot(x, y, marker=markers[workloads.index(workload) % len(markers)], ms=5, label=tag)
        for r, xi, yi in zip(recs, x, y):
            option = r.method.split("@")[0].removeprefix(family).lstrip(":,")
            if option:
                ax.annotate(option, (xi, yi), fontsize=6, xytext=(3, 3), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    _plain_log_ticks(ax.xaxis)
    ax.set_xlabel("median of round means (us)")
    ax.set_ylabel("relative L2 error vs fp64 dense attention")
    ax.set_title("accuracy-latency frontier (lower left is better)", fontsize=9)
    ax.legend(fontsize=7)
