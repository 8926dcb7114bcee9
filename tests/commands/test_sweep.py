"""Sweeps: --vary expands a method option into rows, --workload repeats into one paired run per
workload, and one Result (and table, CSV, plot) holds the whole grid."""

import json

import pytest
from click.testing import CliRunner

from kprof.cli.main import cli
from kprof.commands.sweep import expand_vary, with_variants
from kprof.core.errors import KprofError
from kprof.workloads.storage import save

TINY = ["--rounds", "2", "--observations", "1", "--warmup-pairs", "0", "--evict-mib", "1", "--device", "cpu"]


@pytest.mark.parametrize("text, rows", [
    ("santa:s=32,64", ["santa:s=32", "santa:s=64"]),
    ("santa:p=16,r=4:s=32,64", ["santa:p=16,r=4,s=32", "santa:p=16,r=4,s=64"]),
    ("triton-dense:partial.BLOCK_N=16, 32", ["triton-dense:partial.BLOCK_N=16", "triton-dense:partial.BLOCK_N=32"]),
    ("pkg.mod:Cls:scale=1,2", ["pkg.mod:Cls:scale=1", "pkg.mod:Cls:scale=2"]),
])
def test_vary_expands_into_specs(text, rows):
    assert expand_vary(text) == rows


@pytest.mark.parametrize("text", ["santa", "santa:s", "santa:s=", ":s=1,2", "santa:=1,2"])
def test_a_malformed_vary_names_the_form(text):
    with pytest.raises(KprofError, match=r"write SPEC:KEY=V1,V2"):
        expand_vary(text)


@pytest.mark.parametrize("text", ["santa:s=32,,64", "santa:s=32,", "santa:s=,32"])
def test_an_empty_vary_value_is_refused_not_dropped(text):
    with pytest.raises(KprofError, match=r"has an empty value"):
        expand_vary(text)


def test_variants_follow_the_candidates_once():
    assert with_variants(["flash", "santa:s=32"], ["santa:s=32,64"]) == ["flash", "santa:s=32", "santa:s=64"]


@pytest.fixture
def two_workloads(tmp_path, make_workload):
    paths = []
    for n, seed in ((128, 1), (256, 2)):
        path = tmp_path / f"tiny-{n}.safetensors"
        save(make_workload(4, 2, n, 16, seed=seed), path)
        paths.append(str(path))
    return paths


def _each_workload(paths):
    return [arg for p in paths for arg in ("--workload", p)]


def test_a_2x2_sweep_is_one_result_one_table_and_a_plot(two_workloads, tmp_path):
    out = tmp_path / "sweep.json"
    r = CliRunner().invoke(cli, ["compare", "--baseline", "math", "--vary", "triton-dense:partial.BLOCK_N=16,32",
                                 "--out", str(out), *TINY, *_each_workload(two_workloads)])
    assert r.exit_code == 0, r.output
    assert "workload 2/2" in r.output and "BLOCK_N=32" in r.output
    doc = json.loads(out.read_text())
    rows = [(m["workload"], m["label"]) for m in doc["methods"]]
    names = [p["name"] for p in doc["workload"]["points"]]
    assert len(rows) == 6 and {w for w, _ in rows} == set(names)
    assert all(label.endswith(f" @ {w}") for w, label in rows)
    pairs = [(s["baseline"], s["candidate"]) for s in doc["speedups"]]
    assert len(pairs) == 4 and all(b.split(" @ ")[1] == c.split(" @ ")[1] for b, c in pairs)  # within a workload
    assert all(m["validation"]["passed"] and m["bytes_per_call"] > 0 for m in doc["methods"])
    r = CliRunner().invoke(cli, ["report", str(out), "--csv", "--plot", str(tmp_path / "sweep.png")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "sweep.png").stat().st_size > 10_000
    lines = r.output.splitlines()
    header = lines[0].split(",")
    tokens = {line.split(",")[header.index("tokens")] for line in lines[1:7]}
    assert tokens == {"128", "256"}


def test_one_workload_twice_is_refused(two_workloads):
    r = CliRunner().invoke(cli, ["compare", "--baseline", "math", "--method", "math", "--workload", two_workloads[0],
                                 "--workload", two_workloads[0], *TINY])
    assert r.exit_code != 0 and "names one workload twice" in r.output


def _saved(tmp_path, make_workload, name, **kw):
    path = tmp_path / name
    save(make_workload(**kw), path)
    return str(path)


def test_a_method_that_cannot_run_on_one_workload_stops_the_sweep_before_any_timing(tmp_path, make_workload):
    ok = _saved(tmp_path, make_workload, "d16.safetensors", hq=4, hkv=2, n=64, d=16, seed=1)
    odd = _saved(tmp_path, make_workload, "d24.safetensors", hq=4, hkv=2, n=64, d=24, seed=2)
    r = CliRunner().invoke(cli, ["compare", "--baseline", "math", "--method", "triton-dense", "--workload", ok,
                                 "--workload", odd, *TINY])
    text = " ".join(r.output.split())
    assert r.exit_code == 1 and "not every method runs on every workload (triton-dense on random-2" in text
    assert "timing" not in text  # refused before the first workload was timed


def test_the_same_content_twice_is_refused_and_a_shared_name_gets_its_hash(tmp_path, make_workload):
    a = _saved(tmp_path, make_workload, "a.safetensors", hq=4, hkv=2, n=64, d=16, seed=1)
    b = _saved(tmp_path, make_workload, "b.safetensors", hq=4, hkv=2, n=64, d=16, seed=1)
    r = CliRunner().invoke(cli, ["compare", "--baseline", "math", "--method", "math", "--workload", a, "--workload", b,
                                 *TINY])
    assert r.exit_code == 1 and "the same workload content twice" in r.output
    c = _saved(tmp_path, make_workload, "c.safetensors", hq=4, hkv=2, n=128, d=16, seed=1)  # also "random-1"
    out = tmp_path / "r.json"
    r = CliRunner().invoke(cli, ["compare", "--baseline", "math", "--method", "math", "--workload", a, "--workload", c,
                                 "--out", str(out), *TINY])
    assert r.exit_code == 0, r.output
    tags = [p["name"] for p in json.loads(out.read_text())["workload"]["points"]]
    assert len(set(tags)) == 2 and all(t.startswith("random-1-") for t in tags)


@pytest.mark.slow
def test_a_sweep_spread_over_two_devices_is_the_same_grid_in_one_result(two_workloads, tmp_path):
    """Without a GPU, --devices 0,1 runs the two workloads in two interpreter worker processes."""
    out = tmp_path / "spread.json"
    r = CliRunner().invoke(cli, ["compare", "--baseline", "math", "--method", "triton-dense", "--devices", "0,1",
                                 "--out", str(out), *TINY, *_each_workload(two_workloads)])
    assert r.exit_code == 0, r.output
    assert "device 0:" in r.output and "device 1:" in r.output
    doc = json.loads(out.read_text())
    names = [p["name"] for p in doc["workload"]["points"]]
    rows = [(m["workload"], m["label"]) for m in doc["methods"]]
    assert len(rows) == 4 and [w for w, _ in rows] == [names[0], names[0], names[1], names[1]]
    assert len(doc["speedups"]) == 2 and all(m["validation"]["passed"] for m in doc["methods"])
    assert any("ran at once on devices 0, 1" in n for n in doc["notes"])


BROKEN = """
from kprof.methods.base import Method
from kprof.methods.registry import register


@register
class Broken(Method):
    name = "test-broken"
    summary = "available everywhere, fails when prepared"

    def _prepare(self, workload, config):
        raise RuntimeError("simulated failure while preparing")
"""


@pytest.mark.slow
def test_a_run_failing_on_one_device_stops_the_spread_sweep_with_one_line(two_workloads, tmp_path, monkeypatch):
    (tmp_path / "broken_plugin.py").write_text(BROKEN)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("KPROF_PLUGINS", "broken_plugin")
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "x.json"
    r = CliRunner().invoke(cli, ["compare", "--baseline", "math", "--method", "test-broken", "--devices", "0,1",
                                 "--out", str(out), *TINY, *_each_workload(two_workloads)])
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert "sweep over devices stopped" in r.output and "simulated failure while preparing" in r.output
    assert not out.exists()


def test_joined_runs_of_different_lengths_say_each_workloads_rounds(real_result):
    import copy

    from kprof.commands.sweep import join_runs

    runs = [copy.deepcopy(real_result) for _ in range(2)]
    runs[1].protocol = runs[1].protocol | {"rounds": runs[0].protocol["rounds"] + 2}
    joined = join_runs(runs, ["w1", "w2"])
    n = runs[0].protocol["rounds"]
    assert joined.protocol["rounds"] == n + 2
    assert f"rounds per workload: w1 {n}, w2 {n + 2} (the header's {n + 2} is the most)" in joined.notes
    same = join_runs([copy.deepcopy(real_result) for _ in range(2)], ["w1", "w2"])
    assert same.protocol["rounds"] == n and not any("rounds per workload" in x for x in same.notes)


def test_a_validation_failure_on_a_later_workload_keeps_the_workloads_timed_before_it(two_workloads, tmp_path,
                                                                                       monkeypatch):
    from pathlib import Path

    from kprof.results.store import load_result

    userpkg = str(Path(__file__).parents[1] / "fixtures" / "userpkg")
    monkeypatch.syspath_prepend(userpkg)
    out = tmp_path / "sweep.json"
    r = CliRunner().invoke(cli, ["compare", "--baseline", "math", "--method", "userpkg.broken:wrong_on_long_contexts",
                                 "--out", str(out), *TINY, *_each_workload(two_workloads)])
    text = " ".join(r.output.split())
    assert r.exit_code == 3 and "on workload 2 of 2 (random-2)" in text, text
    assert "it and the workloads after it were not timed" in text and "nothing was timed" not in text
    assert f"the workloads timed before it are kept in {out}, marked partial" in text
    kept = load_result(out)
    assert kept.partial.startswith("workload 2 of 2 (random-2)") and kept.summaries
    assert all(label.endswith("@ random-1") for label in kept.summaries), list(kept.summaries)
    method = "userpkg.broken:wrong_on_long_contexts"
    again = CliRunner().invoke(cli, ["compare", "--baseline", "math", "--method", method, "--json", "--out",
                                     str(tmp_path / "again.json"), *TINY, *_each_workload(two_workloads)])
    assert again.exit_code == 3 and json.loads(again.stdout)["partial"].startswith("workload 2 of 2")
