"""``kprof capture`` as a use case: a decode workload recorded from a local model, or a named
spec materialised, written to a workload file. Sources and the output are checked first."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from kprof.commands import preflight
from kprof.core.errors import UsageError


@dataclass
class CaptureOptions:
    """What to record: a ``synthetic`` spec, or a ``model``'s ``layer`` after a ``context``-token prefill."""

    out: str
    model: str | None = None
    layer: int | None = None
    context: int | None = None
    prompt_file: str | None = None
    random_tokens: bool = False
    seed: int = 0
    dtype: str = "bf16"
    device: str = "cpu"
    synthetic: str | None = None
    force: bool = False


def check_capture(opts: CaptureOptions) -> None:
    """The output path and the source, before a model or a spec is loaded (UsageError, exit 2)."""
    preflight.check_out_file(opts.out, opts.force)
    if opts.synthetic and opts.model:
        raise UsageError("--synthetic and --model are exclusive: pick one source")
    if opts.synthetic:
        preflight.check_workloads([opts.synthetic], what="--synthetic")
        return
    if opts.model and Path(opts.model).is_file():
        raise UsageError(f"--model {opts.model} is a file: pass the checkpoint folder (holding config.json), or the "
                         "id of a model already in the Hugging Face cache")
    if opts.model and opts.model.startswith(("/", ".", "~")) and not Path(opts.model).expanduser().is_dir():
        raise UsageError(f"--model {opts.model} does not exist: pass a local checkpoint folder (holding config.json), "
                         "or the id of a model in the Hugging Face cache, such as Qwen/Qwen2.5-7B-Instruct")
    missing = [n for n, v in (("--model", opts.model), ("--layer", opts.layer), ("--context", opts.context))
               if v is None]
    if missing:
        raise UsageError(f"capture from a model needs {', '.join(missing)} (or use --synthetic SPEC)")


def capture_workload(opts: CaptureOptions, status: Callable[[str], None] = lambda s: None,
                     on_layer: Callable[[int, int], None] = lambda i, total: None):
    """The workload, saved to ``opts.out``; returns it and its content hash."""
    from kprof.workloads import get_spec, save, synthesize
    from kprof.workloads.synthetic import synthesis_workers

    check_capture(opts)
    if opts.synthetic:
        workers = synthesis_workers(get_spec(opts.synthetic))
        status(f"generating {opts.synthetic}" + (f" ({workers} processes, a KV head each)" if workers > 1 else ""))
        workload = synthesize(opts.synthetic, workers=workers)
    else:
        from kprof.workloads.capture import CaptureRequest, capture

        req = CaptureRequest(model=opts.model, layer=opts.layer, context=opts.context, prompt_file=opts.prompt_file,
                             random_tokens=opts.random_tokens, seed=opts.seed, dtype=opts.dtype, device=opts.device)
        workload = capture(req, status=status, on_layer=on_layer)
    return workload, save(workload, opts.out)
