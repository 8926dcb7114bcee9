"""The copy peak: measured once under the protocol, cached per device, driver and torch build,
and recorded in the environment of every later Result."""

import json

from click.testing import CliRunner

from kprof.cli.main import cli
from kprof.core.paths import measured_dir
from kprof.measure.copy_peak import PEAK_FILE, load_peak


def test_measure_peak_caches_and_later_results_report_against_it(tmp_path):
    r = CliRunner().invoke(cli, ["env", "--no-ncu", "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["copy_peak"] is None
    r = CliRunner().invoke(cli, ["env", "--no-ncu", "--measure-peak", "--json"])
    assert r.exit_code == 0, r.output
    env = json.loads(r.output)
    peak = env["copy_peak"]
    assert peak["gbs"] > 0.1 and peak["copy_bytes"] == 256 << 20
    assert load_peak(env).gbs == peak["gbs"] and (measured_dir() / PEAK_FILE).is_file()
    other = env | {"torch": "0.0.0"}
    assert load_peak(other) is None  # another torch build: not this peak
    out = tmp_path / "r.json"
    r = CliRunner().invoke(cli, ["compare", "--baseline", "math", "--method", "math", "--device", "cpu", "--rounds",
                                 "2", "--observations", "1", "--warmup-pairs", "0", "--evict-mib", "1", "--out",
                                 str(out)])
    assert r.exit_code == 0, r.output
    assert json.loads(out.read_text())["environment"]["copy_peak_gbs"] == peak["gbs"]
    assert "% peak = GB/s as a share of the measured copy peak" in " ".join(r.output.split())


def test_a_measured_peak_never_touches_the_checkouts_tracked_profiles(tmp_path, monkeypatch):
    """Without $KPROF_HOME, a checkout is the home of runs and tuned profiles, but a measured peak
    belongs to the machine: it goes to the user cache, and the shipped profiles/ file is read after it."""
    project = tmp_path / "checkout"
    (project / "profiles").mkdir(parents=True)
    (project / "pyproject.toml").write_text("")
    shipped = project / "profiles" / PEAK_FILE
    shipped.write_text('{"other|machine|x": {"gbs": 1.0}}')
    before = shipped.read_bytes()
    monkeypatch.delenv("KPROF_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(project)
    r = CliRunner().invoke(cli, ["env", "--no-ncu", "--measure-peak", "--json"])
    assert r.exit_code == 0, r.output
    assert shipped.read_bytes() == before
    assert (tmp_path / "cache" / "kprof" / "measured" / PEAK_FILE).is_file()
    assert load_peak(json.loads(r.output)) is not None
