import json

import numpy as np
import pytest

from kprof.core.errors import KprofError
from kprof.results.store import load_result, save_result


def test_compare_on_cpu_substitutes_the_baseline_and_labels_duplicates(cpu_result):
    assert [m.label for m in cpu_result.methods] == ["math", "math#2", "math#3"]
    assert any("substituted 'math'" in n for n in cpu_result.notes)
    assert any("not GPU numbers" in n for n in cpu_result.notes)
    assert cpu_result.observations["math"].shape == (6, 2), "3 rounds round up to a whole 6-round cycle"
    assert len(cpu_result.design["orders"]) == 6 and cpu_result.design["cycle"] == 6
    assert all(m.validation.passed for m in cpu_result.methods)
    assert [s.candidate for s in cpu_result.speedups] == ["math#2", "math#3"]


def test_json_round_trip_preserves_everything(tmp_path, cpu_result):
    path = save_result(cpu_result, tmp_path / "r.json", runs_dir=tmp_path)
    back = load_result(path)
    assert back.to_dict() == json.loads(path.read_text())
    assert back.speedups[0].interval == cpu_result.speedups[0].interval
    assert back.summaries["math"].drift == cpu_result.summaries["math"].drift
    for label, obs in cpu_result.observations.items():
        assert np.array_equal(back.observations[label], obs)
    assert back.protocol["rounds"] == 6 and back.schema == "kprof-result/3"
    assert back.design == cpu_result.design
    assert (tmp_path / "latest.json").read_text() == path.read_text()


def test_crash_while_writing_keeps_the_previous_result(tmp_path, cpu_result, monkeypatch):
    path = save_result(cpu_result, tmp_path / "r.json")
    before = path.read_text()
    import kprof.results.schema as results

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(results.Result, "to_json", boom)
    with pytest.raises(OSError):
        save_result(cpu_result, path, force=True)
    assert path.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "r.obs.npz"]


def test_tampered_sidecar_is_refused(tmp_path, cpu_result):
    path = save_result(cpu_result, tmp_path / "r.json")
    (tmp_path / "r.obs.npz").write_bytes(b"garbage")
    with pytest.raises(KprofError, match="does not match"):
        load_result(path)


def test_a_result_renamed_with_its_sidecar_still_loads(tmp_path, cpu_result):
    path = save_result(cpu_result, tmp_path / "r.json")
    path.rename(tmp_path / "kept.json")
    (tmp_path / "r.obs.npz").rename(tmp_path / "kept.obs.npz")
    back = load_result(tmp_path / "kept.json")
    assert set(back.observations) == set(cpu_result.observations)
    (tmp_path / "kept.obs.npz").unlink()
    with pytest.raises(KprofError, match=r"missing: copy it next to kept.json \(as r.obs.npz or kept.obs.npz\)"):
        load_result(tmp_path / "kept.json")
    path = save_result(cpu_result, tmp_path / "r.json")
    (tmp_path / "r.obs.npz").unlink()
    with pytest.raises(KprofError, match=r"copy it next to r.json \(as r.obs.npz\) or re-run"):
        load_result(path)


def test_not_a_result(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("{\"schema\": \"other/2\"}")
    with pytest.raises(KprofError, match="unsupported result schema"):
        load_result(p)
    p.write_text("not json")
    with pytest.raises(KprofError, match="invalid JSON"):
        load_result(p)


def test_default_paths_never_overwrite_an_earlier_run(tmp_path, cpu_result):
    a = save_result(cpu_result, runs_dir=tmp_path)
    b = save_result(cpu_result, runs_dir=tmp_path)
    assert a != b and a.exists() and b.exists()
    assert b.name.endswith("-2.json")


def test_bad_observations_never_lose_a_run(tmp_path, cpu_result):
    """NaN, infinite, zero and negative observations are left out of every number and counted;
    the JSON stays valid and the raw values stay in the sidecar."""
    import copy

    from kprof.commands.report import bad_observation_error
    from kprof.results.summarise import summarise_row

    res = copy.deepcopy(cpu_result)
    obs = res.observations["math#2"].copy()
    obs[0, 0], obs[1, 1] = np.nan, -3.0
    res.observations["math#2"] = obs
    res.summaries["math#2"] = summarise_row(obs)
    res.observations["math"][:] = np.nan  # every observation of a row bad
    res.summaries["math"] = summarise_row(res.observations["math"])
    path = save_result(res, tmp_path / "bad.json")
    back = load_result(path)
    assert back.summaries["math#2"].bad_observations == 2 and back.summaries["math"].median_us.estimate is None
    assert np.isnan(back.observations["math#2"][0, 0]) and back.observations["math#2"][1, 1] == -3.0
    error = bad_observation_error(back)
    assert error and "math 100.0%" in error and "math#2 16.7%" in error and "\n" not in error


def test_a_version_1_result_still_reads():
    """An H200 Result written before the balanced design (rotation order, bootstrap intervals)."""
    from pathlib import Path

    res = load_result(Path(__file__).parents[1] / "fixtures" / "results" / "h200-result-v1.json")
    assert res.schema == "kprof-result/1" and res.speedups and res.speedups[0].interval.has_interval
    assert res.summaries["flash"].median_us.estimate > 40 and not res.design


def test_an_existing_path_is_replaced_only_when_asked(tmp_path, cpu_result):
    from kprof.core.errors import UsageError

    path = cpu_result.save(tmp_path / "r.json")
    before = path.read_bytes()
    with pytest.raises(UsageError, match="r.json exists: choose another name, or pass force=True"):
        cpu_result.save(path)
    assert path.read_bytes() == before
    assert cpu_result.save(path, force=True) == path
    kept = save_result(cpu_result, path, keep_both=True)  # a run that ends to find its --out taken
    assert kept == tmp_path / "r-2.json" and load_result(kept).summaries.keys() == cpu_result.summaries.keys()
    with pytest.raises(UsageError, match="afile is a file"):
        (tmp_path / "afile").write_text("x")
        cpu_result.save(tmp_path / "afile" / "r.json")


def test_a_renamed_results_sidecar_is_not_overwritten(tmp_path, cpu_result):
    """Moving run.json away without its run.obs.npz leaves a Result that still names that sidecar:
    a new run.json must not replace it unasked, or the older Result can never be read again."""
    import os

    from kprof.core.errors import UsageError
    from kprof.results.store import check_destination

    first = cpu_result.save(tmp_path / "run.json")
    monday = first.rename(tmp_path / "run-monday.json")
    with pytest.raises(UsageError, match="sidecar run.obs.npz exists .*pass --force"):
        check_destination(first)
    with pytest.raises(UsageError, match="sidecar run.obs.npz exists .*force=True"):
        cpu_result.save(first)
    assert load_result(monday).observations, "the older Result still reads"
    assert save_result(cpu_result, first, keep_both=True) == tmp_path / "run-2.json"
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="not a regular file"):
        check_destination(fifo, force=True)
    with pytest.raises(UsageError, match="not a regular file"):
        cpu_result.save(fifo, force=True)
    assert fifo.exists() and not fifo.is_file()


def _save_many(path: str, tag: int, n: int) -> None:
    import numpy as np

    from kprof.results.store import load_result, save_result

    res = load_result(path)
    for i in range(n):
        res.observations = {k: np.full_like(v, float(tag * 1000 + i)) for k, v in res.observations.items()}
        save_result(res, path, force=True)


def test_two_processes_writing_one_result_path_never_pair_one_json_with_the_others_sidecar(tmp_path, cpu_result):
    import multiprocessing as mp

    path = cpu_result.save(tmp_path / "r.json")
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_save_many, args=(str(path), tag, 15)) for tag in (1, 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)
        assert p.exitcode == 0
    res = load_result(path)  # the sidecar's hash matches its JSON
    assert len({float(v.flat[0]) for v in res.observations.values()}) == 1
