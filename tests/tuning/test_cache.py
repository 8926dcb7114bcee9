"""The tuning key's source hash covers every file a method's launches run, found without lists."""

from pathlib import Path

import pytest

from kprof.methods import get_method
from kprof.tuning.cache import source_files, source_hash

FAMILIES = {"santa": "santa", "triton-dense": "dense", "fathom": "fathom"}


def test_a_family_hashes_its_folder_and_kernels_common():
    for method, family in FAMILIES.items():
        files = {f.as_posix() for f in source_files(get_method(method))}
        assert any(f.endswith(f"kernels/{family}/method.py") for f in files)
        assert any(f.endswith("kernels/common/split_kv_combine.py") for f in files)
        assert any(f.endswith("kernels/common/dependent_launch.py") for f in files)
    assert [f.name for f in source_files(get_method("flash"))] == ["sdpa.py"]


@pytest.mark.parametrize("shared, edit, moves", [
    ("kernels/common/split_kv_combine.py", "\nEXTRA = 1\n", True),
    ("kernels/common/dependent_launch.py", "\ndef extra():\n    return 2\n", True),
    ("kernels/common/split_kv_combine.py", "\n# only a comment\n", False),
])
def test_editing_a_shared_module_changes_every_dependent_hash(monkeypatch, shared, edit, moves):
    before = {m: source_hash(get_method(m)) for m in (*FAMILIES, "flash")}
    real = Path.read_text

    def edited(self, *a, **k):
        text = real(self, *a, **k)
        return text + edit if self.as_posix().endswith(shared) else text

    monkeypatch.setattr(Path, "read_text", edited)
    after = {m: source_hash(get_method(m)) for m in (*FAMILIES, "flash")}
    for m in FAMILIES:
        assert (after[m] != before[m]) == moves, m
    assert after["flash"] == before["flash"]


def test_editing_one_family_leaves_the_others(monkeypatch):
    before = {m: source_hash(get_method(m)) for m in FAMILIES}
    real = Path.read_text
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: real(self, *a, **k)
                        + ("\nEXTRA = 1\n" if self.as_posix().endswith("kernels/santa/step.py") else ""))
    after = {m: source_hash(get_method(m)) for m in FAMILIES}
    assert after["santa"] != before["santa"]
    assert after["triton-dense"] == before["triton-dense"] and after["fathom"] == before["fathom"]


def _tune_in_process(folder: str, configs: list[int]) -> None:
    """A tune of its own: one key, its own candidates, the file saved after each, as tunes do."""
    from pathlib import Path

    from kprof.tuning.cache import CandidateRecord, TuneFile, TuneKey

    key = TuneKey("m", "partial", "cpu-interpreter", "b", None, None, "t", "tr", "src")
    tf = TuneFile(key, default={"BLOCK_N": 16})
    for c in configs:
        tf.candidates.append(CandidateRecord({"BLOCK_N": c}, "ok", median_us=float(c)))
        tf.save(Path(folder))


def test_two_tunes_sharing_one_cache_keep_every_candidate_either_measured(tmp_path):
    """Each tune rewrites the cache after every candidate; merged under the folder lock, neither
    tune's candidates are lost when the other saves."""
    import multiprocessing as mp

    from kprof.tuning.cache import load_tune_file

    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_tune_in_process, args=(str(tmp_path), list(range(start, start + 60, 2))))
             for start in (0, 1)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    (path,) = tmp_path.glob("*.json")
    merged = load_tune_file(path)
    assert sorted(c.config["BLOCK_N"] for c in merged.candidates) == list(range(60))
