"""kprof capture: a synthetic spec written as a workload file; a source is required."""


from click.testing import CliRunner

from kprof.cli.main import cli
from kprof.workloads import load, synthesize


def test_capture_synthetic_writes_the_spec(tmp_path):
    out = tmp_path / "smoke.safetensors"
    r = CliRunner().invoke(cli, ["capture", "--synthetic", "cpu-smoke", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert load(out).content_hash() == synthesize("cpu-smoke").content_hash()


def test_capture_needs_a_source(tmp_path):
    r = CliRunner().invoke(cli, ["capture", "--out", str(tmp_path / "x.safetensors")])
    assert r.exit_code == 2 and "needs --model, --layer, --context" in r.output
