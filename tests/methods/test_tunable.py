"""@kprof.tunable: a function's declared space, from a mapping or a @triton.autotune kernel; its
configs reach the function as keywords; kprof tune and compare take it like a built-in launch."""

import json

import pytest
import torch
import triton
import triton.language as tl
from click.testing import CliRunner

import kprof
from kprof.cli.main import cli
from kprof.core.errors import ConfigError, KprofError
from kprof.methods import get_method
from kprof.tuning.launch_job import FINALIST_FLOOR, finalize
from kprof.tuning.search import choose
from kprof.workloads import WorkloadShape

SHAPE = WorkloadShape(hq=8, hkv=2, n=256, d=32, dtype="fp32")


def test_a_mapping_space_with_defaults_and_constraints():
    calls = []

    @kprof.tunable(space={"BLOCK_N": [16, 32, 64], "num_warps": [2, 4]}, default={"BLOCK_N": 32},
                   constraints=[("BLOCK_N fits the sequence", lambda cfg, shape: cfg["BLOCK_N"] <= shape.n // 8)])
    def f(q, k, v, *, BLOCK_N, num_warps):
        calls.append((BLOCK_N, num_warps))
        return q

    assert f.space.default() == {"BLOCK_N": 32, "num_warps": 2}
    assert f.__name__ == "f" and f(1, 2, 3) == 1 and calls == [(32, 2)]
    assert f(1, 2, 3, BLOCK_N=64) == 1 and calls[-1] == (64, 2)
    assert sorted(c["BLOCK_N"] for c in f.space.candidates(SHAPE)) == [16, 16, 32, 32]
    with pytest.raises(ConfigError, match="BLOCK_N fits the sequence"):
        f.space.resolve({"BLOCK_N": 64}, SHAPE)


@pytest.mark.parametrize("kwargs,match", [
    ({}, "needs space="),
    ({"space": {}}, "non-empty space"),
    ({"space": {"B": [16, 16]}}, "distinct values"),
    ({"space": {"B": [16, 32.5]}}, "not an integer"),
    ({"space": {"B": [16, 32]}, "default": {"B": 8}}, "not among its values"),
    ({"space": {"B": [16, 32]}, "default": {"C": 8}}, "the space lacks"),
    ({"space": {"B": [16]}, "constraints": [3]}, "a constraint must be"),
])
def test_a_bad_declaration_is_one_line(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        kprof.tunable(**kwargs)


@triton.autotune(configs=[triton.Config({"BLOCK": 16}, num_warps=2), triton.Config({"BLOCK": 32}, num_warps=4),
                          triton.Config({"BLOCK": 64}, num_warps=4, num_stages=2)], key=["n"])
@triton.jit
def _scale(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def test_an_autotune_kernels_configs_are_the_space_and_only_they_are_tried():
    @kprof.tunable(space=_scale)
    def f(q, k, v, *, BLOCK, num_warps, num_stages):
        return q

    tried = list(f.space.candidates(SHAPE))
    listed = [{"BLOCK": c.kwargs["BLOCK"], "num_warps": c.num_warps, "num_stages": c.num_stages}
              for c in _scale.configs]
    assert sorted(map(str, tried)) == sorted(map(str, listed))
    assert f.space.default() == listed[0]


def test_a_spec_sets_declared_parameters_and_a_plain_function_takes_none(userpkg):
    m = get_method("userpkg.attn:tunable_attend:BLOCK=1")
    assert set(m.config_space()) == {"call"} and m.launch_overrides == {"call": {"BLOCK": 1}}
    assert get_method("userpkg.attn:tunable_attend:call.SCALE_PCT=50,BLOCK=1").launch_overrides == {
        "call": {"BLOCK": 1, "SCALE_PCT": 50}}
    with pytest.raises(KprofError, match="takes no options unless it is @kprof.tunable"):
        get_method("userpkg.attn:attend:BLOCK=1")


def test_kprof_tune_takes_a_users_tunable_function(userpkg, tmp_path):
    out = tmp_path / "tuned"
    r = CliRunner().invoke(cli, ["tune", "--method", "userpkg.attn:tunable_attend", "--device", "cpu",
                                 "--out-dir", str(out)])
    assert r.exit_code == 0, r.output
    cache = json.loads(next(out.glob("*.json")).read_text())
    status = {json.dumps(c["config"], sort_keys=True): c["status"] for c in cache["candidates"]}
    assert status[json.dumps({"BLOCK": 1, "SCALE_PCT": 50}, sort_keys=True)] == "rejected", "the wrong variant"
    assert status[json.dumps({"BLOCK": 1, "SCALE_PCT": 100}, sort_keys=True)] == "ok"
    assert not any('"BLOCK": 4' in k for k in status), "BLOCK 4 does not divide 2 KV heads"
    r = CliRunner().invoke(cli, ["compare", "--method", "userpkg.attn:tunable_attend:BLOCK=1", "--baseline", "math",
                                 "--device", "cpu", "--rounds", "2", "--observations", "1", "--warmup-pairs", "0",
                                 "--out", str(tmp_path / "r.json")])
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["methods"][1]["config"] == {"call": {"BLOCK": 1, "SCALE_PCT": 100}}


def test_a_capped_screen_samples_the_space():
    space = [{"B": b} for b in range(1, 41)]
    picked = choose(space, {"B": 1}, "exhaustive", 6, seed=0)
    assert picked[0] == {"B": 1} and len(picked) == 6 and picked[1:] != space[1:6]
    assert choose(space, {"B": 1}, "exhaustive", None, seed=0) == space


def test_a_finalist_screened_far_slower_than_the_default_is_not_re_timed(userpkg):
    from kprof.tuning.cache import CandidateRecord, TuneFile

    class NoWorker:
        def paired(self, *a):
            raise AssertionError("a finalist screened at 0.32x must not be re-timed")

    from kprof.tuning.cache import tune_key

    tf = TuneFile(key=tune_key("userpkg.attn:tunable_attend", "call", SHAPE), default={"B": 1})
    tf.candidates = [CandidateRecord(config={"B": 1}, status="ok", median_us=10.0),
                     CandidateRecord(config={"B": 2}, status="ok", median_us=31.0)]

    class Req:
        finalists, paired, eviction = 3, {}, "read-write"

    notes = []
    finalize(tf, NoWorker(), Req(), notes.append)
    assert tf.finalists[0]["status"] == "skipped" and "0.32x" in notes[0] and tf.best == {"B": 1}
    assert FINALIST_FLOOR == 0.9


@pytest.mark.parametrize("block_n,num_warps", [(16, 1), (64, 4)])
def test_the_users_triton_decode_fixture_matches_fp64_attention(userpkg, block_n, num_warps):
    """The fixture the H200 acceptance tunes: a ragged last tile (n = 200) against fp64."""
    from userpkg.triton_decode import decode

    from kprof.methods.dense_reference import dense_attention_fp64
    from kprof.workloads import Workload

    g = torch.Generator().manual_seed(block_n)
    q = torch.randn(8, 32, generator=g)
    k, v = torch.randn(2, 200, 32, generator=g), torch.randn(2, 200, 32, generator=g)
    w = Workload(q=q, k=k, v=v, positions=torch.arange(200), query_position=199, metadata={"name": "t"})
    out = decode(q, k, v, BLOCK_N=block_n, num_warps=num_warps)
    assert torch.allclose(out.double(), dense_attention_fp64(w), atol=2e-5)
    assert decode.space.default() == {"BLOCK_N": 64, "num_warps": 4}
