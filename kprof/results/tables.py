"""Result -> rich tables (terminal). Everything shown is computed from the stored Result."""

from __future__ import annotations

from rich import box
from rich.table import Table

from kprof.results.result import Result


def _launches(rec) -> str:
    c = rec.catalog
    if c.launches_per_call is None:
        return "n/a"
    mark = {True: "", False: " [red](unexpected)[/]", None: ""}[c.matches_expected]
    return f"{c.launches_per_call}{mark}"


def _compute(result: Result, label: str) -> str:
    tflops, share = result.compute_rate(label)
    if tflops is None:
        return ""
    return f"{tflops:.3g}" + (f" ({100 * share:.0f}%)" if share else "")


def _us(x: float | None) -> str:
    """Microseconds with 2 decimals on the GPU scale, fewer for the slow interpreter."""
    if x is None or x != x:
        return "n/a"
    return f"{x:,.2f}" if x < 1000 else f"{x:,.0f}"


def _throughput(result: Result, label: str) -> tuple[str, str]:
    """GB/s of a row and its percent of the copy peak (empty where bytes are not known)."""
    gbs, share = result.throughput(label)
    if gbs is None:
        return "", ""
    host = next((m.bytes_from_host for m in result.methods if m.label == label), False)
    if host or share is None:
        pct = "host" if host else "n/a"
    else:
        pct = f"{100 * share:.0f}%" if share >= 0.1 else f"{100 * share:.2g}%"
    return (f"{gbs:,.0f}" if gbs >= 100 else f"{gbs:.3g}"), pct


def _throttled_note(result: Result) -> str:
    rounds = [r["round"] for r in result.telemetry.get("rounds", []) if r.get("throttled")]
    return f"{len(rounds)}" if result.telemetry.get("available") else "n/a"


def speedup_text(sp, several_baselines: bool, baseline: str | None = None) -> str:
    """``1.234x [1.230, 1.238]`` (with ``vs B`` when a run has several baselines)."""
    iv = sp.interval
    text = (f"{iv.estimate:.3f}x [{iv.low:.3f}, {iv.high:.3f}]" if iv.has_interval
            else f"{iv.estimate:.3f}x (too few rounds for an interval)")
    return f"{text} vs {baseline or sp.baseline}" if several_baselines else text


def interval_caption(result: Result) -> str:
    """What the speedup intervals are: their method and how many pair cycles they rest on."""
    ivs = [s.interval for s in result.speedups]
    if not ivs:
        return ""
    method = ivs[0].method or "paired-round bootstrap (kprof-result/1)"
    cycles = sorted({iv.n for iv in ivs})
    text = f"; speedup: {method}" + (f", {'/'.join(map(str, cycles))} pair cycles" if cycles[-1] else "")
    exact = sorted({round(100 * iv.coverage, 1) for iv in ivs if iv.coverage and abs(iv.coverage - iv.level) > 0.005})
    return text + (f" (exact coverage {'/'.join(f'{c:g}%' for c in exact)})" if exact else "")


def compare_table(result: Result) -> Table:
    """SANTA++ Table 5 style: one row per method, speedups against the baseline."""
    bases = [m.label.removesuffix(f" @ {m.workload}") for m in result.methods if m.role == "baseline"]
    speedups = {}
    for sp in result.speedups:  # a row's first speedup is the one the table shows; others: extra_speedups
        speedups.setdefault(sp.candidate, sp)
    workload_of = {m.label: m.workload for m in result.methods}

    def base_row(sp) -> str:  # in a sweep each workload has its own baseline row: "flash @ W" -> "flash"
        return sp.baseline.removesuffix(f" @ {workload_of.get(sp.candidate)}")

    several = len({base_row(s) for s in speedups.values()}) > 1
    level = int(round(result.protocol.get("level", 0.95) * 100))
    t = Table(title=f"{result.workload['name']} — {result.mode}; speedup = "
              f"{'baseline' if several else bases[0]} / method",
              caption=f"clock: {result.clock}; "
              f"{result.protocol['rounds']} rounds x {result.protocol['observations']} observations"
              f"{interval_caption(result)}; throttled rounds: {_throttled_note(result)}")
    t.box = box.SIMPLE_HEAD
    sweep = any(rec.workload for rec in result.methods)
    if sweep:
        t.add_column("workload", no_wrap=True)
    t.add_column("method", no_wrap=True, min_width=6)
    t.add_column("valid", no_wrap=True, min_width=5)  # never squeezed out: a FAIL must show at any width
    t.add_column("launches", justify="right")
    host = any(rec.host_us is not None for rec in result.methods)
    if host:
        t.add_column("host us", justify="right")
        t.caption += ("; host us = the host's time to issue one call (eager, no sync): where it exceeds the "
                      "median, an eager decode loop is host-bound")
    t.add_column("time us", justify="right", no_wrap=True)
    t.add_column("round means", justify="right", no_wrap=True)
    t.add_column(f"speedup [{level}% CI]", justify="right", no_wrap=True)
    throughput = any(rec.bytes_per_call for rec in result.methods)
    peak = result.environment.get("copy_peak_gbs")
    if throughput:
        t.add_column("GB/s", justify="right")
        t.add_column("% peak", justify="right")
        sources = sorted({rec.bytes_source for rec in result.methods if rec.bytes_per_call})
        t.caption += (f"; GB/s = bytes per call ({', '.join(sources)}) / median, % of the measured copy peak "
                      + (f"{peak:,.0f} GB/s" if peak else "(not measured: kprof env --measure-peak)")
                      + ("; host: some bytes cross PCIe from host memory, no % of the device peak"
                         if any(m.bytes_from_host for m in result.methods) else ""))
    compute = any(rec.flops_per_call for rec in result.methods)
    if compute:
        t.add_column("TFLOP/s", justify="right")
        t.caption += ("; TFLOP/s = FLOPs per call / time, % of the measured matmul peak of the dtype in brackets"
                      + ("" if result.environment.get("matmul_peak_tflops") else
                         " (not measured: kprof env --measure-peak)"))
    t.add_column("noise", justify="right")
    t.add_column("err vs base", justify="right")
    t.add_column("drift")
    for i, rec in enumerate(result.methods):
        s = result.summaries[rec.label]
        sp = speedups.get(rec.label)
        last_of_workload = sweep and (i + 1 == len(result.methods) or result.methods[i + 1].workload != rec.workload)
        v = rec.validation
        status = "[green]ok[/]" if v.passed else "[red]FAIL[/]"
        if rec.faults:
            status = "[red]FAULT[/]"
        t.add_row(
            *([rec.workload] if sweep else []),
            rec.label.removesuffix(f" @ {rec.workload}") if sweep else rec.label,
            status,
            _launches(rec),
            *([_us(rec.host_us) if rec.host_us is not None else ""] if host else ()),
            _us(s.median_us.estimate),
            f"{_us(s.round_median_min_us)}–{_us(s.round_median_max_us)}",
            speedup_text(sp, several, base_row(sp)) if sp else "baseline",
            *(_throughput(result, rec.label) if throughput else ()),
            *([_compute(result, rec.label)] if compute else []),
            f"{100 * s.noise:.1f}%",
            f"{v.error_vs_baseline:.1e}" if v.error_vs_baseline is not None else "",
            "[yellow]yes[/]" if s.drift.flagged else "",
            end_section=last_of_workload,
        )
    return t


def stages_table(result: Result) -> Table:
    """SANTA++ Table 13 style: isolated stage medians, then the directly measured complete operator.

    For a ``chain`` result (prefixes of the launch chain) a column gives each launch's marginal
    cost: the difference of consecutive prefix medians, which adds up to the whole chain.
    """
    rec = result.methods[0]
    chain = result.kind == "chain"
    level = int(round(result.protocol.get("level", 0.95) * 100))
    caption = ("means of round means; marginal = this prefix - the one above (adds up)" if chain
               else "means of round means; stages are NOT additive")
    t = Table(title=f"{rec.label} {'chain prefixes' if chain else 'stages'} on {result.workload['name']} — "
              f"{result.mode}", caption=caption, box=box.SIMPLE_HEAD)
    cols = ("directly timed region", "time us", f"{level}% CI", "round means us", "noise")
    for col in cols + (("marginal us",) if chain else ()):
        t.add_column(col, justify="left" if col.startswith("directly") else "right")
    labels = list(result.summaries)
    marginal = result.chain_marginals_us()
    for i, label in enumerate(labels):
        s = result.summaries[label]
        name = f"[bold]{label}[/]" if i == len(labels) - 1 else label
        ci = f"[{_us(s.median_us.low)}, {_us(s.median_us.high)}]" if s.median_us.has_interval else "too few rounds"
        row = [name, _us(s.median_us.estimate), ci,
               f"{_us(s.round_median_min_us)}–{_us(s.round_median_max_us)}", f"{100 * s.noise:.1f}%"]
        t.add_row(*row, *([_us(marginal[label])] if chain else []))
    return t


def extra_speedups(result: Result) -> list[str]:
    """Lines for the speedups the table does not show (an A/A row against its spec's first row)."""
    shown, lines = set(), []
    for sp in result.speedups:
        if sp.candidate in shown:
            lines.append(f"{sp.candidate} vs {sp.baseline}: {speedup_text(sp, False)}")
        shown.add(sp.candidate)
    return lines
