"""Parsing real and awkward Nsight Compute CSV."""

from pathlib import Path

import pytest

from kprof.core.errors import KprofError
from kprof.ncu.parse import medians_over_captures, parse_number, read_ncu_csv, short_kernel_name, table14

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "ncu" / "h200_sdpa_flash_raw_base_units.csv"


def test_real_h200_fixture_values():
    df = read_ncu_csv(FIXTURE)
    assert list(df["id"]) == [0, 1, 2, 3]
    flash = df.iloc[3]
    assert flash["kernel"] == "flash_fwd_splitkv_kernel"
    assert flash["ctas"] == 256
    assert flash["duration_us"] == pytest.approx(21.472)
    assert flash["dram_pct"] == pytest.approx(65.20)
    assert flash["occupancy_pct"] == pytest.approx(11.96)
    assert flash["eligible_warps"] == pytest.approx(0.39)
    assert flash["registers_per_thread"] == 246
    assert df.iloc[1]["ctas"] == 1056  # "1,056" thousands separator
    assert df.iloc[0]["kernel"] == "distribution_elementwise_grid_stride_kernel"
    assert str(df["ctas"].dtype) == "Int64"


def _raw(unit_row: str, duration: str, name: str = "void ns::kern<int, 4>(Params)", grid: str = "64") -> str:
    return "\n".join([
        "some program output before ncu",
        "==PROF== Connected to process 1",
        '"ID","Kernel Name","Grid Size","gpu__time_duration.sum","launch__grid_size","dram__throughput.avg.pct_of_peak_sustained_elapsed","launch__registers_per_thread","sm__warps_active.avg.pct_of_peak_sustained_active","smsp__warps_eligible.avg.per_cycle_active","my__metric"',
        unit_row,
        f'"0","{name}","(8, 8, 1)","{duration}","{grid}","n/a","32","50","1.5","3"',
        "==PROF== Disconnected",
        "program output after",
    ])


def test_auto_units_and_noise_and_na_and_quoted_commas():
    text = _raw('"","","","usecond","","%","register/thread","%","warp",""', "1,234.5",
                name="void ns::kern<float, 4, Tuple<a, b>>(Params, int)")
    df = read_ncu_csv("mem.csv", text=text)
    row = df.iloc[0]
    assert row["duration_us"] == pytest.approx(1234.5)
    assert row["kernel"] == "kern"
    assert row["dram_pct"] != row["dram_pct"]  # n/a -> NaN
    assert row["my__metric"] == 3
    ms = read_ncu_csv("ms.csv", text=_raw('"","","","msecond","","%","","%","",""', "0.5"))
    assert ms.iloc[0]["duration_us"] == pytest.approx(500.0)


def test_details_page_long_format():
    text = "\n".join([
        "==PROF== Disconnected",
        '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"',
        '"0","1","python3","h","void k1<int>(int)","1","7","(128, 1, 1)","(256, 1, 1)","0","9.0","GPU Speed Of Light Throughput","Duration","usecond","21.47"',
        '"0","1","python3","h","void k1<int>(int)","1","7","(128, 1, 1)","(256, 1, 1)","0","9.0","GPU Speed Of Light Throughput","DRAM Throughput","%","65.20"',
        '"0","1","python3","h","void k1<int>(int)","1","7","(128, 1, 1)","(256, 1, 1)","0","9.0","Launch Statistics","Grid Size","","256"',
        '"0","1","python3","h","void k1<int>(int)","1","7","(128, 1, 1)","(256, 1, 1)","0","9.0","Launch Statistics","Registers Per Thread","register/thread","246"',
        '"1","1","python3","h","void k2(int)","1","7","(128, 1, 1)","(4, 1, 1)","0","9.0","GPU Speed Of Light Throughput","Duration","nsecond","2,752"',
    ])
    df = read_ncu_csv("details.csv", text=text)
    assert list(df["kernel"]) == ["k1", "k2"]
    assert df.iloc[0]["duration_us"] == pytest.approx(21.47) and df.iloc[1]["duration_us"] == pytest.approx(2.752)
    assert df.iloc[0]["ctas"] == 256 and df.iloc[0]["registers_per_thread"] == 246
    assert df.iloc[0]["dram_pct"] == pytest.approx(65.2)


@pytest.mark.parametrize("text, message", [
    ("hello\nworld\n", "not Nsight Compute CSV"),
    ('"ID","Kernel Name","gpu__time_duration.sum"\n"","","ns"\n', "no kernel rows"),
])
def test_malformed_input_is_a_one_line_error(text, message):
    with pytest.raises(KprofError, match=message):
        read_ncu_csv("x.csv", text=text)


def test_a_missing_file_or_a_pipe_is_a_usage_error(tmp_path):
    import os

    from kprof.core.errors import UsageError

    with pytest.raises(UsageError, match="file.csv does not exist"):
        read_ncu_csv("/nonexistent/file.csv")
    os.mkfifo(tmp_path / "pipe.csv")
    with pytest.raises(UsageError, match="pipe.csv is not a regular file"):
        read_ncu_csv(tmp_path / "pipe.csv")


def test_medians_over_captures():
    a = read_ncu_csv(FIXTURE)
    b = a.copy()
    b["duration_us"] = b["duration_us"] * 2
    c = a.copy()
    c["duration_us"] = c["duration_us"] * 3
    med = medians_over_captures([a, b, c])
    assert med.iloc[3]["duration_us"] == pytest.approx(2 * 21.472)
    assert med.iloc[3]["kernel"] == "flash_fwd_splitkv_kernel" and med.iloc[3]["ctas"] == 256
    assert list(table14(a).columns) == ["id", "kernel", "ctas", "duration_us", "occupancy_pct", "eligible_warps",
                                        "dram_pct", "registers_per_thread"]


def test_helpers():
    assert parse_number("21,472") == 21472 and parse_number("n/a") is None and parse_number("(1, 64, 4)") is None
    assert short_kernel_name("void at::native::(anonymous namespace)::k<1>(int)") == "k"
    assert short_kernel_name("santa_score") == "santa_score"


FIXTURES = FIXTURE.parent
SANTA_KERNELS = ["santa_score", "santa_block_topk", "santa_merge_union", "santa_attend", "_split_kv_combine"]


def test_real_details_page_of_the_five_santa_triton_kernels():
    """`ncu --import R --csv --page details` of a `kprof ncu --method santa` capture on the H200."""
    df = read_ncu_csv(FIXTURES / "h200_santa_details_page.csv")
    assert df["kernel"].tolist() == SANTA_KERNELS
    attend = df.iloc[3]
    assert (attend["ctas"], attend["registers_per_thread"]) == (256, 162)
    assert attend["duration_us"] == pytest.approx(12.26)
    assert attend["dram_pct"] == pytest.approx(7.44)
    assert attend["occupancy_pct"] == pytest.approx(10.43)
    assert attend["eligible_warps"] == pytest.approx(0.27)


def test_real_raw_page_with_base_units_of_triton_kernels():
    """The CSV `kprof ncu` keeps beside each capture: durations in ns with thousands separators."""
    df = read_ncu_csv(FIXTURES / "h200_santa_triton_raw_base_units.csv")
    assert df["kernel"].tolist() == SANTA_KERNELS
    assert df["duration_us"].tolist() == pytest.approx([4.8, 15.648, 8.512, 12.256, 3.648])
    assert df["ctas"].tolist() == [368, 84, 4, 256, 28]


def test_real_raw_page_with_auto_units():
    """`--print-units auto`: ncu chose us for these durations; the frame is in us either way."""
    df = read_ncu_csv(FIXTURES / "h200_sdpa_flash_raw_auto_units.csv")
    assert df["kernel"].tolist() == ["flash_fwd_splitkv_kernel", "flash_fwd_splitkv_combine_kernel"]
    assert df["duration_us"].tolist() == pytest.approx([22.432, 29.12])
    assert df["dram_pct"].tolist() == pytest.approx([64.698637, 0.677825])
    assert df["registers_per_thread"].tolist() == [246, 58]


def test_real_ncu_rep_where_a_reader_exists():
    """The binary report of the same santa capture; needs Nsight Compute on the machine."""
    from kprof.ncu.locate import find_ncu
    from kprof.ncu.report_module import find_report_module
    from kprof.ncu.run import import_report

    if find_report_module() is None and find_ncu() is None:
        pytest.skip("no Nsight Compute here (ncu_report or ncu): the CSV fixtures above cover the parser")
    df = import_report(FIXTURES / "h200_santa.ncu-rep")
    assert df["kernel"].tolist() == SANTA_KERNELS
    assert df["duration_us"].tolist() == pytest.approx([4.8, 15.648, 8.512, 12.256, 3.648])


def test_a_duration_in_a_unit_ncu_never_writes_is_refused_not_guessed():
    text = _raw('"","","","furlong","","%","register/thread","%","warp",""', "4.8")
    with pytest.raises(KprofError, match=r"gpu__time_duration.sum is in unit 'furlong', not a time unit ncu writes"):
        read_ncu_csv("odd.csv", text=text)


def test_a_csv_saved_again_with_minimal_quoting_still_reads():
    import csv
    import io

    quoted = _raw('"","","","nsecond","","%","register/thread","%","warp",""', "2752")
    rows = [r for r in csv.reader(io.StringIO(quoted)) if r and not r[0].startswith(("==", "some", "program"))]
    buf = io.StringIO()
    csv.writer(buf, quoting=csv.QUOTE_MINIMAL, lineterminator="\n").writerows(rows)
    assert not buf.getvalue().startswith('"')
    df = read_ncu_csv("resaved.csv", text=buf.getvalue())
    assert df.iloc[0]["duration_us"] == 2.752, "2752 ns is 2.752 us exactly, not 2.7520000000000002"


def test_a_byte_metrics_percentage_or_rate_is_not_taken_for_a_byte_count():
    text = "\n".join([
        '"ID","Kernel Name","dram__bytes.sum.pct_of_peak_sustained_elapsed","dram__bytes.sum.per_second","dram__bytes.sum"',
        '"","","%","byte/second","kbyte"',
        '"0","void k(int)","65.2","3000000000000","1024"',
    ])
    row = read_ncu_csv("full.csv", text=text).iloc[0]
    assert row["dram__bytes.sum.pct_of_peak_sustained_elapsed"] == 65.2 and row["dram__bytes.sum"] == 1024e3
    with pytest.raises(KprofError, match="dram__bytes.sum is in unit 'furlong'"):
        read_ncu_csv("odd.csv", text=text.replace('"kbyte"', '"furlong"'))
