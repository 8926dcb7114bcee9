"""Terminal tables: every column at its content's width, the lowest-priority columns dropped whole
(and named) where the console is narrow, long labels shortened with a legend, FAIL always shown."""

import copy
import io
from dataclasses import replace

import pytest
from rich.console import Console

from kprof.measure.stats import Interval
from kprof.results.tables import abbreviate, compare_table, extra_speedups, fitted, speedup_text, stages_table

LONG = ["santa:s=124,attend.NUM_SPLITS=32", "santa:s=124,attend.NUM_SPLITS=64", "triton-dense"]


def widened(real, specs=LONG, workloads=(), fail=(), fault=()):
    """A copy of a real two-row Result with a flash baseline and one candidate per spec (on each
    workload for a sweep), with bytes, FLOPs, host time and errors, so that every column shows."""
    res = copy.deepcopy(real)
    base_rec, cand_rec = res.methods
    template = res.summaries[cand_rec.label]
    methods, summaries, speedups = [], {}, []

    def summary(us):
        return replace(copy.deepcopy(template), median_us=Interval(us, us * 0.99, us * 1.01),
                       round_median_min_us=us * 0.98, round_median_max_us=us * 1.02)

    for w_i, workload in enumerate(workloads or [None]):
        at = f" @ {workload}" if workload else ""
        base = replace(copy.deepcopy(base_rec), label=f"flash{at}", method="flash", role="baseline", workload=workload)
        methods.append(base)
        summaries[base.label] = summary(40.0 * 2**w_i)
        for k, spec in enumerate(specs):
            rec = replace(copy.deepcopy(cand_rec), label=f"{spec}{at}", method=spec, role="candidate",
                          workload=workload, faults=["wait gave up in run"] if spec in fault else [])
            rec.validation = replace(rec.validation, passed=spec not in fail, error_vs_dense=1e-3 * (k + 1),
                                     error_vs_baseline=2e-3 * (k + 1))
            methods.append(rec)
            us = 40.0 * 2**w_i / (1.1 + 0.02 * k)
            summaries[rec.label] = summary(us)
            speedups.append(replace(copy.deepcopy(res.speedups[0]), candidate=rec.label, baseline=base.label,
                                    interval=Interval(1.1 + 0.02 * k, 1.09 + 0.02 * k, 1.11 + 0.02 * k, n=10)))
    for rec in methods:
        rec.bytes_per_call, rec.bytes_source, rec.flops_per_call, rec.host_us = 8 << 20, "declared", 2e9, 12.5
    res.methods, res.summaries, res.speedups = methods, summaries, speedups
    res.environment = {**res.environment, "copy_peak_gbs": 4000.0}
    if workloads:
        res.workload = {**res.workload, "name": " + ".join(workloads),
                        "points": [{"name": w, "shape": {"n": 8192 * 4**i}} for i, w in enumerate(workloads)]}
    return res


def chain(real, stages=("score", "topk", "merge", "attend_with_a_long_stage_name", "reduce"), fail=False):
    """A copy of a real Result as a chain of prefixes of ``stages`` (kind ``chain``)."""
    res = copy.deepcopy(real)
    template = next(iter(res.summaries.values()))
    subject = replace(res.methods[0], role="subject")
    subject.validation = replace(subject.validation, passed=not fail)
    res.kind, res.methods, res.speedups = "chain", [subject], []
    res.summaries = {" .. ".join(stages[:k]): replace(copy.deepcopy(template),
                                                      median_us=Interval(7.5 * k, 7.4 * k, 7.6 * k))
                     for k in range(1, len(stages) + 1)}
    return res


def render(table, width=100) -> str:
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(table)
    return console.export_text()


def header(text: str) -> str:
    """The line of column headers: the one above the rule under them."""
    lines = text.splitlines()
    return next(lines[i - 1] for i, line in enumerate(lines) if line.strip().startswith("─"))


def fits(text: str, width: int) -> None:
    assert max(len(line) for line in text.splitlines()) <= width, text
    assert "…" not in text, text


def test_a_compare_table_fits_100_columns_with_priority_columns_and_a_legend(real_result):
    res = widened(real_result, fail=[LONG[1]])
    text = render(compare_table(res, width=100))
    fits(text, 100)
    head = header(text)
    for column in ("method", "valid", "time us", "speedup [95% CI]"):
        assert column in head, text
    failed = next(line for line in text.splitlines() if line.strip().startswith("NUM_SPLITS=64"))
    assert "FAIL" in failed
    assert "NUM_SPLITS=32 (1) = santa:s=124,attend.NUM_SPLITS=32" in text
    assert "not shown at this width:" in text and "noise" in text.split("not shown at this width:")[1]
    assert "empty in this run (nothing counted or flagged), not shown: launches, drift" in text
    wide = render(compare_table(res, width=160), 160)
    fits(wide, 160)
    assert len(header(wide).split()) > len(head.split()), "a wider console shows more columns"
    assert "noise" in header(wide) and "noise" not in head


def test_the_required_columns_stay_at_any_width_and_a_fault_shows(real_result):
    res = widened(real_result, fault=[LONG[0]])
    for width in (60, 80):
        text = render(compare_table(res, width=width), width)
        fits(text, width)
        assert all(c in header(text) for c in ("valid", "time us", "speedup")), text
        assert "FAULT" in text
    table = fitted(res, 60)
    assert [c.header for c in table.columns][:2] == ["method", "valid"]
    assert "launches" in table.blank and "noise" in table.hidden


def test_a_sweep_table_fits_with_its_workload_column_and_full_medians(real_result):
    workloads = ["qwen2.5-7b-l14-8k", "qwen2.5-7b-l14-32k", "synthetic:hq=28,hkv=4,d=128,n=131072,dtype=fp16"]
    res = widened(real_result, workloads=workloads, fail=["triton-dense"])
    text = render(compare_table(res, width=100))
    fits(text, 100)
    assert header(text).split()[:4] == ["workload", "method", "valid", "time"]
    assert "160.00" in text, "the 160 us median of the third workload's baseline is whole"
    assert "= synthetic:hq=28,hkv=4,d=128,n=131072,dtype=fp16" in text, "a long workload name has a legend"
    assert sum("FAIL" in line for line in text.splitlines()) == 3, "one failed row per workload"


def test_a_real_cpu_result_and_the_default_width(cpu_result):
    text = render(compare_table(cpu_result))  # the old call: 100 columns
    fits(text, 100)
    assert "math#2" in text and "baseline" in text


def test_columns_without_a_value_give_way_first_and_are_named_apart(real_result):
    res = widened(real_result)
    for rec in res.methods:  # a run whose launches no catalog counted: every launches cell is n/a
        rec.catalog = replace(rec.catalog, launches_per_call=None)
    full = render(compare_table(res, width=400), 400)
    assert "launches" in header(full) and "drift" in header(full), "wide enough, even empty columns show"
    width = len(max(full.splitlines(), key=len))
    while "not shown at this width" not in (text := render(compare_table(res, width=width), width)):
        last = text
        width -= 1
    # the narrowest table that hides nothing informative has given up both empty columns
    assert "empty in this run (nothing counted or flagged), not shown: launches, drift" in last
    assert "launches" not in header(last) and "drift" not in header(last)
    assert header(last).split()[-2:] == ["vs", "base"], "every column with a value is still there"


def test_a_chain_and_a_stages_table_fit_and_say_fail(real_result):
    res = chain(real_result, fail=True)
    text = render(stages_table(res, width=100))
    fits(text, 100)
    assert "marginal us" in header(text) and "FAIL" in text.splitlines()[0] + text.splitlines()[1]
    narrow = render(stages_table(res, width=50), 50)
    fits(narrow, 50)
    assert "time us" in header(narrow) and "not shown at this width" in narrow
    assert ".. attend_with_a_long_stage_name (3) = score .. topk .. merge .. attend_with_a_long_stage_name" \
        in " ".join(narrow.split()), narrow
    res.kind = "stages"
    assert "stages are NOT additive" in render(stages_table(res, width=160), 160)


def test_abbreviate_keeps_what_differs_and_cuts_after_a_whole_option():
    labels = ["triton-dense", "triton-dense:partial.NUM_SPLITS=32",
              "triton-dense:partial.BLOCK_N=32,partial.num_stages=4"]
    short, legend = abbreviate(labels, 24)
    assert short == ["triton-dense", "NUM_SPLITS=32 (1)", "BLOCK_N=32 (2)"]
    assert legend == {"NUM_SPLITS=32 (1)": labels[1], "BLOCK_N=32 (2)": labels[2]}
    assert abbreviate(["flash @ qwen2.5-7b-l14-32k"], 16)[0] == ["flash (1)"]
    assert abbreviate(["score .. topk .. merge"], 16, chain=True)[0] == [".. merge (1)"]
    assert abbreviate(labels, None) == (labels, {})
    # options every variant shares are left out, wherever they stand, so the rows differ
    base = "triton-dense:partial.EVICT=1,partial.num_stages=1"
    variants = [base + ",partial.PROGRAMS_PER_SM=4", base + ",partial.PROGRAMS_PER_SM=3",
                base + ",partial.BLOCK_N=128,partial.num_warps=8", base]
    assert abbreviate(variants, 30)[0] == ["PROGRAMS_PER_SM=4 (1)", "PROGRAMS_PER_SM=3 (2)", "BLOCK_N=128 (3)",
                                           "triton-dense (4)"]
    # workload names are no option lists: their heads stay unless long
    assert all(x.startswith("llama3") for x in abbreviate(["llama3.1-8b-l10-32k", "llama3.2-3b-l10-32k"], 16)[0])


def test_speedup_text_interval_caption_and_extra_speedups_still_work(real_result):
    res = widened(real_result)
    sp = res.speedups[0]
    assert speedup_text(sp, False) == "1.100x [1.090, 1.110]"
    assert speedup_text(sp, True, "flash").endswith("vs flash")
    assert speedup_text(replace(sp, interval=Interval(1.1, None, None)), False).endswith("for an interval)")
    res.speedups.append(replace(sp, baseline=res.speedups[1].candidate))
    assert extra_speedups(res) == [f"{sp.candidate} vs {res.speedups[1].candidate}: 1.100x [1.090, 1.110]"]


@pytest.mark.parametrize("width", [100, 160, 250])
def test_columns_are_never_squeezed_at_any_width(real_result, width):
    text = render(compare_table(widened(real_result), width=width), width)
    fits(text, width)
