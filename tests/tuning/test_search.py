"""kprof tune on the CPU: worker isolation, validation, resumable cache, key refusal, auto-pick."""

import dataclasses
import json
import textwrap

import numpy as np
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
                paired={"rounds": 16, "warmup_pairs": 0, "observations": 1, "evict_mib": 1}, out_dir=tmp_path / "tuned")
    base.update(kw)
    return TuneRequest(**base)


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


def test_a_budget_cut_reports_what_it_left_and_a_rerun_resumes_it(tiny, tmp_path):
    cut = tune_launch(_request(tiny, tmp_path, max_configs=3, budget_s=0.0), "combine", lambda *a: None)
    assert cut.measured_now == 0 and cut.left == 3, "the budget is checked before each candidate"
    rest = tune_launch(_request(tiny, tmp_path, max_configs=3), "combine", lambda *a: None)
    assert rest.measured_now == 3 and rest.left == 0


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
    assert pm.record.config["partial"] == best
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
    # the finalist's line: its paired interval, or why it was not re-timed (screened far slower)
    assert any("finalist" in m and ("x [" in m or "not re-timed" in m) for m in lines), lines


class _FakeWorker:
    """Answers a finalist's paired run with simulated observations in the design's orders."""

    def __init__(self, speedups: dict, rounds: int = 20):
        self.speedups, self.rounds = speedups, rounds

    def paired(self, config, protocol):
        from kprof.measure.design import BalancedDesign

        rng = np.random.default_rng(len(str(config)))
        d = BalancedDesign.williams(2)
        base = 10 * np.exp(0.003 * rng.standard_normal((self.rounds, 50)))
        cand = 10 / self.speedups[config["X"]] * np.exp(0.003 * rng.standard_normal((self.rounds, 50)))
        return np.stack([base, cand]), d.orders(self.rounds), d.cycle


@pytest.mark.parametrize("speedups, rounds, chosen", [
    ({1: 1.01, 2: 0.99}, 20, {"X": 1}),  # 1% faster, resolved: replaces the default
    ({1: 1.0005, 2: 0.99}, 20, {"X": 0}),  # within noise: its interval reaches 1
    ({1: 1.2, 2: 1.1}, 4, {"X": 0}),  # no interval (two pair cycles): never replaces the default
])
def test_a_finalist_replaces_the_default_only_when_its_interval_lies_above_1(speedups, rounds, chosen):
    from kprof.tuning.cache import CandidateRecord, TuneFile, TuneKey
    from kprof.tuning.search import _finalize

    key = TuneKey("m", "l", "cpu", "b", None, None, "t", "t", "s")
    tf = TuneFile(key=key, default={"X": 0}, candidates=[
        CandidateRecord({"X": 0}, "ok", 10.0, [10.0]), CandidateRecord({"X": 1}, "ok", 9.0, [9.0]),
        CandidateRecord({"X": 2}, "ok", 9.5, [9.5])])
    req = TuneRequest("m", "w", None, "cpu", finalists=2)
    notes = []
    _finalize(tf, _FakeWorker(speedups, rounds), req, notes.append)
    assert tf.best == chosen
    assert len(tf.finalists) == 2 and all("speedup" in f for f in tf.finalists)
    if rounds >= 10:
        assert all(f["low"] is not None and f["cycles"] == rounds // 2 for f in tf.finalists)
        assert sum("x [" in n for n in notes) == 2
    else:
        assert all(f["low"] is None and "too few rounds" in f["note"] for f in tf.finalists)


def test_source_hash_ignores_comments_and_docstrings_but_not_code():
    from kprof.tuning.cache import code_text

    base = 'def f(x):\n    """Doc."""\n    return x + 1  # one\n'
    reworded = '# header\ndef f(x):\n    """Other words,\n    two lines."""\n    return (x +\n            1)\n'
    changed = 'def f(x):\n    """Doc."""\n    return x + 2\n'
    assert code_text(base) == code_text(reworded)
    assert code_text(base) != code_text(changed)
    assert "Doc" not in code_text(base) and "one" not in code_text(base)


def test_source_hash_text_ignores_the_empty_ast_fields_newer_pythons_add():
    """Profiles are measured on the device's Python and used on others: 3.12 adds an empty
    ``type_params`` to every function, which must not change the code text (an ``ast.dump``-based
    text fails this; the cross-interpreter test below covers ``ast.unparse``'s f-string quoting)."""
    import ast

    from kprof.tuning.cache import _canonical

    tree = ast.parse("def f(x):\n    return x\n")
    plain = _canonical(tree)
    fn = tree.body[0]
    fn._fields = (*fn._fields, "type_params")
    fn.type_params = []
    assert _canonical(tree) == plain


def _other_pythons() -> list[str]:
    import glob
    import os
    import shutil
    import sys

    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    found = [shutil.which(f"python3.{m}") for m in range(8, 16)] + glob.glob(f"{root}/versions/3.*/bin/python")
    here = os.path.realpath(sys.executable)
    return sorted({os.path.realpath(p) for p in found if p} - {here})


def test_source_hash_text_is_the_same_under_every_installed_python():
    """The real check behind the one above: the code text of a module with nested-quote f-strings
    (where ``ast.unparse`` differs between 3.11 and 3.12) computed by each other CPython >= 3.9
    installed here equals this interpreter's."""
    import inspect
    import subprocess

    import kprof.kernels.fathom.method as fathom_method
    from kprof.tuning import cache as tune_cache

    script = ("import ast, sys\n" + inspect.getsource(tune_cache._canonical) + inspect.getsource(tune_cache.code_text)
              + "sys.stdout.write(code_text(open(sys.argv[1]).read()))\n")
    script = script.replace("def code_text(source: str) -> str:", "def code_text(source):")
    script = script.replace("def _canonical(node) -> str:", "def _canonical(node):")
    here = tune_cache.code_text(inspect.getsource(fathom_method))
    checked = 0
    for exe in _other_pythons():
        version = subprocess.run([exe, "-c", "import sys; print(sys.version_info[:2] >= (3, 9))"],
                                 capture_output=True, text=True).stdout.strip()
        if version != "True":
            continue
        out = subprocess.run([exe, "-c", script, fathom_method.__file__], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert out.stdout == here, f"{exe} computes another code text"
        checked += 1
    if not checked:
        pytest.skip("no other CPython >= 3.9 installed here to compare with")
