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


def test_a_tuned_profile_with_a_value_outside_the_space_is_skipped_with_a_note_naming_it(tmp_path):
    from kprof.measure.fingerprint import collect_environment
    from kprof.tuning.cache import TuneFile, tune_key
    from kprof.tuning.lookup import tuned_overrides
    from kprof.workloads.specs import get_spec

    shape, env = get_spec("cpu-smoke").shape, collect_environment()
    key = tune_key("triton-dense", "partial", shape, env)
    default = {"BLOCK_N": 64, "PROGRAMS_PER_SM": 2, "NUM_SPLITS": 64, "num_warps": 4, "num_stages": 3}
    TuneFile(key=key, default=default, best={**default, "BLOCK_N": 7}).save(tmp_path)
    overrides, notes = tuned_overrides("triton-dense", shape, tmp_path, env)
    assert overrides == {}
    assert len(notes) == 1 and notes[0].startswith(f"triton-dense.partial: tuned config not used: {tmp_path}")
    assert "BLOCK_N=7" in notes[0] and notes[0].endswith("defaults used")
