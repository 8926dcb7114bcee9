"""``kprof capture``: record a decode workload from a local model, or materialise a named spec."""

from __future__ import annotations

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kprof.cli.console import console, err_console, format_bytes


@click.command()
@click.option("--model", default=None,
              help="Local checkpoint directory (or a model already in the HF cache). Never downloads.")
@click.option("--layer", type=click.IntRange(min=0), default=None,
              help="Decoder layer whose attention input is recorded (0-based).")
@click.option("--context", type=click.IntRange(min=1), default=None,
              help="Prefill length N; the query is the last position.")
@click.option("--prompt-file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Text to tokenize (at least N tokens).")
@click.option("--random-tokens", is_flag=True, help="Use N seeded random token ids instead of a prompt file.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for --random-tokens.")
@click.option("--dtype", type=click.Choice(["fp16", "bf16", "fp32"]), default="bf16", show_default=True,
              help="Model and workload dtype.")
@click.option("--device", type=click.Choice(["cuda", "cpu"]), default="cpu", show_default=True,
              help="Where the prefill runs.")
@click.option("--synthetic", default=None, metavar="SPEC",
              help="Instead of a model: materialise this named spec (kprof workload list) with the deterministic "
                   "generator.")
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="Workload file to write (.safetensors).")
@click.option("--force", is_flag=True, help="Replace the file --out names if it exists.")
def capture(model, layer, context, prompt_file, random_tokens, seed, dtype, device, synthetic, out, force) -> None:
    """Record q (last position) and post-RoPE K/V of one layer into a workload file.

    With --model: a dense prefill through transformers with kprof's attention hook (Qwen2, Qwen3,
    Llama families). With --synthetic SPEC: the named spec's synthetic stand-in.
    """
    from kprof.commands.capture import CaptureOptions, capture_workload, check_capture

    opts = CaptureOptions(out, model, layer, context, prompt_file, random_tokens, seed, dtype, device, synthetic, force)
    check_capture(opts)  # before the bar: an error line alone, not after a bar's blank line
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   console=err_console, transient=True, disable=bool(synthetic) or not err_console.is_terminal)
    with bar:
        task = bar.add_task("prefill (layers)", total=(layer or 0) + 1)
        workload, digest = capture_workload(opts, status=lambda s: err_console.print(f"[dim]• {s}[/]"),
                                            on_layer=lambda i, total: bar.update(task, completed=i))
    console.print(f"wrote [bold]{out}[/]: {workload.shape}, K+V {format_bytes(workload.shape.kv_bytes)}, "
                  f"hash {digest[:16]}")
