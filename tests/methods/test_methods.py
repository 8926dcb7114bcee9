import pytest
import torch

from kprof.core.errors import ConfigError, KprofError, MethodUnavailable
from kprof.methods import get_method, registered
from kprof.methods.dense_reference import dense_attention_fp64
from kprof.methods.validation import compare_outputs


def test_registry_has_the_dense_baselines():
    assert {"flash", "cudnn", "math", "triton-dense", "santa", "fathom"} <= set(registered())


def test_unknown_method_lists_the_known_ones():
    with pytest.raises(KprofError, match="triton-dense"):
        get_method("dense-turbo")


@pytest.mark.parametrize("name", ["flash", "cudnn"])
def test_cuda_only_backends_refuse_the_cpu_with_a_reason(cpu_target, make_workload, name):
    with pytest.raises(MethodUnavailable, match="needs a CUDA GPU"):
        get_method(name).prepare(make_workload(4, 2, 16, 16), cpu_target)


def test_math_sdpa_matches_reference_on_cpu(cpu_target, make_workload):
    w = make_workload(14, 2, 129, 64, seed=9, scale=2.0)
    prepared = get_method("math").prepare(w, cpu_target)
    report = compare_outputs(prepared.run(), dense_attention_fp64(w))
    assert report.passed, report
    assert [s.name for s in prepared.stages] == ["sdpa"]


def test_reference_is_softmax_attention_per_group(make_workload):
    """Cross-check the vectorised reference against a plain loop over heads."""
    w = make_workload(6, 2, 40, 16, seed=1)
    ref = dense_attention_fp64(w)
    for h in range(6):
        k, v = w.k[h // 3].double(), w.v[h // 3].double()
        p = torch.softmax(k @ w.q[h].double() / 4.0, dim=0)
        assert torch.allclose(ref[h], p @ v, atol=1e-12)


def test_config_overrides_are_validated(cpu_target, make_workload):
    m = get_method("triton-dense")
    w = make_workload(4, 2, 64, 16)
    with pytest.raises(ConfigError, match="no parameter 'BLOCK_M'"):
        m.prepare(w, cpu_target, {"partial": {"BLOCK_M": 64}})
    with pytest.raises(ConfigError, match="not allowed"):
        m.prepare(w, cpu_target, {"partial": {"BLOCK_N": 48}})
    with pytest.raises(ConfigError, match="unknown launch"):
        m.prepare(w, cpu_target, {"stage3": {"BLOCK_N": 64}})
    assert m.prepare(w, cpu_target, {"partial": {"BLOCK_N": 32}}).config["partial"]["BLOCK_N"] == 32


def test_triton_dense_rejects_unsupported_head_dim(cpu_target, make_workload):
    with pytest.raises(MethodUnavailable, match="head dim 24"):
        get_method("triton-dense").prepare(make_workload(4, 2, 32, 24), cpu_target)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["flash", "cudnn", "math"])
def test_sdpa_backends_on_gpu(target, make_workload, name):
    w = make_workload(28, 4, 4096, 128, torch.float16, seed=3, scale=2.0)
    out = get_method(name).prepare(w, target).run()
    assert compare_outputs(out, dense_attention_fp64(w), 1e-2).passed


def test_method_spec_carries_options_and_launch_parameters(cpu_target, make_workload):
    m = get_method("triton-dense:partial.BLOCK_N=32,combine.num_warps=4")
    p = m.prepare(make_workload(4, 2, 64, 16), cpu_target, {"partial": {"num_warps": 2}})
    assert p.config["partial"]["BLOCK_N"] == 32 and p.config["partial"]["num_warps"] == 2
    assert p.config["combine"]["num_warps"] == 4
    s = get_method("santa:p=8,r=2,s=8,parents=contiguous,attend.NUM_SPLITS=2")
    assert s.settings.p == 8 and s.launch_overrides == {"attend": {"NUM_SPLITS": 2}}
    with pytest.raises(ConfigError, match="takes no options"):
        get_method("flash:p=3")
    with pytest.raises(ConfigError, match="unknown santa option"):
        get_method("santa:q=3")
    with pytest.raises(KprofError, match="bad method option"):
        get_method("santa:p")


@pytest.mark.parametrize("name", sorted(registered()))
def test_the_listed_options_are_the_accepted_ones(name):
    """Every option ``kprof methods`` lists is one ``from_options`` takes (a bad value is refused
    naming the value, as an unknown key's refusal never does), and any other key is refused with
    the listed ones named."""
    cls = registered()[name]
    for key in cls.options:
        with pytest.raises((KprofError, ValueError), match="zzz"):
            cls.from_options({key: "zzz"})
    with pytest.raises(KprofError) as exc:
        cls.from_options({"no_such_option": "1"})
    assert all(key in str(exc.value) for key in cls.options), str(exc.value)
