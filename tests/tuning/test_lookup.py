"""Launch overrides from a --config file: a flat file applies to each method only the launches it has."""

import json

from kprof.tuning.lookup import file_overrides


def test_a_flat_file_gives_each_method_only_its_own_launches(tmp_path):
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps({"partial": {"BLOCK_N": 32}}))
    assert file_overrides(str(path), "triton-dense", {"partial": None, "combine": None}) == {"partial": {"BLOCK_N": 32}}
    assert file_overrides(str(path), "math", {}) == {}, "a baseline without the launch is left alone"
    per_method = tmp_path / "per.json"
    per_method.write_text(json.dumps({"triton-dense": {"combine": {"BLOCK_D": 16}}}))
    assert file_overrides(str(per_method), "triton-dense", {"combine": None}) == {"combine": {"BLOCK_D": 16}}
    assert file_overrides(str(per_method), "santa", {"attend": None}) == {}
