"""The ncu subprocess command line, error mapping and the CLI import path (no GPU needed)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kprof.cli.main import cli
from kprof.core.errors import KprofError
from kprof.ncu import run as ncu_run
from kprof.ncu.metrics import TABLE14, resolve_metrics

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "ncu" / "h200_sdpa_flash_raw_base_units.csv"


def test_profile_command_is_assembled_as_specified(tmp_path):
    cmd = ncu_run.profile_command("/usr/local/cuda/bin/ncu", resolve_metrics(["memory"]), tmp_path / "c0",
                                  ["--method", "santa", "--workload", "w"])
    joined = " ".join(cmd)
    for part in ("--replay-mode kernel", "--cache-control all", "--clock-control none", "--nvtx",
                 "--nvtx-include kprof/", "--export", "-m kprof.commands.ncu_target --method santa --workload w"):
        assert part in joined
    metrics = cmd[cmd.index("--metrics") + 1].split(",")
    assert metrics[: len(TABLE14)] == list(TABLE14.values()) and "dram__bytes_read.sum" in metrics
    assert cmd[cmd.index("-m") - 1] == sys.executable
    assert ncu_run.csv_command("ncu", Path("r.ncu-rep")) == ["ncu", "--import", "r.ncu-rep", "--csv", "--page", "raw",
                                                              "--print-units", "base"]


def _completed(rc, out="", err=""):
    return subprocess.CompletedProcess([], rc, stdout=out, stderr=err)


def test_permission_and_crash_errors_are_one_line():
    with pytest.raises(KprofError, match="ERR_NVGPUCTRPERM.*NVreg_RestrictProfilingToAdminUsers"):
        ncu_run._check(_completed(1, "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission"), "ncu capture")
    with pytest.raises(KprofError, match="exit 3.*Segmentation"):
        ncu_run._check(_completed(3, "", "==ERROR== The application returned an error code (Segmentation fault)"), "x")
    ncu_run._check(_completed(0, "fine"), "x")


def test_missing_ncu(monkeypatch, tmp_path):
    monkeypatch.setattr(ncu_run, "find_ncu", lambda: None)
    monkeypatch.setattr(ncu_run, "find_report_module", lambda: None)
    with pytest.raises(KprofError, match="ncu .*not found"):
        ncu_run.require_ncu()
    with pytest.raises(KprofError, match="does not exist"):
        ncu_run.import_report(tmp_path / "missing.ncu-rep")
    rep = tmp_path / "x.ncu-rep"
    rep.write_bytes(b"NVPROF")
    with pytest.raises(KprofError, match="needs Nsight Compute here.*ncu_report"):
        ncu_run.import_report(rep)


class _Metric:
    """Like ncu_report's IMetric: as_double of a string metric gives a number, not an error."""

    def __init__(self, value, unit):
        self._v, self._u = value, unit

    def unit(self):
        return self._u

    def kind(self):
        return _FakeNcuReport.IMetric.ValueKind_STRING if isinstance(self._v, str) else (
            _FakeNcuReport.IMetric.ValueKind_UNKNOWN if self._v is None else _FakeNcuReport.IMetric.ValueKind_DOUBLE)

    def as_double(self):
        return 0.0 if not isinstance(self._v, float) else self._v

    def as_string(self):
        return str(self._v)


class _Action:
    NameBase_DEMANGLED = 1

    def __init__(self, name, metrics):
        self._name, self._m = name, metrics

    def name(self, base=0):
        return self._name if base == 1 else self._name.split("(")[0]

    def metric_names(self):
        return list(self._m)

    def metric_by_name(self, n):
        return self._m[n]


class _Range:
    def __init__(self, actions):
        self._a = actions

    def num_actions(self):
        return len(self._a)

    def action_by_idx(self, i):
        return self._a[i]


class _FakeNcuReport:
    """The slice of ncu_report's API kprof uses (load_report -> ranges -> actions -> metrics)."""

    class IMetric:
        ValueKind_UNKNOWN, ValueKind_ANY, ValueKind_STRING, ValueKind_DOUBLE = range(4)

    def __init__(self, ranges):
        self._ranges = ranges

    def load_report(self, path):
        if not str(path).endswith(".ncu-rep"):
            raise RuntimeError("Failed to load report")
        ctx = type("Ctx", (), {})()
        ctx.num_ranges = lambda: len(self._ranges)
        ctx.range_by_idx = lambda i: self._ranges[i]
        return ctx


def test_ncu_rep_through_the_python_report_interface(monkeypatch, tmp_path):
    def launch(name, ns, grid, dram):
        return _Action(name, {"gpu__time_duration.sum": _Metric(ns, "nsecond"), "launch__grid_size": _Metric(grid, ""),
                              "dram__throughput.avg.pct_of_peak_sustained_elapsed": _Metric(dram, "%"),
                              "launch__registers_per_thread": _Metric(40.0, "register/thread"),
                              "device__attribute_display_name": _Metric("NVIDIA H200", ""),
                              "sm__unset_metric.sum": _Metric(None, "")})
    fake = _FakeNcuReport([_Range([launch("void santa_score(float*, int)", 5200.0, 344.0, 40.5)]),
                           _Range([launch("void santa_attend(float*)", 9100.0, 256.0, 12.25)])])
    monkeypatch.setattr(ncu_run, "find_report_module", lambda: fake)
    rep = tmp_path / "c.ncu-rep"
    rep.write_bytes(b"x")
    df = ncu_run.import_report(rep)
    assert df["kernel"].tolist() == ["santa_score", "santa_attend"]
    assert df["duration_us"].tolist() == [5.2, 9.1] and df["ctas"].tolist() == [344, 256]
    assert df["dram_pct"].tolist() == [40.5, 12.25] and df["registers_per_thread"].tolist() == [40, 40]
    assert df["device__attribute_display_name"].tolist() == ["NVIDIA H200"] * 2
    assert df["sm__unset_metric.sum"].isna().all(), "a metric without a value is n/a, not 0"
    bad = tmp_path / "c.txt.ncu-rep.bak"
    bad.write_bytes(b"x")
    with pytest.raises(KprofError, match="not a readable .ncu-rep"):
        ncu_run.import_report(bad)


def test_cli_import_json_records():
    r = CliRunner().invoke(cli, ["ncu", "import", "--json", str(FIXTURE)])
    assert r.exit_code == 0, r.output
    recs = json.loads(r.output)
    assert recs[3] == {"kernel": "flash_fwd_splitkv_kernel", "ctas": 256, "duration_us": 21.472,
                       "occupancy_pct": 11.96, "eligible_warps": 0.39, "dram_pct": 65.2, "registers_per_thread": 246}


def test_cli_import_rejects_non_ncu_file(tmp_path):
    bad = tmp_path / "notes.csv"
    bad.write_text("a,b\n1,2\n")
    r = CliRunner().invoke(cli, ["ncu", "import", str(bad)])
    assert r.exit_code == 1 and "not Nsight Compute CSV" in r.output


def test_ncu_sum_is_shown_beside_the_event_timed_median(tmp_path):
    from kprof.commands.compare import run_compare
    from kprof.commands.ncu import event_latency_line
    from kprof.commands.session import MeasurementSession
    from kprof.results.store import save_result

    session = MeasurementSession.open("cpu", "cpu-smoke", {"rounds": 2, "warmup_pairs": 0, "observations": 2,
                                                             "evict_mib": 1})
    result = run_compare(session, "math", ["triton-dense"])
    path = save_result(result, tmp_path / "r.json")
    event_us = result.summaries["triton-dense"].median_us.estimate
    text = " ".join([event_latency_line("triton-dense", 2 * event_us, str(path)),
                     event_latency_line("santa", 1.0, str(path)),
                     event_latency_line("flash", 1.0, str(tmp_path / "missing.json"))])
    assert f"sum of NCU durations {2 * event_us:.2f} us vs event-timed median {event_us:.2f} us" in text
    assert "ratio 2.00" in text
    assert "has no 'santa' run" in text and "no compare Result at" in text
