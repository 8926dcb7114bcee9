"""Result -> tables: the columns a Result's table shows, in priority order, and a terminal (rich)
table of them that fits the console's width. The HTML report renders the same columns.

Priority: the row's label, whether its output was valid, its time, its speedup with interval,
then the rest. A width too narrow for every column drops the lowest-priority columns whole and
names them under the table, so no number is ever cut to ``1…``; a long label gets a short name
and a legend line with the full one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from rich import box
from rich.cells import cell_len
from rich.table import Table
from rich.text import Text

from kprof.results.rows import chain_marginals_us, compute_rate, format_us, throughput
from kprof.results.schema import Result

DEFAULT_WIDTH = 100
REQUIRED = 4  # columns of priority below this are never dropped: label(s), valid, time, speedup
TONES = {"ok": "green", "fail": "bold red", "warn": "yellow", "bold": "bold", "": ""}  # tone -> rich style


BLANK = ("", "n/a")  # cells that carry no value: a column of only these is dropped first to fit a width


@dataclass
class Cell:
    text: str
    tone: str = ""  # "ok" | "fail" | "warn" | "bold" | "": how a renderer marks the cell


@dataclass
class Column:
    header: str
    cells: list[Cell]
    priority: int  # lower is shown first and dropped last; below REQUIRED never dropped
    numeric: bool = True  # numbers align right
    meaning: str = ""  # what the column is, said under the table while it is shown

    @property
    def width(self) -> int:
        return max([cell_len(self.header)] + [cell_len(c.text) for c in self.cells])


@dataclass
class ResultTable:
    """A Result's table before rendering: columns in display order, with what goes under it."""

    title: str
    columns: list[Column]
    notes: list[str]  # lines under the table, whichever columns are shown
    section_ends: set[int] = field(default_factory=set)  # rows after which a rule separates workloads
    legend: dict[str, str] = field(default_factory=dict)  # a label's short name -> its full name
    hidden: list[str] = field(default_factory=list)  # headers of the columns dropped to fit a width
    blank: list[str] = field(default_factory=list)  # headers of columns without a value, dropped first
    failed: str = ""  # a title mark where the whole table's method failed (stages)

    @property
    def width(self) -> int:
        """Columns of a SIMPLE_HEAD table with edges: each column padded by 1 on both sides,
        separated by 1, and an edge of 1 at both ends."""
        return sum(c.width for c in self.columns) + 3 * len(self.columns) + 1

    def caption_lines(self) -> list[str]:
        lines = [f"{short} = {full}" for short, full in self.legend.items()]
        lines += self.notes + [c.meaning for c in self.columns if c.meaning]
        if self.blank:
            lines.append(f"empty in this run (nothing counted or flagged), not shown: {', '.join(self.blank)}")
        if self.hidden:
            lines.append(f"not shown at this width: {', '.join(self.hidden)}; widen the terminal "
                         "or use kprof report --csv")
        return lines


def _launches(rec) -> Cell:
    c = rec.catalog
    if c.launches_per_call is None:
        return Cell("n/a")
    if c.matches_expected is False:
        return Cell(f"{c.launches_per_call} (unexpected)", "fail")
    return Cell(str(c.launches_per_call))


def _compute(result: Result, label: str) -> str:
    tflops, share = compute_rate(result, label)
    if tflops is None:
        return ""
    return f"{tflops:.3g}" + (f" ({100 * share:.0f}%)" if share else "")


def _throughput(result: Result, label: str) -> tuple[str, str]:
    """GB/s of a row and its percent of the copy peak (empty where bytes are not known)."""
    gbs, share = throughput(result, label)
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


def _speedup_cell(sp, several: bool, baseline: str) -> str:
    """A table's speedup cell: as :func:`speedup_text`, with a short mark where there is no interval."""
    iv = sp.interval
    text = f"{iv.estimate:.3f}x [{iv.low:.3f}, {iv.high:.3f}]" if iv.has_interval else f"{iv.estimate:.3f}x (no CI)"
    return f"{text} vs {baseline}" if several else text


def interval_caption(result: Result) -> str:
    """What the speedup intervals are: their method and how many pair cycles they rest on."""
    ivs = [s.interval for s in result.speedups]
    if not ivs:
        return ""
    method = ivs[0].method or "paired-round bootstrap (kprof-result/1)"
    cycles = sorted({iv.n for iv in ivs})
    plural = "s" if cycles[-1] != 1 or len(cycles) > 1 else ""
    text = f"; speedup: {method}" + (f", {'/'.join(map(str, cycles))} pair cycle{plural}" if cycles[-1] else "")
    exact = sorted({round(100 * iv.coverage, 1) for iv in ivs if iv.coverage and abs(iv.coverage - iv.level) > 0.005})
    return text + (f" (exact coverage {'/'.join(f'{c:g}%' for c in exact)})" if exact else "")


def extra_speedups(result: Result) -> list[str]:
    """Lines for the speedups the table does not show (an A/A row against its spec's first row)."""
    shown, lines = set(), []
    for sp in result.speedups:
        if sp.candidate in shown:
            lines.append(f"{sp.candidate} vs {sp.baseline}: {speedup_text(sp, False)}")
        shown.add(sp.candidate)
    return lines


def failed(rec) -> str:
    """``FAIL`` (output failed validation), ``FAULT`` (the method reported one) or ``""``."""
    if rec.faults:
        return "FAULT"
    return "" if rec.validation.passed else "FAIL"


def abbreviate(labels: list[str], limit: int | None, chain: bool = False) -> tuple[list[str], dict[str, str]]:
    """Labels longer than ``limit`` shortened, with a number, and the legend (short -> full).

    Variants of one spec (``triton-dense:partial.NUM_SPLITS=32``, ``...=48``) keep the part that
    differs (``NUM_SPLITS=32 (1)``); a label is cut after a whole option where it can be, else
    where the spec breaks (``.`` ``=`` ``@``), never inside a word. A chain's
    prefixes (``score .. topk .. merge``) keep their last launch (``.. merge (2)``)."""
    if limit is None:
        return list(labels), {}
    long = [x for x in dict.fromkeys(labels) if cell_len(x) > limit]
    differing = _without_shared_options(long) if len(long) > 1 and not chain else {x: x for x in long}
    options = any(differing[x] != x for x in long)  # reduced to options: a launch's name may head them
    heads = [v for v in differing.values() if "=" in v] if options else list(differing.values())
    common = _common_head(heads, options) if len(heads) > 1 and not chain else ""
    short: dict[str, str] = {}
    for label in long:
        tag = f" ({len(short) + 1})"
        room = max(1, limit - len(tag))
        rest = differing[label]
        rest = (rest[len(common):] if rest.startswith(common) else rest).lstrip(" :,.=@")
        if chain and " .. " in rest:
            rest = ".. " + rest.rsplit(" .. ", 1)[1]
        if len(rest) > room:  # cut after a whole option (``,`` ``:`` or a space), else inside one
            cuts = ([m.start() for m in re.finditer(pattern, rest) if 0 < m.start() <= room]
                    for pattern in (r"[:, ]", r"[.=@]"))
            cut = next((c[-1] for c in cuts if c), None)
            rest = (rest[:cut].rstrip(" :,.=@") if cut else "") or rest  # no word is cut: a long one stays
        short[label] = rest + tag
    return [short.get(x, x) for x in labels], {s: full for full, s in short.items()}


def _without_shared_options(labels: list[str]) -> dict[str, str]:
    """Each spec label (``name:opt,opt``) as the options not every label shares, when all of them
    are variants of one method: ``a:x=1,y=2`` and ``a:x=1,y=3`` -> ``y=2`` and ``y=3``; a label
    with nothing of its own is the method's name. Otherwise every label as it is."""
    split = [label.partition(":") for label in labels]
    if len({name for name, _, _ in split}) != 1 or any(" " in name or not opts for name, _, opts in split):
        return {label: label for label in labels}
    options = [opts.split(",") for _, _, opts in split]
    shared = set.intersection(*(set(o) for o in options))
    return {label: ",".join(x for x in o if x not in shared) or name
            for label, (name, _, _), o in zip(labels, split, options)}


def _common_head(labels: list[str], options: bool = False) -> str:
    """The longest start all ``labels`` share that ends where a spec breaks, if 8 cells or more or,
    for ``options``, a launch's name (``attend.``)."""
    head = labels[0]
    for x in labels[1:]:
        while not x.startswith(head):
            head = head[:-1]
    breaks = [m.end() for m in re.finditer(r"[:,. ]", head)]
    head = head[:breaks[-1]] if breaks else ""
    return head if len(head) >= 8 or (options and re.fullmatch(r"\w{3,}\.", head)) else ""


def compare_columns(result: Result, label_width: int | None = None) -> ResultTable:
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
    title = (f"{result.workload['name']} — {result.mode}; speedup = "
             f"{'baseline' if several else (bases[0] if bases else 'baseline')} / method")
    notes = [f"clock: {result.clock}; {result.protocol['rounds']} rounds x {result.protocol['observations']} "
             f"observations{interval_caption(result)}; throttled rounds: {_throttled_note(result)}"]
    methods = result.methods
    sweep = any(rec.workload for rec in methods)
    marks = [failed(rec) for rec in methods]
    label_tone = ["fail" if m else "" for m in marks]
    names = [rec.label.removesuffix(f" @ {rec.workload}") if sweep else rec.label for rec in methods]
    names, legend = abbreviate(names, label_width)
    starts = [i == 0 or methods[i - 1].workload != rec.workload for i, rec in enumerate(methods)]
    workloads, workload_legend = abbreviate([rec.workload or "" for rec in methods], label_width)
    legend |= workload_legend
    sections = {i for i, rec in enumerate(methods) if sweep and i + 1 < len(methods)
                and methods[i + 1].workload != rec.workload}
    summaries = [result.summaries[rec.label] for rec in methods]
    sps = [speedups.get(rec.label) for rec in methods]

    def column(header, cells, priority, numeric=True, meaning=""):
        cells = [c if isinstance(c, Cell) else Cell(c) for c in cells]
        return Column(header, cells, priority, numeric, meaning)

    cols = []
    if sweep:
        cols.append(column("workload", [w if start else "" for w, start in zip(workloads, starts)], 0, False))
    cols.append(column("method", [Cell(n, t) for n, t in zip(names, label_tone)], 1, False))
    cols.append(column("valid", [Cell(m, "fail") if m else Cell("ok", "ok") for m in marks], 2, False))
    cols.append(column("time us", [format_us(s.median_us.estimate) for s in summaries], 3))
    if any(rec.host_us is not None for rec in methods):
        cols.append(column("host us", [format_us(r.host_us) if r.host_us is not None else "" for r in methods], 11,
                           meaning="host us = the host's time to issue one call (eager, no sync): where it "
                                   "exceeds time us, an eager decode loop is host-bound"))
    cols.append(column(f"speedup [{level}% CI]",
                       [_speedup_cell(sp, several, base_row(sp)) if sp else "baseline" for sp in sps], 3))
    if any(sp is not None and not sp.interval.has_interval for sp in sps):
        notes.append("no CI: too few rounds for an interval")
    cols.append(column("round means us", [f"{format_us(s.round_median_min_us)}–{format_us(s.round_median_max_us)}"
                                          for s in summaries], 12))
    cols.append(column("launches", [_launches(rec) for rec in methods], 10))
    if any(rec.bytes_per_call for rec in methods):
        peak = result.environment.get("copy_peak_gbs")
        sources = sorted({rec.bytes_source for rec in methods if rec.bytes_per_call})
        cells = [_throughput(result, rec.label) for rec in methods]
        cols.append(column("GB/s", [c[0] for c in cells], 13,
                           meaning=f"GB/s = bytes per call ({', '.join(sources)}) / time us"))
        cols.append(column("% peak", [c[1] for c in cells], 14,
                           meaning="% peak = GB/s as a share of the measured copy peak "
                           + (f"{peak:,.0f} GB/s" if peak else "(not measured: kprof env --measure-peak)")
                           + ("; host: some bytes cross PCIe from host memory, no share of the device peak"
                              if any(m.bytes_from_host for m in methods) else "")))
    if any(rec.flops_per_call for rec in methods):
        cols.append(column("TFLOP/s", [_compute(result, rec.label) for rec in methods], 15,
                           meaning="TFLOP/s = FLOPs per call / time, % of the measured matmul peak of the dtype "
                           "in brackets" + ("" if result.environment.get("matmul_peak_tflops") else
                                            " (not measured: kprof env --measure-peak)")))
    cols.append(column("noise", [f"{100 * s.noise:.1f}%" for s in summaries], 16))
    cols.append(column("err vs base", [f"{r.validation.error_vs_baseline:.1e}"
                                       if r.validation.error_vs_baseline is not None else "" for r in methods], 17))
    cols.append(column("drift", [Cell("yes", "warn") if s.drift.flagged else "" for s in summaries], 18, False))
    return ResultTable(title, cols, notes, sections, legend)


def stages_columns(result: Result, label_width: int | None = None) -> ResultTable:
    """SANTA++ Table 13 style: isolated stage times, then the directly measured complete operator.

    For a ``chain`` result (prefixes of the launch chain) a column gives each launch's marginal
    cost: the difference of consecutive prefix medians, which adds up to the whole chain.
    """
    rec = result.methods[0]
    chain = result.kind == "chain"
    level = int(round(result.protocol.get("level", 0.95) * 100))
    title = (f"{rec.label} {'chain prefixes' if chain else 'stages'} on {result.workload['name']} — "
             f"{result.mode}")
    notes = ["means of round means; marginal = this prefix - the one above (adds up)" if chain
             else "means of round means; stages are NOT additive"]
    labels = list(result.summaries)
    summaries = [result.summaries[x] for x in labels]
    names, legend = abbreviate(labels, label_width, chain=chain)
    last = len(labels) - 1
    cols = [Column("directly timed region", [Cell(n, "bold" if i == last else "") for i, n in enumerate(names)],
                   0, numeric=False),
            Column("time us", [Cell(format_us(s.median_us.estimate)) for s in summaries], 1),
            Column(f"{level}% CI us", [Cell(f"[{format_us(s.median_us.low)}, {format_us(s.median_us.high)}]"
                                            if s.median_us.has_interval else "too few rounds") for s in summaries], 11),
            Column("round means us", [Cell(f"{format_us(s.round_median_min_us)}–{format_us(s.round_median_max_us)}")
                                      for s in summaries], 12),
            Column("noise", [Cell(f"{100 * s.noise:.1f}%") for s in summaries], 13)]
    if chain:
        marginal = chain_marginals_us(result)
        cols.append(Column("marginal us", [Cell(format_us(marginal[x])) for x in labels], 10))
    mark = failed(rec)
    why = {"FAIL": "its output failed validation", "FAULT": "it reported a fault"}.get(mark, "")
    if mark:
        notes.append(f"{mark}: {why}; these timings are not comparable")
    return ResultTable(title, cols, notes, legend=legend, failed=mark)


def columns(result: Result, label_width: int | None = None) -> ResultTable:
    """The table of any Result, every column and full labels unless ``label_width`` limits them."""
    return (compare_columns if result.kind == "compare" else stages_columns)(result, label_width)


def fit(table: ResultTable, width: int) -> ResultTable:
    """``table`` with its lowest-priority columns dropped, whole, until it is at most ``width``
    wide; the label, valid, time and speedup columns stay whatever the width."""
    shown = list(table.columns)
    while table.width > width:
        optional = [c for c in shown if c.priority >= REQUIRED]
        if not optional:
            break
        blank = [c for c in optional if all(cell.text in BLANK for cell in c.cells)]
        drop = max(blank or optional, key=lambda c: c.priority)
        shown.remove(drop)
        table = (replace(table, columns=shown.copy(), blank=[drop.header, *table.blank]) if blank else
                 replace(table, columns=shown.copy(), hidden=[drop.header, *table.hidden]))
    return table


def fitted(result: Result, width: int = DEFAULT_WIDTH) -> ResultTable:
    """The columns of ``result`` that fit ``width``, with labels shortened to a quarter of it
    (12 to 40 cells), shorter still where even the required columns would not fit."""
    limit = max(12, min(40, width // 4))
    while True:
        table = fit(columns(result, limit), width)
        if table.width <= width or limit <= 8:
            return table
        limit -= 2


def render(table: ResultTable) -> Table:
    """A rich Table of ``table``: every column at its content's width, so none is squeezed."""
    title = Text(table.title)
    if table.failed:
        title.append(f" — {table.failed}", style=TONES["fail"])
    t = Table(title=title, caption=Text("\n".join(table.caption_lines())), caption_justify="left",
              box=box.SIMPLE_HEAD)
    for col in table.columns:
        t.add_column(col.header, justify="right" if col.numeric else "left", no_wrap=True, min_width=col.width)
    rows = len(table.columns[0].cells) if table.columns else 0
    for i in range(rows):
        t.add_row(*(Text(c.cells[i].text, style=TONES[c.cells[i].tone]) for c in table.columns),
                  end_section=i in table.section_ends)
    return t


def compare_table(result: Result, width: int = DEFAULT_WIDTH) -> Table:
    """A compare Result's table for a console ``width`` cells wide (pass ``console.width``)."""
    return render(fitted(result, width))


def stages_table(result: Result, width: int = DEFAULT_WIDTH) -> Table:
    """A stages or chain Result's table for a console ``width`` cells wide (pass ``console.width``)."""
    return render(fitted(result, width))
