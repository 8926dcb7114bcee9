"""Capture a decode workload from a local Hugging Face checkpoint.

A dense prefill of N tokens runs through the model up to the requested layer; transformers'
attention-function extension point (``AttentionInterface``) hands kprof exactly the post-RoPE
query, key and value tensors that layer's attention saw, before any GQA expansion. kprof keeps
the query at the last position and K/V of all positions, then calls the stock SDPA attention so
the forward pass is unchanged. Works for every architecture that dispatches through
``ALL_ATTENTION_FUNCTIONS`` (Qwen2, Qwen3, Llama, Mistral...).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from kprof.core.errors import KprofError, WorkloadError
from kprof.workloads.workload import Workload, dtype_from_name

_INTERFACE_NAME = "kprof_capture"


@dataclass
class CaptureRequest:
    model: str
    layer: int
    context: int
    prompt_file: str | None = None
    random_tokens: bool = False
    seed: int = 0
    dtype: str = "bf16"
    device: str = "cpu"


@dataclass
class _Recorded:
    q: torch.Tensor | None = None
    k: torch.Tensor | None = None
    v: torch.Tensor | None = None


def _transformers():
    try:
        import transformers
    except ImportError:
        raise KprofError("capture needs transformers: pip install 'kprof[capture]'") from None
    return transformers


def _load_model(req: CaptureRequest, status: Callable[[str], None]):
    tf = _transformers()
    path = Path(req.model)
    if not path.is_dir() and req.model.startswith((os.sep, ".", "~")):
        raise KprofError(f"model directory {req.model} does not exist: pass a local checkpoint folder")
    status(f"loading {req.model} (local files only)")
    try:
        config = tf.AutoConfig.from_pretrained(req.model, local_files_only=True)
        model = tf.AutoModelForCausalLM.from_pretrained(
            req.model, local_files_only=True, dtype=dtype_from_name(req.dtype), attn_implementation="sdpa")
    except (OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise KprofError(
            f"model {req.model!r} is not available locally ({first}): pass a checkpoint directory or a model "
            "already in the Hugging Face cache; kprof never downloads"
        ) from None
    return model, config


def _tokens(req: CaptureRequest, vocab: int) -> tuple[torch.Tensor, str]:
    if req.random_tokens == bool(req.prompt_file):
        raise KprofError("choose exactly one prompt source: --prompt-file FILE or --random-tokens")
    if req.random_tokens:
        g = torch.Generator().manual_seed(req.seed)
        return torch.randint(0, vocab, (1, req.context), generator=g), f"random-tokens(seed={req.seed})"
    path = Path(req.prompt_file)
    if not path.is_file():
        raise KprofError(f"prompt file {path} does not exist: pass a text file or use --random-tokens")
    tok = _transformers().AutoTokenizer.from_pretrained(req.model, local_files_only=True)
    ids = tok(path.read_text(), return_tensors="pt").input_ids
    if ids.shape[1] < req.context:
        raise KprofError(f"{path} has {ids.shape[1]} tokens, fewer than --context {req.context}: use a longer file")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    return ids[:, : req.context], f"file:{path.name}(sha256:{digest})"


def _decoder_layers(model):
    inner = getattr(model, "model", model)
    layers = getattr(inner, "layers", None)
    if layers is None:
        raise KprofError(f"{type(model).__name__} has no .model.layers: kprof capture supports decoder-only LMs")
    return inner, layers


def capture(req: CaptureRequest, status: Callable[[str], None] = lambda s: None,
            on_layer: Callable[[int, int], None] | None = None) -> Workload:
    """Prefill ``req.context`` tokens and return what the layer's attention saw as a Workload.

    Only layers ``0..layer`` run (later ones cannot influence the captured tensors).
    """
    tf = _transformers()
    from transformers import AttentionInterface
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    model, config = _load_model(req, status)
    inner, layers = _decoder_layers(model)
    if not 0 <= req.layer < len(layers):
        raise KprofError(f"--layer {req.layer} is out of range: the model has layers 0..{len(layers) - 1}")
    if req.context < 2:
        raise KprofError("--context must be at least 2 tokens")
    rec = _Recorded()

    def attention(module, query, key, value, attention_mask, **kwargs):
        out, weights = sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
        if getattr(module, "layer_idx", None) == req.layer:
            rec.q = query[0, :, -1, :].detach().clone()
            rec.k = key[0].detach().clone()
            rec.v = value[0].detach().clone()
        return out, weights

    AttentionInterface.register(_INTERFACE_NAME, attention)
    model.config._attn_implementation = _INTERFACE_NAME
    inner.layers = layers[: req.layer + 1]
    device = torch.device(req.device)
    model.to(device).eval()
    hooks = []
    if on_layer:
        for i, layer in enumerate(inner.layers):
            hooks.append(layer.register_forward_hook(lambda *a, i=i: on_layer(i + 1, len(inner.layers))))
    ids, source = _tokens(req, config.vocab_size)
    status(f"prefilling {req.context} tokens through layers 0..{req.layer} on {device}")
    try:
        with torch.inference_mode():
            inner(input_ids=ids.to(device), use_cache=False)
    finally:
        for h in hooks:
            h.remove()
    if rec.k is None:
        raise KprofError(f"layer {req.layer} never called the attention function: this architecture is not supported")
    cfg_text = json.dumps(config.to_dict(), sort_keys=True, default=str)
    metadata = {
        "name": f"{Path(req.model).name}-l{req.layer}-{req.context}",
        "source": "capture",
        "model": req.model,
        "model_type": getattr(config, "model_type", None),
        "config_sha256": hashlib.sha256(cfg_text.encode()).hexdigest(),
        "layer": req.layer,
        "context": req.context,
        "prompt": source,
        "dtype": req.dtype,
        "transformers": tf.__version__,
        "rope_theta": getattr(config, "rope_theta", None),
    }
    n = rec.k.shape[1]
    workload = Workload(q=rec.q.cpu(), k=rec.k.cpu(), v=rec.v.cpu(), positions=torch.arange(n),
                        query_position=n - 1, metadata=metadata)
    if workload.shape.hq % workload.shape.hkv:
        raise WorkloadError("captured head counts are not GQA-compatible")
    return workload
