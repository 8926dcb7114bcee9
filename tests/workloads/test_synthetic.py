import math

import pytest
import torch

from kprof.core.errors import WorkloadError
from kprof.workloads import SPECS, get_spec, synthesize
from kprof.workloads.rope import apply_rope
from kprof.workloads.specs import WorkloadSpec
from kprof.workloads.statistics import attention_profile


def test_named_specs_have_the_documented_shapes():
    s = get_spec("qwen2.5-7b-l14-32k")
    assert (s.hq, s.hkv, s.d, s.n, s.dtype) == (28, 4, 128, 32768, "fp16")
    assert (get_spec("qwen3-8b-1m").hq, get_spec("qwen3-8b-1m").hkv, get_spec("qwen3-8b-1m").dtype) == (32, 8, "bf16")
    smoke = get_spec("cpu-smoke")
    assert smoke.hq // smoke.hkv == 7
    assert {"qwen2.5-7b-l14-8k", "qwen3-8b-128k"} <= set(SPECS)


def test_unknown_spec_lists_known_ones():
    with pytest.raises(WorkloadError, match="cpu-smoke"):
        get_spec("llama-9000")


def test_generator_is_deterministic_and_seed_sensitive():
    a, b = synthesize("cpu-smoke"), synthesize("cpu-smoke")
    assert a.content_hash() == b.content_hash()
    other = synthesize(WorkloadSpec(**{**get_spec("cpu-smoke").__dict__, "seed": 1}))
    assert other.content_hash() != a.content_hash()


def test_generated_workload_matches_spec_and_is_not_degenerate():
    w = synthesize("cpu-smoke")
    assert w.shape.hq == 14 and w.shape.hkv == 2 and w.shape.n == 2048 and w.shape.d == 64
    assert w.dtype == torch.float32
    assert torch.isfinite(w.k).all() and torch.isfinite(w.q).all()
    assert (w.k != 0).float().mean() > 0.99
    # heterogeneous channel scales: the largest channel RMS is several times the median
    rms = w.k.pow(2).mean(dim=(0, 1)).sqrt()
    assert rms.max() / rms.median() > 2.5


def test_attention_is_peaked_but_not_one_hot():
    prof = attention_profile(synthesize("cpu-smoke"))
    assert 0.4 < prof.mean("top1pct_mass") < 0.9
    assert prof.min("effective_keys") > 2  # never a single key
    assert prof.mean("sink_mass") > 0.01  # sinks attract some mass
    # white noise of the same shape would spread mass: top 1% holds far less
    g = torch.Generator().manual_seed(0)
    noise = synthesize("cpu-smoke")
    noise.k.copy_(torch.randn(noise.k.shape, generator=g))
    noise.q.copy_(torch.randn(noise.q.shape, generator=g))
    assert attention_profile(noise).mean("top1pct_mass") < 0.2


def test_keys_are_clustered_before_rope():
    """Undoing RoPE reveals cluster structure: nearest-neighbour distances far below random pairs."""
    spec = get_spec("cpu-smoke")
    w = synthesize(spec)
    pre = apply_rope(w.k[0].double(), -w.positions, spec.rope_theta)[64:]
    pre = (pre - pre.mean(0)) / pre.std(0)
    dist = torch.cdist(pre[:512], pre[:512])
    dist.fill_diagonal_(float("inf"))
    nearest = dist.min(dim=1).values.median()
    typical = dist[torch.isfinite(dist)].median()
    assert nearest < 0.6 * typical


def test_rope_preserves_norms_and_depends_on_relative_position():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(2, 64, generator=g, dtype=torch.float64)
    pos = torch.tensor([3, 10])
    r = apply_rope(x, pos, 1e4)
    assert torch.allclose(r.norm(dim=-1), x.norm(dim=-1))
    shifted = apply_rope(x, pos + 100, 1e4)
    assert math.isclose((r[0] @ r[1]).item(), (shifted[0] @ shifted[1]).item(), rel_tol=1e-9)
    assert not torch.allclose(r, x)


# The bytes of each spec, the same under every torch version and on every machine (numpy PCG64
# in float64, one cast): the README lists them; a Result's workload hash is comparable across
# machines only because of this.
CONTENT_HASHES = {
    "cpu-smoke": "08ea475876d025fc40fd551a0bf06e6c94d1fb70859de37d34105ed5cdafcf97",
    "qwen2.5-7b-l14-8k": "29f8571141330e5c568566ba9f2bd3989e39e2ae0901a3316150d73657ed0040",
    "qwen2.5-7b-l14-32k": "ac8f217afc17697cace1f3dd161b5fd1911053fe60aac03627a0a8fa6e192ba0",
}


@pytest.mark.parametrize("name", sorted(CONTENT_HASHES))
def test_synthetic_specs_have_their_documented_content_hashes(name):
    torch.manual_seed(12345)  # torch's generator plays no part
    w = synthesize(name)
    assert w.content_hash() == CONTENT_HASHES[name]
    assert w.metadata["generator"] == "numpy-pcg64-float64/1"


def test_the_readme_lists_the_same_hashes():
    from pathlib import Path

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    for name, digest in CONTENT_HASHES.items():
        assert f"`{name}`" in readme and digest[:16] in readme, name


def test_a_synthetic_shape_spec_is_any_shape_with_a_stable_canonical_name_and_hash():
    w = synthesize("synthetic:n=256,d=32,hkv=2,hq=6,dtype=fp32")
    assert (w.shape.hq, w.shape.hkv, w.shape.d, w.shape.n, w.dtype) == (6, 2, 32, 256, torch.float32)
    assert w.name == "synthetic:hq=6,hkv=2,d=32,n=256,dtype=fp32"
    again = synthesize("synthetic:hq=6,hkv=2,d=32,n=256,dtype=fp32")
    assert again.content_hash() == w.content_hash()
    assert synthesize("synthetic:hq=6,hkv=2,d=32,n=256,dtype=fp32,seed=1").content_hash() != w.content_hash()
    assert 0.3 < attention_profile(w).mean("top1pct_mass") < 0.95


def test_the_uniform_layout_has_no_clusters_or_sinks():
    spec = get_spec("synthetic:hq=4,hkv=1,d=32,n=512,dtype=fp32,layout=uniform")
    w = synthesize(spec)
    pre = apply_rope(w.k[0].double(), -w.positions, spec.rope_theta)
    pre = (pre - pre.mean(0)) / pre.std(0)
    dist = torch.cdist(pre, pre)
    dist.fill_diagonal_(float("inf"))
    assert dist.min(dim=1).values.median() > 0.6 * dist[torch.isfinite(dist)].median()
    norms = w.k[0].norm(dim=1)
    assert norms[:4].mean() < 2 * norms[4:].mean()


@pytest.mark.parametrize("text,match", [
    ("synthetic:hq=8", "lacks hkv, d, n, dtype"),
    ("synthetic:hq=7,hkv=2,d=64,n=512,dtype=fp16", "not a multiple of hkv"),
    ("synthetic:hq=8,hkv=2,d=63,n=512,dtype=fp16", "odd"),
    ("synthetic:hq=8,hkv=2,d=64,n=512,dtype=int8", "use one of fp16, bf16, fp32"),
    ("synthetic:hq=8,hkv=2,d=64,n=x,dtype=fp16", "not an integer"),
    ("synthetic:hq=8,hkv=2,d=64,n=0,dtype=fp16", "positive"),
    ("synthetic:hq=8,hkv=2,d=64,n=64,dtype=fp16,layout=spiral", "layout"),
    ("synthetic:hq=8,hq=8,hkv=2,d=64,n=64,dtype=fp16", "twice"),
    ("synthetic:colour=red", "keys are"),
])
def test_a_bad_synthetic_spec_is_one_line_naming_the_fix(text, match):
    with pytest.raises(WorkloadError, match=match):
        get_spec(text)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_heads_drawn_in_worker_processes_give_the_same_bytes(dtype):
    """Two spawned workers, each drawing whole KV heads, against one process: the same hash."""
    spec = WorkloadSpec(**{**get_spec("cpu-smoke").__dict__, "name": "pool-check", "dtype": dtype, "hkv": 2,
                           "hq": 6})
    assert synthesize(spec, workers=2).content_hash() == synthesize(spec, workers=1).content_hash()


def test_only_millions_of_tokens_start_processes_as_many_as_cores_and_memory_allow(monkeypatch):
    import os

    from kprof.workloads import synthetic

    gib = 2**30
    pages = {"SC_PAGE_SIZE": 4096, "SC_AVPHYS_PAGES": 64 * gib // 4096}
    monkeypatch.setattr(os, "sysconf", lambda name: pages[name])
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    assert synthetic.synthesis_workers(get_spec("qwen2.5-7b-l14-32k")) == 1
    assert synthetic.synthesis_workers(get_spec("qwen3-8b-128k")) == 1
    assert synthetic.synthesis_workers(get_spec("qwen3-8b-1m")) == 8  # one per KV head: 8 x 6 GiB fit in 64
    pages["SC_AVPHYS_PAGES"] = 20 * gib // 4096
    assert synthetic.synthesis_workers(get_spec("qwen3-8b-1m")) == 3  # a head takes ~6 GiB while drawn
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert synthetic.synthesis_workers(get_spec("qwen3-8b-1m")) == 2
