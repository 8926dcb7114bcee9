"""Capture from a tiny randomly initialised model saved locally (no downloads)."""

import pytest
import torch

transformers = pytest.importorskip("transformers")

from kprof.core.errors import KprofError  # noqa: E402
from kprof.workloads.capture import CaptureRequest, capture  # noqa: E402

ARCHS = {
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", {}),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", {}),
    "llama": ("LlamaConfig", "LlamaForCausalLM", {}),
}


def _tiny_model(tmp_path, arch):
    cfg_cls, model_cls, extra = ARCHS[arch]
    cfg = getattr(transformers, cfg_cls)(
        vocab_size=128, hidden_size=112, intermediate_size=64, num_hidden_layers=3, num_attention_heads=14,
        num_key_value_heads=2, head_dim=8, max_position_embeddings=256, **extra)
    torch.manual_seed(0)
    model = getattr(transformers, model_cls)(cfg).eval()
    model.save_pretrained(tmp_path / arch)
    return tmp_path / arch, model


@pytest.mark.parametrize("arch", sorted(ARCHS))
def test_captured_qkv_reproduce_the_layers_attention_output(tmp_path, arch):
    path, model = _tiny_model(tmp_path, arch)
    layer, n = 1, 48
    w = capture(CaptureRequest(model=str(path), layer=layer, context=n, random_tokens=True, seed=5, dtype="fp32"))
    assert (w.shape.hq, w.shape.hkv, w.shape.n, w.shape.d) == (14, 2, n, 8)
    assert w.metadata["layer"] == layer and w.metadata["model_type"] == arch
    # the model's own forward pass: the input of o_proj at the last position is the attention output
    seen = {}
    o_proj = model.model.layers[layer].self_attn.o_proj
    handle = o_proj.register_forward_pre_hook(lambda mod, args: seen.setdefault("x", args[0][0, -1].clone()))
    ids = torch.randint(0, 128, (1, n), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        model(input_ids=ids)
    handle.remove()
    expected = seen["x"].view(14, 8)
    got = torch.nn.functional.scaled_dot_product_attention(
        w.q[None, :, None, :], w.k[None], w.v[None], enable_gqa=True)[0, :, 0, :]
    assert torch.allclose(got, expected, atol=1e-5), (got - expected).abs().max()


def test_non_local_model_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(KprofError, match="not available locally"):
        capture(CaptureRequest(model="kprof-test/definitely-not-a-model", layer=0, context=8, random_tokens=True))


def test_missing_directory_and_bad_layer(tmp_path):
    with pytest.raises(KprofError, match="does not exist"):
        capture(CaptureRequest(model=str(tmp_path / "nope"), layer=0, context=8, random_tokens=True))
    path, _ = _tiny_model(tmp_path, "qwen2")
    with pytest.raises(KprofError, match="out of range"):
        capture(CaptureRequest(model=str(path), layer=7, context=8, random_tokens=True))
    with pytest.raises(KprofError, match="exactly one prompt source"):
        capture(CaptureRequest(model=str(path), layer=0, context=8))
