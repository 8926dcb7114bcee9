"""The Python API: a user's callables (a GEMM) and method specs timed with the CLI's harness, and
a Result that ``kprof report`` and ``kprof gate`` read."""

import json

import pytest
import torch
from click.testing import CliRunner

import kprof
from kprof.cli.main import cli

FAST = {"rounds": 8, "observations": 3, "warmup_pairs": 1, "evict_mib": 1, "device": "cpu"}


@pytest.fixture
def gemm():
    g = torch.Generator().manual_seed(7)
    return {"input": torch.randn(48, 32, generator=g), "mat2": torch.randn(32, 40, generator=g)}


def transposed_mm(input, mat2):
    """The same product through a transposed copy: another kernel, the same numbers."""
    return (mat2.T.contiguous() @ input.T).T


def test_a_gemm_comparison_gives_intervals_a_frame_and_a_file(gemm, tmp_path):
    res = kprof.compare({"transposed": transposed_mm}, baseline=torch.mm, inputs=gemm, reference=torch.mm,
                        name="gemm-48x32x40", **{**FAST, "rounds": 32})
    assert isinstance(res, kprof.Result)
    iv = res.speedup("transposed")
    assert iv.low is not None and iv.low <= iv.estimate <= iv.high
    assert [m.label for m in res.methods] == ["mm", "transposed"]
    assert all(m.validation.passed and m.validation.rel_error < 1e-5 for m in res.methods)
    frame = res.frame()
    assert list(frame["row"]) == ["mm", "transposed"] and (frame["median_us"] > 0).all()
    path = res.save(tmp_path / "gemm.json")
    again = kprof.load_result(path)
    assert again.speedup("transposed") == iv and again.workload["metadata"]["inputs"]["input"]["shape"] == [48, 32]
    r = CliRunner().invoke(cli, ["report", str(path), "--json"])
    assert r.exit_code == 0, r.output
    assert [row["row"] for row in json.loads(r.output)] == ["mm", "transposed"]


def test_the_gate_judges_api_results_of_one_setup_and_refuses_another(gemm, tmp_path):
    history = tmp_path / "history"
    history.mkdir()
    runs = [kprof.compare({"transposed": transposed_mm}, baseline=torch.mm, inputs=gemm, reference=torch.mm,
                          name="gemm", **FAST) for _ in range(4)]
    for i, res in enumerate(runs[:3]):
        res.save(history / f"run{i}.json")
    cand = runs[3].save(tmp_path / "cand.json")
    r = CliRunner().invoke(cli, ["gate", "--baseline", str(history), "--candidate", str(cand)])
    assert r.exit_code in (0, 1, 3), r.output  # a verdict, whichever way noise on a CPU takes it
    assert "transposed" in r.output
    other = kprof.compare({"transposed": transposed_mm}, baseline=torch.mm, inputs=gemm, reference=torch.mm,
                          name="another-gemm", **FAST).save(tmp_path / "other.json")
    r = CliRunner().invoke(cli, ["gate", "--baseline", str(history), "--candidate", str(other)])
    assert r.exit_code == 4 and "INCOMPARABLE" in r.output and "workload differs" in " ".join(r.output.split())


def test_a_wrong_callable_stops_before_timing_unless_not_strict(gemm):
    def off_by_one(input, mat2):
        return input @ mat2 + 1

    with pytest.raises(kprof.KprofError, match="off_by_one: output differs from the reference.*strict=False"):
        kprof.compare([off_by_one], baseline=torch.mm, inputs=gemm, reference=torch.mm, **FAST)
    res = kprof.compare([off_by_one], baseline=torch.mm, inputs=gemm, reference=torch.mm, strict=False, **FAST)
    assert not res.methods[1].validation.passed and res.methods[0].validation.passed


def test_a_wrong_shape_is_named(gemm):
    with pytest.raises(kprof.KprofError, match=r"output shape \(3, 40\) differs from the reference's \(48, 40\)"):
        kprof.compare({"short": lambda input, mat2: input[:3] @ mat2}, baseline=torch.mm, inputs=gemm,
                      reference=torch.mm, **FAST)


def test_a_non_tensor_output_cannot_pass_against_a_reference(gemm):
    with pytest.raises(kprof.KprofError, match="pair returned a tuple, not a tensor"):
        kprof.compare({"pair": lambda input, mat2: (input @ mat2 + 100, None)}, baseline=torch.mm, inputs=gemm,
                      reference=torch.mm, **FAST)


def test_outputs_are_compared_as_they_were_not_through_a_shared_buffer(gemm):
    shared = torch.empty(48, 40)

    def right(input, mat2):
        return torch.mm(input, mat2, out=shared)

    def wrong(input, mat2):
        return torch.mm(input, mat2 * 2, out=shared)

    res = kprof.compare({"wrong": wrong}, baseline=right, inputs=gemm, strict=False, **FAST)
    assert res.methods[1].validation.error_vs_baseline == pytest.approx(1.0)


def test_one_candidate_may_be_given_bare(gemm):
    res = kprof.compare(transposed_mm, baseline=torch.mm, inputs=gemm, **FAST)
    assert [m.label for m in res.methods] == ["mm", "transposed_mm"]


def test_other_input_shapes_are_another_setup(gemm):
    small = {k: v[:16] if k == "input" else v for k, v in gemm.items()}
    a = kprof.compare([transposed_mm], baseline=torch.mm, inputs=gemm, name="g", **FAST)
    b = kprof.compare([transposed_mm], baseline=torch.mm, inputs=small, name="g", **FAST)
    assert a.workload["content_hash"] != b.workload["content_hash"]


def test_zero_argument_callables_and_an_unvalidated_run_say_so():
    a = torch.randn(16, 16)
    res = kprof.compare({"matmul": lambda: a @ a}, baseline=lambda: torch.mm(a, a), **FAST)
    assert any("not validated" in n for n in res.notes)


def test_a_user_method_spec_runs_on_a_workload(userpkg):
    res = kprof.compare(["userpkg.attn:attend"], baseline="math", workload="cpu-smoke", **FAST)
    assert res.methods[1].validation.passed and res.workload["name"] == "cpu-smoke"
    assert res.speedup("userpkg.attn:attend").estimate > 0


def test_time_gives_a_summary():
    a = torch.randn(32, 32)
    s = kprof.time(lambda: a @ a, **FAST)
    assert s.median_us.estimate > 0 and s.median_us.low is not None and s.time_us == s.median_us.estimate


def test_tune_a_callable_rejects_a_wrong_variant_and_confirms_the_fastest():
    def mm(a, b, *, REPEAT, WRONG):
        out = a @ b
        for _ in range(REPEAT - 1):
            out = a @ b
        return out * (1.5 if WRONG else 1.0)

    a, b = torch.randn(96, 96), torch.randn(96, 96)
    got = kprof.tune(mm, space={"REPEAT": [16, 1], "WRONG": [0, 1]}, inputs={"a": a, "b": b},
                     reference=lambda a, b: a @ b, device="cpu", tolerance=1e-4, rounds=40)
    status = {(s.config["REPEAT"], s.config["WRONG"]): s.status for s in got.screened}
    assert status == {(16, 0): "ok", (1, 0): "ok", (16, 1): "rejected", (1, 1): "rejected"}
    assert got.default == {"REPEAT": 16, "WRONG": 0} and got.config == {"REPEAT": 1, "WRONG": 0}
    assert got.speedup.low > 1 and got.result.speedups[0].candidate == "REPEAT=1,WRONG=0"
    with pytest.raises(kprof.KprofError, match="needs a space"):
        kprof.tune(mm, inputs={"a": a, "b": b}, reference=lambda a, b: a @ b, device="cpu")
    with pytest.raises(kprof.KprofError, match="needs reference="):
        kprof.tune(mm, space={"REPEAT": [1]}, inputs={"a": a, "b": b}, device="cpu")


def test_tune_an_attention_function_on_a_workload_reads_its_shape(userpkg):
    from userpkg.attn import tunable_attend

    got = kprof.tune(tunable_attend, workload="synthetic:hq=8,hkv=2,d=32,n=128,dtype=fp32", device="cpu")
    tried = {(s.config["BLOCK"], s.config["SCALE_PCT"]): s.status for s in got.screened}
    assert set(tried) == {(1, 100), (2, 100), (1, 50), (2, 50)}, "BLOCK 4 does not divide 2 KV heads"
    assert tried[(1, 50)] == tried[(2, 50)] == "rejected" and got.config["SCALE_PCT"] == 100


def test_wrong_arguments_are_one_line_usage_errors_before_anything_runs():
    import pytest

    import kprof
    from kprof.api import check_arguments
    from kprof.core.errors import UsageError

    with pytest.raises(UsageError, match="kprof.time needs a callable, got a str"):
        kprof.time("mm")
    with pytest.raises(UsageError, match="observations must be a whole number, got '3'"):
        kprof.time(lambda: None, observations="3", device="cpu")
    with pytest.raises(UsageError, match="is a int, not a callable or a method spec"):
        kprof.compare([3], baseline=lambda: None, device="cpu")
    with pytest.raises(UsageError, match="unexpected keyword argument 'bogus'"):
        check_arguments("time", lambda: None, bogus=1)
    with pytest.raises(UsageError, match="--rounds must be at least 1"):
        check_arguments("compare", [lambda: None], lambda: None, rounds=0)


def test_arguments_seen_failing_deep_inside_are_refused_up_front(gemm, tmp_path):
    """Seen in QA: raw TypeErrors, a Result saved with force='no', a label kprof cannot read back."""
    from kprof.core.errors import UsageError

    with pytest.raises(UsageError, match="candidates is a NoneType: pass a callable"):
        kprof.compare(None, baseline=torch.mm, inputs=gemm, **FAST)
    with pytest.raises(UsageError, match=r"labels \[1\] are not names"):
        kprof.compare({1: torch.mm}, baseline=torch.mm, inputs=gemm, **FAST)
    with pytest.raises(UsageError, match="inputs is a list: pass a dict"):
        kprof.compare([transposed_mm], baseline=torch.mm, inputs=list(gemm.values()), **FAST)
    for bad in (-1, float("nan"), "1e-3"):
        with pytest.raises(UsageError, match="tolerance=.*: pass a positive relative L2 error"):
            kprof.compare([transposed_mm], baseline=torch.mm, inputs=gemm, reference=torch.mm, tolerance=bad, **FAST)
    with pytest.raises(UsageError, match="kprof.tune needs a callable"):
        kprof.tune(5, space={"X": [1, 2]}, inputs=gemm, reference=torch.mm)
    res = kprof.compare([transposed_mm], baseline=torch.mm, inputs=gemm, reference=torch.mm, **FAST)
    kept = res.save(tmp_path / "r.json")
    before = kept.read_bytes()
    with pytest.raises(UsageError, match="force='no': pass True or False"):
        res.save(kept, force="no")
    assert kept.read_bytes() == before


def test_time_checks_its_work_numbers_before_timing():
    from kprof.core.errors import KprofError

    calls = []
    for bad in (-1, float("inf")):
        with pytest.raises(KprofError, match="take a positive number"):
            kprof.time(lambda: calls.append(1), flops=bad, **FAST)
    assert not calls, "refused before the first call"
