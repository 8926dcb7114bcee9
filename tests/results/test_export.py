"""Exports: a DataFrame with numeric dtypes, CSV with empty cells, markdown rounded as the terminal."""

import copy
import csv
import io

import pytest

from kprof.results.export import to_csv, to_frame, to_markdown


def test_the_frame_has_numeric_columns_with_nan_where_missing(cpu_result):
    pd = pytest.importorskip("pandas")
    frame = cpu_result.frame()
    assert list(frame["row"]) == ["math", "math#2", "math#3"]
    for column in ("median_us", "ci_low_us", "speedup", "speedup_low", "gb_per_s", "host_us", "noise_pct",
                   "drift_pct_per_round", "rel_error", "tolerance", "bad_rounds", "tokens"):
        assert pd.api.types.is_numeric_dtype(frame[column]), (column, frame[column].dtype)
    assert pd.isna(frame.loc[0, "speedup"]) and frame.loc[1, "speedup"] > 0
    assert frame["valid"].dtype == "boolean" and bool(frame.loc[0, "valid"])
    both = to_frame([cpu_result, cpu_result])
    assert len(both) == 6 and both["median_us"].notna().all()


def test_csv_leaves_missing_values_empty(cpu_result):
    base = next(csv.DictReader(io.StringIO(to_csv([cpu_result]))))
    assert base["speedup"] == "" and base["row"] == "math" and float(base["median_us"]) > 0


def test_markdown_rounds_like_the_terminal_and_marks_a_failed_row(cpu_result):
    res = copy.deepcopy(cpu_result)
    res.methods[1].validation.passed = False
    lines = to_markdown(res).splitlines()
    cells = lines[5].split(" | ")
    assert cells[:2] == ["| math#2", "FAIL"]
    assert "." not in cells[2] or len(cells[2].split(".")[1]) in (0, 2)  # microseconds: 2 decimals, none above 1 ms
