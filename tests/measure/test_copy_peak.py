"""The copy peak: measured once under the protocol, cached per device, driver and torch build,
and recorded in the environment of every later Result."""

import json

from click.testing import CliRunner

from kprof.cli.main import cli
from kprof.measure.copy_peak import load_peak, peak_file


def test_measure_peak_caches_and_later_results_report_against_it(tmp_path):
    r = CliRunner().invoke(cli, ["env", "--no-ncu", "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["copy_peak"] is None
    r = CliRunner().invoke(cli, ["env", "--no-ncu", "--measure-peak", "--json"])
    assert r.exit_code == 0, r.output
    env = json.loads(r.output)
    peak = env["copy_peak"]
    assert peak["gbs"] > 0.1 and peak["copy_bytes"] == 256 << 20
    assert load_peak(env).gbs == peak["gbs"] and peak_file().is_file()
    other = env | {"torch": "0.0.0"}
    assert load_peak(other) is None  # another torch build: not this peak
    out = tmp_path / "r.json"
    r = CliRunner().invoke(cli, ["compare", "--baseline", "math", "--method", "math", "--device", "cpu", "--rounds",
                                 "2", "--observations", "1", "--warmup-pairs", "0", "--evict-mib", "1", "--out",
                                 str(out)])
    assert r.exit_code == 0, r.output
    assert json.loads(out.read_text())["environment"]["copy_peak_gbs"] == peak["gbs"]
    assert "% of the measured copy peak" in " ".join(r.output.split())
