"""Plots of Results (matplotlib, optional): round-mean drift, speedup forest, stage times,
a chain's marginal launch costs; for a sweep, latency against context length (scaling), error
against fp64 dense attention against latency (the accuracy-latency frontier), and the roofline.

Made to be read at a glance: legends beside the data rather than on it, point labels moved
apart until none overlaps another, times in plain microseconds (never a ``1e6`` offset), and a
row that failed validation or faulted drawn hollow and red with FAIL in its label.
"""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

from kprof.core.atomic import atomic_path
from kprof.core.errors import KprofError
from kprof.results.rows import chain_marginals_us, compute_rate, record
from kprof.results.schema import Result

FAIL_COLOUR = "#d62728"
POINT_LABEL = "kprof-point-label"  # gid of a point's annotation: the ones moved apart
LABEL_CHARS = 32  # legend and tick labels wrap at this many characters


def plot_results(results: list[Result], path: str | Path) -> Path:
    """One picture (.png, .pdf or .svg) of :func:`figure`, written atomically."""
    fig = figure(results)
    path = Path(path)
    with atomic_path(path) as tmp:  # a reader never sees half a picture
        fig.savefig(tmp, dpi=120, format=path.suffix.lstrip(".").lower())
    return path


def image(results: list[Result], fmt: str = "svg") -> bytes:
    """:func:`figure` as the bytes of a picture (``svg`` or ``png``), to embed in a page."""
    buf = io.BytesIO()
    figure(results).savefig(buf, format=fmt, dpi=100)
    return buf.getvalue()


def figure(results: list[Result]):
    """A matplotlib Figure: per Result its round means (drift) beside its speedups (or stages, or
    chain), then a sweep's scaling, frontier and roofline panels, two to a row."""
    Figure, Canvas = _matplotlib()
    layout = []  # rows of (draw, result); a row of one panel spans the figure
    for res in results:
        layout.append([(_drift, res), (_speedups if res.kind == "compare" and res.speedups else
                                        _chain if res.kind == "chain" else _stages, res)])
        extra = [draw for draw, rows in ((_scaling, _scaling_rows), (_frontier, _frontier_rows),
                                         (_roofline, _roofline_rows)) if rows(res)]
        layout += [[(draw, res) for draw in extra[i:i + 2]] for i in range(0, len(extra), 2)]
    fig = Figure(figsize=(15, 4.2 * len(layout)), layout="constrained")
    Canvas(fig)
    grid = fig.add_gridspec(len(layout), 2)
    for i, row in enumerate(layout):
        spots = [grid[i, :]] if len(row) == 1 else [grid[i, 0], grid[i, 1]]
        for (draw, res), spot in zip(row, spots):
            draw(fig.add_subplot(spot), res)
    for ax in fig.axes:
        _plain(ax)
    _separate_labels(fig)
    return fig


def unavailable() -> str:
    """Why no plot can be drawn here (matplotlib is not installed), or ``""`` when one can."""
    try:
        _matplotlib()
    except KprofError as exc:
        return str(exc)
    return ""


def _matplotlib():
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise KprofError("plots need matplotlib: pip install 'kprof[plot]'") from None
    return Figure, FigureCanvasAgg


def _failed(res: Result, label: str) -> bool:
    rec = record(res, label)
    return rec is not None and (not rec.validation.passed or bool(rec.faults))


def _shown(res: Result, label: str) -> str:
    """A row's label as plotted: FAIL marks one whose output failed validation or that faulted."""
    return f"{label} FAIL" if _failed(res, label) else label


def _wrap(label: str, width: int = LABEL_CHARS) -> str:
    """A long label on several lines, broken after its commas and spaces (a method spec's options)."""
    lines, line = [], ""
    for part in label.replace(",", ", ").split(" "):
        part = part.replace(", ", ",")
        if line and len(line) + 1 + len(part) > width:
            lines.append(line)
            line = part
        else:
            line = f"{line}{'' if not line or line.endswith(',') else ' '}{part}"
    return "\n".join(lines + [line])


def _title(ax, text: str, failed: bool = False) -> None:
    ax.set_title("\n".join(textwrap.wrap(text, 60)) + ("  — FAIL" if failed else ""), fontsize=9,
                 color=FAIL_COLOUR if failed else "black")


def _legend(ax, **kw) -> None:
    """The legend beside the axes, right of the data, never on it."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize=7, frameon=False, **kw)


def _plain(ax) -> None:
    """Linear axes as plain numbers: no offset (``+3.045e1``) and no ``1e6`` multiplier."""
    from matplotlib.ticker import ScalarFormatter

    for axis in (ax.xaxis, ax.yaxis):
        if axis.get_scale() == "linear" and isinstance(axis.get_major_formatter(), ScalarFormatter):
            formatter = ScalarFormatter(useOffset=False)
            formatter.set_scientific(False)
            axis.set_major_formatter(formatter)


def _plain_log_ticks(axis) -> None:
    """Tick labels as plain numbers (20, 50, 100), not 2x10^1, on a log axis."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(FuncFormatter(lambda v, _: ""))


def _error_axis(ax, values: list[float]) -> None:
    """Errors (y) on a log axis where they span a decade or more, else on a linear one; labelled
    ``0.000224`` or ``1e-05``, never with an offset or a multiplier."""
    from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

    if max(values) >= 10 * min(values):
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator())
        ax.yaxis.set_minor_formatter(NullFormatter())
    else:
        ax.yaxis.set_major_locator(MaxNLocator(5))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.3g}"))


def _drift(ax, res: Result) -> None:
    from matplotlib.ticker import MaxNLocator

    for label, s in res.summaries.items():
        means = [float("nan") if m is None else m for m in s.round_summaries_us]
        style = {"color": FAIL_COLOUR, "ls": "--", "mfc": "none"} if _failed(res, label) else {}
        ax.plot(range(1, len(means) + 1), means, marker="o", ms=3, label=_wrap(_shown(res, label)), **style)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("round")
    ax.set_ylabel("round mean (µs)")
    _title(ax, f"{res.workload.get('name')}: round means ({res.mode})")
    _legend(ax)


def _speedups(ax, res: Result) -> None:
    """Each speedup with its interval, first row on top as in the table."""
    for i, sp in enumerate(res.speedups):
        iv, bad = sp.interval, _failed(res, sp.candidate)
        err = [[iv.estimate - iv.low], [iv.high - iv.estimate]] if iv.has_interval else None
        colour = FAIL_COLOUR if bad else "C0"
        ax.errorbar([iv.estimate], [i], xerr=err, fmt="o", capsize=4, color=colour, mec=colour,
                    mfc="none" if bad else colour)
    ax.axvline(1.0, color="grey", lw=1, ls="--")
    ax.set_yticks(range(len(res.speedups)), [_wrap(_shown(res, sp.candidate)) for sp in res.speedups], fontsize=8)
    for tick, sp in zip(ax.get_yticklabels(), res.speedups):
        if _failed(res, sp.candidate):
            tick.set_color(FAIL_COLOUR)
    ax.set_ylim(len(res.speedups) - 0.5, -0.5)
    against = "each workload's baseline" if res.workload.get("points") else res.speedups[0].baseline
    level = int(round(res.protocol.get("level", 0.95) * 100))
    ax.set_xlabel(f"speedup = {against} time / method time ({level}% CI)")
    _title(ax, "speedup (right of the dashed line: faster)")


def _chain(ax, res: Result) -> None:
    """One bar split into each launch's marginal cost: where the time goes."""
    left = 0.0
    for label, cost in chain_marginals_us(res).items():
        ax.barh(0, cost, left=left, label=label.split(" .. ")[-1])
        left += cost
    ax.set_yticks([])
    ax.set_xlabel("chain time (µs), split by each launch's marginal cost")
    _title(ax, f"{res.methods[0].label} chain", _failed(res, res.methods[0].label))
    _legend(ax)


def _stages(ax, res: Result) -> None:
    labels = list(res.summaries)
    bad = bool(res.methods) and _failed(res, res.methods[0].label)
    ax.barh(range(len(labels)), [res.summaries[x].median_us.estimate for x in labels],
            color="none" if bad else "C0", edgecolor=FAIL_COLOUR if bad else "C0", hatch="//" if bad else None)
    ax.set_yticks(range(len(labels)), [_wrap(x) for x in labels], fontsize=8)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    ax.set_xlabel("median of round means (µs); stages are not additive")
    _title(ax, f"{res.methods[0].label if res.methods else ''} stages", bad)


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


def _scaling_rows(res: Result) -> dict[str, list[tuple[int, str]]]:
    """Per row label without its workload: (context tokens, row label) over the sweep's workloads."""
    tokens = _tokens(res)
    if len(set(tokens.values())) < 2:
        return {}
    rows: dict[str, list] = {}
    for rec in res.methods:
        if rec.workload in tokens and tokens[rec.workload] and _has_median(res, rec.label):
            rows.setdefault(rec.label.removesuffix(f" @ {rec.workload}"), []).append(
                (tokens[rec.workload], rec.label))
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


def _scaling(ax, res: Result) -> None:
    from matplotlib.ticker import FuncFormatter

    for name, points in _scaling_rows(res).items():
        points.sort(key=lambda p: p[0])
        n = [p[0] for p in points]
        ivs = [res.summaries[label].median_us for _, label in points]
        est = [iv.estimate for iv in ivs]
        low = [iv.estimate - (iv.low if iv.has_interval else iv.estimate) for iv in ivs]
        high = [(iv.high if iv.has_interval else iv.estimate) - iv.estimate for iv in ivs]
        bad = [_failed(res, label) for _, label in points]
        line = ax.errorbar(n, est, yerr=[low, high], marker="o", ms=4, capsize=3,
                           label=_wrap(name + (" FAIL" if any(bad) else "")))
        failed = [(x, y) for x, y, b in zip(n, est, bad) if b]
        if failed:  # the failed points hollow and red over the row's line
            ax.plot(*zip(*failed), "o", ms=7, mfc="none", mec=FAIL_COLOUR, mew=1.5)
            line.lines[0].set_linestyle("--")
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1024:g}K" if v >= 1024 else f"{v:g}"))
    ax.set_yscale("log")
    _plain_log_ticks(ax.yaxis)
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel("median of round means (µs, 95% CI)")
    _title(ax, f"scaling ({res.mode})")
    _legend(ax)


def _frontier(ax, res: Result) -> None:
    rows = _frontier_rows(res)
    markers = "osD^v<>"
    workloads = list(dict.fromkeys(r.workload for r in rows))
    families: dict[tuple, list] = {}
    for r in rows:
        families.setdefault((_family(r), r.workload), []).append(r)
    for (family, workload), recs in families.items():
        recs.sort(key=lambda r: res.summaries[r.label].median_us.estimate)
        x = [res.summaries[r.label].median_us.estimate for r in recs]
        y = [max(r.validation.error_vs_dense, 1e-12) for r in recs]
        bad = [_failed(res, r.label) for r in recs]
        tag = family + (f" @ {workload}" if workload else "") + (" FAIL" if any(bad) else "")
        marker = markers[workloads.index(workload) % len(markers)]
        ax.plot(x, y, marker=marker, ms=5, label=_wrap(tag))
        for r, xi, yi, b in zip(recs, x, y, bad):
            option = r.method.split("@")[0].removeprefix(family).lstrip(":,")
            if b:
                ax.plot(xi, yi, marker, ms=8, mfc="none", mec=FAIL_COLOUR, mew=1.5)
            if option or b:
                text = " ".join(filter(None, ("FAIL" if b else "", option)))
                ann = ax.annotate(text, (xi, yi), fontsize=6, xytext=(4, 4), textcoords="offset points",
                                  color=FAIL_COLOUR if b else "black", gid=POINT_LABEL)
                ann.set_in_layout(False)  # moved apart after layout; the layout must not move with them
    ax.set_xscale("log")
    _plain_log_ticks(ax.xaxis)
    _error_axis(ax, [max(r.validation.error_vs_dense, 1e-12) for r in rows])
    ax.set_xlabel("median of round means (µs)")
    ax.set_ylabel("relative L2 error vs fp64 dense attention")
    _title(ax, "accuracy-latency frontier (lower left is better)")
    _legend(ax)


def _roofline(ax, res: Result) -> None:
    """Achieved TFLOP/s against arithmetic intensity (FLOP per byte), under the measured roofs:
    the copy peak's slope and the matmul peak of the dtype, where ``kprof env --measure-peak`` ran."""
    import numpy as np

    rows = _roofline_rows(res)
    points = [(rec.flops_per_call / rec.bytes_per_call, compute_rate(res, rec.label)[0], rec) for rec in rows]
    for ai, tflops, rec in points:
        style = {"mfc": "none", "mec": FAIL_COLOUR, "mew": 1.5} if _failed(res, rec.label) else {}
        ax.plot(ai, tflops, "o", ms=6, label=_wrap(_shown(res, rec.label)), **style)
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
    _title(ax, f"{res.workload.get('name')}: roofline{roofs}")
    _legend(ax)


def _offsets():
    """Where a point's label may go, in points from the point: nearest first, all around it."""
    for r in (4, 9, 14, 20, 27, 35):
        for dx, dy in ((1, 1), (1, -1), (-1, 1), (-1, -1), (1, 0), (-1, 0), (0, 1), (0, -1)):
            yield r * dx, r * dy


def _separate_labels(fig) -> None:
    """Move each point's label to the nearest spot where it overlaps no label placed before it
    (or, failing that, overlaps the least), inside its axes."""
    from matplotlib.text import Annotation

    fig.canvas.draw()  # the layout settles; point labels are out of it, so they do not move it
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        box = ax.get_window_extent(renderer)
        placed = []
        for ann in [t for t in ax.texts if isinstance(t, Annotation) and t.get_gid() == POINT_LABEL]:
            best = None
            for dx, dy in _offsets():
                ann.xyann = (dx, dy)
                ann.set_ha("left" if dx >= 0 else "right")
                ann.set_va("bottom" if dy > 0 else "top" if dy < 0 else "center")
                bb = ann.get_window_extent(renderer)
                cost = sum(_overlap(bb, p) for p in placed) + (0 if _inside(bb, box) else 1e6)
                if best is None or cost < best[0]:
                    best = (cost, dx, dy, bb)
                if cost == 0:
                    break
            _, dx, dy, bb = best
            ann.xyann = (dx, dy)
            ann.set_ha("left" if dx >= 0 else "right")
            ann.set_va("bottom" if dy > 0 else "top" if dy < 0 else "center")
            placed.append(bb)


def _overlap(a, b) -> float:
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return w * h if w > 0 and h > 0 else 0.0


def _inside(bb, box) -> bool:
    return bb.x0 >= box.x0 and bb.x1 <= box.x1 and bb.y0 >= box.y0 and bb.y1 <= box.y1
