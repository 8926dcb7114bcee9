"""kprof tune --export writes the chosen configs; kprof.tuning.load_config reads them back, from the
file or from this machine's tuning caches; bad files are one-line errors."""

import json

import pytest
from click.testing import CliRunner

from kprof.cli.main import cli
from kprof.core.errors import KprofError
from kprof.tuning import load_config


@pytest.mark.slow
def test_export_then_load_config(tiny, tmp_path):
    path, shape = tiny
    export = tmp_path / "configs.json"
    export.write_text(json.dumps({"format": "kprof-configs/1", "configs": [
        {"method": "other", "launch": "x", "device": "d", "bucket": "b", "config": {"A": 1}}]}))
    r = CliRunner().invoke(cli, ["tune", "--method", "triton-dense", "--launch", "combine", "--workload", path,
                                 "--device", "cpu", "--strategy", "random", "--max-configs", "2", "--rounds", "1",
                                 "--observations", "1", "--finalists", "1", "--export", str(export)])
    assert r.exit_code == 0, r.output
    doc = json.loads(export.read_text())
    mine = [e for e in doc["configs"] if e["method"] == "triton-dense"]
    assert len(mine) == 1 and mine[0]["launch"] == "combine" and mine[0]["device"] == "cpu-interpreter"
    assert any(e["method"] == "other" for e in doc["configs"]), "entries of other setups are kept"
    chosen = mine[0]["config"]
    assert set(chosen) == {"BLOCK_D", "num_warps"}
    assert load_config("triton-dense", "combine", shape, export) == chosen
    assert load_config("triton-dense", "combine", shape) == chosen  # from this machine's tuning caches
    as_dict = {"hq": shape.hq, "hkv": shape.hkv, "n": shape.n, "d": shape.d, "dtype": shape.dtype}
    assert load_config("triton-dense", "combine", as_dict, export) == chosen
    with pytest.raises(KprofError, match="no config for triton-dense.partial"):
        load_config("triton-dense", "partial", shape, export)


def test_a_foreign_export_file_is_refused_before_the_tune(tiny, tmp_path):
    path, _ = tiny
    foreign = tmp_path / "notes.json"
    foreign.write_text('{"mine": true}')
    r = CliRunner().invoke(cli, ["tune", "--method", "triton-dense", "--workload", path, "--device", "cpu",
                                 "--export", str(foreign)])
    assert r.exit_code != 0 and "is not a kprof config export" in r.output
    assert foreign.read_text() == '{"mine": true}'


def test_load_config_refuses_a_cache_measured_on_another_setup(tiny, tmp_path):
    from kprof.core.paths import tuned_dir
    from kprof.tuning.cache import load_tune_file

    path, shape = tiny
    r = CliRunner().invoke(cli, ["tune", "--method", "triton-dense", "--launch", "combine", "--workload", path,
                                 "--device", "cpu", "--strategy", "random", "--max-configs", "2", "--rounds", "1",
                                 "--observations", "1", "--finalists", "1"])
    assert r.exit_code == 0, r.output
    cache = next(tuned_dir().glob("triton-dense__combine__*.json"))
    assert load_config("triton-dense", "combine", shape) == load_tune_file(cache).best
    doc = json.loads(cache.read_text())
    doc["key"]["triton"] = "0.0.1"
    cache.write_text(json.dumps(doc))
    with pytest.raises(KprofError, match=r"measured on another setup \(triton differ\)"):
        load_config("triton-dense", "combine", shape)
