"""The pytest fixtures as a user meets them: an inner pytest run with --benchmark-autosave writes
kprof's statistics into pytest-benchmark's JSON; --benchmark-disable runs each callable once."""

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

USER_TEST = textwrap.dedent('''
    import pytest
    import torch

    CALLS = []
    a = torch.randn(32, 24)
    b = torch.randn(24, 16)
    P = {"rounds": 24, "observations": 3, "warmup_pairs": 1, "evict_mib": 1, "device": "cpu"}


    def via_mm(input, mat2):
        CALLS.append("mm")
        return torch.mm(input, mat2)


    def via_einsum(input, mat2):
        CALLS.append("einsum")
        return torch.einsum("ij,jk->ik", input, mat2)


    def test_pair(kprof_compare):
        res = kprof_compare(via_mm, via_einsum, inputs={"input": a, "mat2": b}, reference=torch.mm, **P)
        print("CALLS", CALLS.count("mm"), CALLS.count("einsum"), res is None)


    def off_by_one(input, mat2):
        return torch.mm(input, mat2) + 1


    def test_wrong(kprof_compare):
        with pytest.raises(Exception, match="differs from the reference"):
            kprof_compare(via_mm, off_by_one, inputs={"input": a, "mat2": b}, reference=torch.mm, **P)
        print("WRONG CAUGHT")


    def test_one(kprof_benchmark):
        s = kprof_benchmark(lambda: a @ b, **P)
        print("SUMMARY", s is None)
''')


def inner_env(tmp_path, **extra) -> dict:
    """The environment of an inner pytest run: its own KPROF_HOME, and none of the outer run's
    pytest variables (under xdist, PYTEST_XDIST_WORKER would make pytest-benchmark disable itself)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return env | {"KPROF_HOME": str(tmp_path / "home")} | extra


def run_inner(tmp_path, *flags):
    (tmp_path / "test_user.py").write_text(USER_TEST)
    env = inner_env(tmp_path)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "test_user.py",
                           f"--benchmark-storage={tmp_path / 'bench'}", *flags],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_autosave_stores_the_speedup_interval_and_the_kprof_median(tmp_path):
    r = run_inner(tmp_path, "--benchmark-autosave")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "WRONG CAUGHT" in r.stdout
    saved = list((tmp_path / "bench").rglob("*.json"))
    assert len(saved) == 1
    benches = {b["name"]: b for b in json.loads(saved[0].read_text())["benchmarks"]}
    pair = benches["test_pair"]["extra_info"]
    assert pair["kprof_baseline"] == "via_mm" and pair["kprof_candidate"] == "via_einsum"
    assert pair["kprof_speedup_low"] <= pair["kprof_speedup"] <= pair["kprof_speedup_high"]
    assert pair["kprof_baseline_median_us"] > 0 and pair["kprof_candidate_median_us"] > 0
    assert benches["test_pair"]["stats"]["rounds"] == 72  # one host-timed call per kprof observation
    one = benches["test_one"]["extra_info"]
    assert one["kprof_rounds"] == 24 and one["kprof_median_us_low"] <= one["kprof_median_us"]


@pytest.mark.slow
def test_disable_runs_each_callable_once_and_times_nothing(tmp_path):
    r = run_inner(tmp_path, "--benchmark-disable", "--benchmark-autosave")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "CALLS 1 1 True" in r.stdout and "SUMMARY True" in r.stdout
    assert "WRONG CAUGHT" in r.stdout  # no timing, but a wrong candidate still fails
    assert not list(tmp_path.rglob("*.json"))


GATED_TEST = textwrap.dedent('''
    import os

    import torch

    a, b = torch.randn(48, 48), torch.randn(48, 48)
    SLOW = int(os.environ.get("SLOW", "1"))  # the planted regression: the candidate repeats its work
    P = {"rounds": 16, "observations": 5, "warmup_pairs": 1, "evict_mib": 1, "device": "cpu"}


    def base(input, mat2):
        return input @ mat2


    def cand(input, mat2):
        for _ in range(SLOW):
            out = torch.mm(input, mat2)
        return out


    def test_decode(kprof_compare):
        kprof_compare(base, cand, inputs={"input": a, "mat2": b}, reference=torch.mm,
                      max_regression=os.environ.get("MAXREG"), **P)
''')


def run_gated(tmp_path, out, slow=1, maxreg=None):
    (tmp_path / "test_gated.py").write_text(GATED_TEST)
    env = inner_env(tmp_path, SLOW=str(slow))
    if maxreg:
        env["MAXREG"] = maxreg
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_gated.py",
                           f"--kprof-results={out}"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow
def test_kprof_results_are_gated_across_runs_and_a_planted_regression_is_slower(tmp_path):
    from click.testing import CliRunner

    from kprof.cli.main import cli

    for i in range(3):  # three runs of unchanged code make the history
        r = run_gated(tmp_path, tmp_path / "history" / f"run{i}")
        assert r.returncode == 0, r.stdout + r.stderr
    history = tmp_path / "history" / "all"
    history.mkdir()
    for i in range(3):
        for f in (tmp_path / "history" / f"run{i}").iterdir():
            (history / f"{f.stem.replace('test_decode', f'run{i}')}{f.suffix}").write_bytes(f.read_bytes())
    assert run_gated(tmp_path, tmp_path / "same").returncode == 0
    g = CliRunner().invoke(cli, ["gate", "--baseline", str(history), "--candidate", str(tmp_path / "same" /
                                                                                        "test_decode.json")])
    assert g.exit_code in (0, 3) and "SLOWER" not in g.output, "unchanged code: no false regression"
    assert run_gated(tmp_path, tmp_path / "slow", slow=8).returncode == 0, "no max_regression: the test passes"
    g = CliRunner().invoke(cli, ["gate", "--baseline", str(history), "--candidate", str(tmp_path / "slow" /
                                                                                        "test_decode.json")])
    assert g.exit_code == 1 and "SLOWER" in g.output, g.output
    bench = tmp_path / "pb.json"
    bench.write_text(json.dumps({"machine_info": {}, "benchmarks": []}))
    g = CliRunner().invoke(cli, ["gate", "--baseline", str(history), "--candidate", str(bench)])
    assert g.exit_code == 5 and "pytest-benchmark's JSON" in g.output and "--kprof-results" in g.output


@pytest.mark.slow
def test_max_regression_fails_the_test_on_slower_in_the_same_run(tmp_path):
    r = run_gated(tmp_path, tmp_path / "r", slow=8, maxreg="20%")
    assert r.returncode == 1 and "SLOWER than base" in r.stdout, r.stdout + r.stderr
    r = run_gated(tmp_path, tmp_path / "r2", slow=1, maxreg="20%")
    assert r.returncode == 0, r.stdout + r.stderr


BAD_ARGUMENTS = textwrap.dedent('''
    def base():
        return 1


    def test_name_not_function(kprof_benchmark):
        kprof_benchmark("base")


    def test_unknown_keyword(kprof_benchmark):
        kprof_benchmark(base, bogus=1)


    def test_zero_rounds(kprof_benchmark):
        kprof_benchmark(base, rounds=0)


    def test_compare_unknown_keyword(kprof_compare):
        kprof_compare(base, base, bogus=1)
''')


@pytest.mark.slow
def test_bad_fixture_arguments_fail_in_one_line_timed_or_disabled(tmp_path):
    (tmp_path / "test_bad.py").write_text(BAD_ARGUMENTS)
    for flags in ([], ["--benchmark-disable"]):
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf", "test_bad.py",
                            *flags], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                           env=inner_env(tmp_path))
        out = r.stdout + r.stderr
        assert "4 failed" in out, out
        assert "kprof_benchmark: 'base' is a str, not a callable" in out
        assert "kprof_benchmark: kprof.time: got an unexpected keyword argument 'bogus'" in out
        assert "kprof_benchmark: --rounds must be at least 1, got 0" in out
        assert "kprof_compare: kprof.compare: got an unexpected keyword argument 'bogus'" in out
        assert "TypeError" not in out


SHIPPED_METHODS = textwrap.dedent('''
    import pytest
    import torch

    from kprof.core.target import resolve_target
    from kprof.methods import get_method
    from kprof.workloads import Workload

    TINY = {"rounds": 2, "observations": 3, "warmup_pairs": 1, "evict_mib": 1, "device": "cpu"}


    @pytest.mark.parametrize("method", ["math", "triton-dense"])
    def test_bench_dense_methods_tiny(kprof_benchmark, method):
        g = torch.Generator().manual_seed(1)
        w = Workload(q=torch.randn(4, 16, generator=g), k=torch.randn(2, 64, 16, generator=g),
                     v=torch.randn(2, 64, 16, generator=g), positions=torch.arange(64), query_position=63)
        prepared = get_method(method).prepare(w, resolve_target("cpu"))
        summary = kprof_benchmark(prepared.run, **TINY)
        assert summary.observations == 6 and summary.median_us.estimate > 0
        info = kprof_benchmark.benchmark.extra_info
        assert info["kprof_rounds"] == 2 and info["kprof_median_us"] == summary.median_us.estimate
        assert kprof_benchmark.benchmark.stats.stats.rounds == 6
''')


def test_a_shipped_method_is_benchmarked_with_kprofs_statistics(tmp_path):
    """kprof_benchmark on a prepared method: kprof's rounds are pytest-benchmark's rounds and its
    median is in the benchmark's extra info."""
    (tmp_path / "test_shipped.py").write_text(SHIPPED_METHODS)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_shipped.py"],
                       cwd=tmp_path, env=inner_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "2 passed" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]


RULES_TEST = textwrap.dedent('''
    import pytest
    import torch

    a, b = torch.randn(16, 16), torch.randn(16, 16)
    I = {"input": a, "mat2": b}
    P = {"observations": 1, "warmup_pairs": 0, "evict_mib": 1, "device": "cpu"}


    def base(input, mat2):
        return input @ mat2


    def wrong(input, mat2):
        return input


    def test_no_interval(kprof_compare):
        kprof_compare(base, base, inputs=I, reference=torch.mm, max_regression="3%", rounds=2, **P)


    def test_wrong_kept(kprof_compare):
        kprof_compare(base, wrong, inputs=I, reference=torch.mm, strict=False, rounds=2, **P)


    def test_twice(kprof_compare):
        kprof_compare(base, base, inputs=I, reference=torch.mm, rounds=2, **P)
        kprof_compare(base, base, inputs=I, reference=torch.mm, rounds=2, **P)


    def test_bad_threshold(kprof_compare):
        kprof_compare(base, base, inputs=I, reference=torch.mm, max_regression="abc", rounds=2, **P)


    @pytest.mark.parametrize("x", ["a b", "a_b"])
    def test_collide(kprof_compare, x):
        kprof_compare(base, base, inputs=I, reference=torch.mm, rounds=2, **P)
''')


def test_the_fixture_never_passes_what_it_cannot_judge_and_never_overwrites_another_tests_result(tmp_path):
    """Seen in QA: a 40x slower candidate passed max_regression with no interval, a wrong kernel passed
    with strict=False, a second call traced back, and two tests wrote one results file."""
    (tmp_path / "test_rules.py").write_text(RULES_TEST)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                        "test_rules.py", f"--kprof-results={tmp_path / 'res'}"], cwd=tmp_path,
                       env=inner_env(tmp_path), capture_output=True, text=True, timeout=300)
    out = " ".join(r.stdout.split())
    failures = {name: re.search(rf"_+ {name} _+ (.*?) (?:_{{5}}|={{5}})", out).group(1) for name in
                ("test_no_interval", "test_wrong_kept", "test_twice", "test_bad_threshold")}
    assert failures["test_no_interval"].strip().startswith("kprof_compare: max_regression cannot be judged"), out
    assert "kprof_compare: wrong failed validation against the reference" in failures["test_wrong_kept"], out
    assert "kprof_compare: one comparison per test" in failures["test_twice"], out
    assert failures["test_bad_threshold"].strip() == ("kprof_compare: max_regression='abc': 'abc' is not a "
                                                      "percentage: write e.g. '3%' or 0.03"), out
    assert "4 failed, 2 passed" in out and "Traceback" not in r.stdout
    saved = sorted(p.name for p in (tmp_path / "res").glob("test_collide*.json"))
    assert len(saved) == 2 and "test_collide_a_b_.json" in saved, saved
