"""Tuning cache files: tunes sharing one file keep every candidate either measured."""


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


def test_a_tune_key_hashes_the_launchs_own_kernels(tiny):
    from kprof.methods import get_method
    from kprof.tuning.cache import tune_key
    from kprof.tuning.source_key import source_hash

    _, shape = tiny
    keys = {launch: tune_key("triton-dense", launch, shape) for launch in ("partial", "combine")}
    assert {k.source for k in keys.values()} == {source_hash(get_method("triton-dense"), launch) for launch in keys}
    assert keys["partial"].source != keys["combine"].source
