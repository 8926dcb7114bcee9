"""The rows tables and exports show: numbers where there are some, None where there are none."""

import copy
import dataclasses
import math

import pytest

from kprof.results.rows import COLUMNS, rows, throughput


def test_throughput_is_declared_bytes_over_the_median_against_the_measured_peak(cpu_result):
    shape = cpu_result.workload["shape"]
    dense = 2 * shape["hkv"] * shape["n"] * shape["d"] * 4 + 2 * shape["hq"] * shape["d"] * 4  # fp32 K, V, q, o
    rec = cpu_result.methods[0]
    assert rec.bytes_per_call == dense and rec.bytes_source == "declared by the method"
    assert rec.validation.error_vs_dense == rec.validation.rel_error  # math's own reference is fp64 dense
    res = copy.deepcopy(cpu_result)
    median = res.summaries["math"].median_us.estimate
    assert throughput(res, "math") == (pytest.approx(dense / median / 1e3), None)  # no peak measured
    res.environment["copy_peak_gbs"] = 2 * dense / median / 1e3
    assert throughput(res, "math")[1] == pytest.approx(0.5)
    res.methods[0].bytes_per_call = None
    assert throughput(res, "math") == (None, None)


def test_rows_carry_every_column_and_none_where_a_value_is_missing(cpu_result):
    res = copy.deepcopy(cpu_result)
    table = rows(res)
    assert [list(r) for r in table] == [list(COLUMNS)] * len(table)
    base, other = table[:2]
    assert base["speedup"] is None and base["baseline"] is None  # the baseline has no speedup of its own
    assert other["baseline"] == "math" and other["speedup"] > 0
    assert base["valid"] is True and base["rel_error"] >= 0 and base["tolerance"] > 0
    assert base["noise_pct"] >= 0 and base["drift_flagged"] in (True, False)
    iv = res.summaries["math"].median_us  # an interval that could not be computed
    res.summaries["math"].median_us = dataclasses.replace(iv, low=float("nan"))
    assert rows(res)[0]["ci_low_us"] is None
    assert all(not isinstance(v, float) or math.isfinite(v) for r in rows(res) for v in r.values())
