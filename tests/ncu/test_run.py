"""The ncu subprocess command line, error mapping and the CLI import path (no GPU needed)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kprof.cli.main import cli
from kprof.errors import KprofError
from kprof.ncu import run as ncu_run
from kprof.ncu.metrics import TABLE14, resolve_metrics

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "ncu" / "h200_sdpa_flash_raw_base_units.csv"


def test_profile_command_is_assembled_as_specified(tmp_path):
    cmd = ncu_run.profile_command("/usr/local/cuda/bin/ncu", resolve_metrics(["memory"]), tmp_path / "c0",
                                  ["--method", "santa", "--workload", "w"])
    joined = " ".join(cmd)
    for part in ("--replay-mode kernel", "--cache-control all", "--clock-control none", "--nvtx",
                 "--nvtx-include kprof/", "--export", "-m kprof.ncu.target --method santa --workload w"):
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


def test_missing_ncu(monkeypatch):
    monkeypatch.setattr(ncu_run, "find_ncu", lambda: None)
    with pytest.raises(KprofError, match="ncu .*not found"):
        ncu_run.require_ncu()
    with pytest.raises(KprofError, match="needs ncu"):
        ncu_run.import_report(Path("x.ncu-rep"))


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
