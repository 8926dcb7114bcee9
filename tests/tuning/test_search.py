"""kprof tune on the CPU: worker isolation, validation, resumable cache, key refusal, auto-pick."""

import dataclasses
import json
import textwrap

import pytest

from kprof.core.errors import KprofError
from kprof.tuning.cache import TuneFile, load_tune_file, tune_key
from kprof.tuning.search import TuneRequest, tune_launch

PLUGIN = textwrap.dedent('''
    import os, time
    import torch
    from kprof.core.config_space import LaunchSpace, Param
    from kprof.methods.base import Method, Prepared, Stage
    from kprof.methods.dense_reference import dense_attention_fp64
    from kprof.methods.registry import register

    @register
    class Faulty(Method):
        """MODE 0 right, 1 wrong answer, 2 raises at prepare, 3 kills its process, 4 hangs."""
        name = "test-faulty"
        summary = "a method whose candidates fail in every way a kernel can"
        def config_space(self):
            return {"main": LaunchSpace("main", (Param("MODE", (0, 1, 2, 3, 4), 0),))}
        def _prepare(self, w, config):
            mode = config["main"]["MODE"]
            if mode == 2:
                raise RuntimeError("simulated compile error: out of resources")
            ref = dense_attention_fp64(w).to(w.dtype)
            out = torch.empty_like(ref)
            def run():
                if mode == 3:
                    os._exit(7)
                if mode == 4:
                    time.sleep(60)
                out.copy_(ref * (1.5 if mode == 1 else 1.0))
                return out
            return Prepared(method=self.name, config=config, run=run, stages=(Stage("main", run),),
                            expected_kernels=(), output=out)
''')


def _request(tiny, tmp_path, method="triton-dense", **kw):
    path, shape = tiny
    base = dict(method=method, workload=path, shape=shape, device="cpu", strategy="random", max_configs=3,
                rounds=1, observations=1, warmup=0, evict_mib=1, timeout_s=60, finalists=1,
                paired={"rounds": 32, "warmup_pairs": 0, "observations": 1, "evict_mib": 1}, out_dir=tmp_path / "tuned")
    base.update(kw)
    return TuneRequest(**base)


@pytest.mark.slow
def test_tune_writes_a_cache_and_resumes_without_remeasuring(tiny, tmp_path):
    first = tune_launch(_request(tiny, tmp_path, max_configs=2), "combine", lambda *a: None)
    assert first.path.exists() and first.measured_now == 2
    before = {json.dumps(c.config, sort_keys=True): c.median_us for c in first.file.candidates}
    assert all(c.status == "ok" for c in first.file.candidates)
    assert first.file.candidates[0].config == first.file.default, "the default is always measured"
    # "interrupted" after two candidates: asking for three measures only the missing one
    again = tune_launch(_request(tiny, tmp_path, max_configs=3), "combine", lambda *a: None)
    assert again.measured_now == 1 and again.left == 0
    for c in again.file.candidates[:2]:
        assert before[json.dumps(c.config, sort_keys=True)] == c.median_us
    assert load_tune_file(again.path).best is not None


@pytest.mark.slow
def test_wrong_crashing_and_hanging_candidates_are_recorded_and_the_run_goes_on(tiny, tmp_path, monkeypatch):
    (tmp_path / "faulty_plugin.py").write_text(PLUGIN)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("KPROF_PLUGINS", "faulty_plugin")
    monkeypatch.syspath_prepend(str(tmp_path))
    req = _request(tiny, tmp_path, method="test-faulty", strategy="exhaustive", max_configs=None, timeout_s=8)
    out = tune_launch(req, "main", lambda *a: None)
    status = {c.config["MODE"]: (c.status, c.reason) for c in out.file.candidates}
    assert status[0][0] == "ok"
    assert status[1][0] == "rejected" and "wrong answer" in status[1][1]
    assert status[2][0] == "failed" and "simulated compile error" in status[2][1]
    assert status[3][0] == "failed" and "died" in status[3][1]
    assert status[4][0] == "failed" and "timeout" in status[4][1]
    assert out.file.best == {"MODE": 0}


@pytest.mark.slow
def test_a_budget_cut_reports_what_it_left_and_a_rerun_resumes_it(tiny, tmp_path):
    cut = tune_launch(_request(tiny, tmp_path, max_configs=3, budget_s=0.0), "combine", lambda *a: None)
    assert cut.measured_now == 0 and cut.left == 3, "the budget is checked before each candidate"
    rest = tune_launch(_request(tiny, tmp_path, max_configs=3), "combine", lambda *a: None)
    assert rest.measured_now == 3 and rest.left == 0


@pytest.mark.slow
def test_a_cache_from_another_setup_is_refused_and_not_overwritten_unless_replaced(tiny, tmp_path):
    req = _request(tiny, tmp_path, max_configs=1)
    out = tune_launch(req, "combine", lambda *a: None)
    doc = json.loads(out.path.read_text())
    doc["key"]["triton"] = "0.0.1"
    out.path.write_text(json.dumps(doc))
    with pytest.raises(KprofError, match="another setup.*triton"):
        tune_launch(req, "combine", lambda *a: None)
    assert json.loads(out.path.read_text())["key"]["triton"] == "0.0.1"
    messages = []
    replaced = tune_launch(dataclasses.replace(req, replace_stale=True), "combine", lambda *a: messages.append(a))
    aside = out.path.with_suffix(".stale.json")
    assert json.loads(aside.read_text())["key"]["triton"] == "0.0.1", "the stale file is kept, unmodified"
    assert json.loads(replaced.path.read_text())["key"]["triton"] != "0.0.1"
    assert any(len(m) > 3 and "another setup" in m[3] and "triton" in m[3] for m in messages)
    doc = json.loads(replaced.path.read_text())
    doc["key"]["triton"] = "0.0.2"
    replaced.path.write_text(json.dumps(doc))
    tune_launch(dataclasses.replace(req, replace_stale=True), "combine", lambda *a: None)
    assert json.loads(aside.read_text())["key"]["triton"] == "0.0.1", "an earlier stale file is never overwritten"
    assert json.loads(out.path.with_suffix(".stale-2.json").read_text())["key"]["triton"] == "0.0.2"
    out.path.write_text("{not json")
    with pytest.raises(KprofError, match="corrupt"):
        tune_launch(req, "combine", lambda *a: None)


@pytest.mark.slow
def test_the_cache_records_its_eviction_and_refuses_to_resume_under_the_other(tiny, tmp_path):
    read = tune_launch(_request(tiny, tmp_path, max_configs=1, eviction="read"), "combine", lambda *a: None)
    assert json.loads(read.path.read_text())["eviction"] == "read"
    assert load_tune_file(read.path).eviction == "read"
    with pytest.raises(KprofError, match="measured with --eviction read, not read-write.*--eviction read"):
        tune_launch(_request(tiny, tmp_path, max_configs=2), "combine", lambda *a: None)
    again = tune_launch(_request(tiny, tmp_path, max_configs=2, eviction="read"), "combine", lambda *a: None)
    assert again.measured_now == 1, "the same mode resumes"
    from kprof.tuning.export import exported

    assert exported(again.file).eviction == "read"
    fresh = tune_launch(_request(tiny, tmp_path, max_configs=1, replace_stale=True), "combine", lambda *a: None)
    assert fresh.file.eviction == "read-write" and fresh.measured_now == 1
    assert json.loads(read.path.with_suffix(".stale.json").read_text())["eviction"] == "read", "kept aside"
    doc = json.loads(fresh.path.read_text())
    doc["eviction"] = "sometimes"
    fresh.path.write_text(json.dumps(doc))
    with pytest.raises(KprofError, match="corrupt.*eviction 'sometimes'"):
        load_tune_file(fresh.path)
    doc["eviction"] = "read"
    fresh.path.write_text(json.dumps(doc))
    del doc["eviction"]  # a cache written before the option existed ran under the paper's eviction
    fresh.path.write_text(json.dumps(doc))
    assert load_tune_file(fresh.path).eviction == "read-write"


def test_measurements_pick_the_tuned_config_when_the_key_matches(tiny, tmp_path, monkeypatch):
    from kprof.commands.session import MeasurementSession

    path, shape = tiny
    key = tune_key("triton-dense", "partial", shape)
    best = {"BLOCK_N": 32, "PROGRAMS_PER_SM": 0, "NUM_SPLITS": 8, "num_warps": 2, "num_stages": 1}
    from kprof.core.paths import tuned_dir

    TuneFile(key=key, default={"BLOCK_N": 64, "PROGRAMS_PER_SM": 2, "NUM_SPLITS": 64, "num_warps": 4, "num_stages": 3},
             best=best, eviction="read").save(tuned_dir())  # the lookup finds it under $KPROF_HOME
    session = MeasurementSession.open("cpu", path, {"rounds": 1, "observations": 1, "warmup_pairs": 0})
    pm = session.prepare("triton-dense", "triton-dense", "candidate")
    assert pm.record.config["partial"].items() >= best.items()  # params the file predates keep their defaults
    assert any("using tuned config" in n and "tuned with --eviction read, timed now with read-write" in n
               for n in session.notes)
    plain = MeasurementSession.open("cpu", path, {}, config_mode="default")
    assert plain.prepare("triton-dense", "t", "candidate").record.config["partial"]["BLOCK_N"] == 64
    config_file = tmp_path / "cfg.json"
    config_file.write_text(json.dumps({"partial": {"BLOCK_N": 16}}))
    given = MeasurementSession.open("cpu", path, {}, config_mode=str(config_file))
    assert given.prepare("triton-dense", "t", "candidate").record.config["partial"]["BLOCK_N"] == 16


def test_progress_reports_a_line_per_candidate_and_finalist(tiny, tmp_path):
    """A run cut short (a step timeout) must leave its log saying how far it got."""
    lines = []
    out = tune_launch(_request(tiny, tmp_path, max_configs=3, finalists=1), "combine",
                      lambda launch, done, total, message="": lines.append(message) if message else None)
    measured = [m for m in lines if m.startswith("combine ") and "/3 " in m]
    assert len(measured) == out.measured_now == 3
    assert all(" us (" in m or "failed" in m or "rejected" in m for m in measured)
    assert out.file.finalists, "three ok candidates leave a non-default finalist"
    # the finalist's line: its paired interval, or why there is none (screened far slower, or so many
    # bad rounds on a loaded machine that too few cycles were left: the line then says how many)
    assert any("finalist" in m and ("x [" in m or "not re-timed" in m or "left out for a bad round" in m)
               for m in lines), lines
