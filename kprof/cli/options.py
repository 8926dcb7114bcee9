"""Options shared by every command that times something."""

from __future__ import annotations

import click

from kprof.commands.protocols import CPU_EMBEDDED, EVICTION_MODES, GPU_DEFAULT


def _percent(ctx, param, text: str | None) -> float | None:
    """``0.5%`` or ``0.005`` as a fraction; a one-line usage error otherwise."""
    from kprof.commands.errors import UsageError
    from kprof.commands.percent import parse_percent

    try:
        return None if text is None else parse_percent(text, "0.5%")
    except UsageError as exc:
        raise click.BadParameter(str(exc)) from None


def one_format(**flags: bool) -> str | None:
    """The output format the flags choose (``markdown=True`` -> "markdown"), None for a table;
    two at once is a usage error."""
    chosen = [f"--{name}" for name, on in flags.items() if on]
    if len(chosen) > 1:
        raise click.UsageError(f"{' and '.join(chosen)} each choose the output format: pass one")
    return chosen[0].removeprefix("--") if chosen else None


_RESULT_JSON = "Print the Result document as JSON on stdout (progress stays on stderr)."


def protocol_options(fn=None, *, force: bool = True, many_workloads: bool = False, json_help: str = _RESULT_JSON):
    """Add the protocol options; each defaults to the paper's value on a GPU, a tiny one on CPU.
    ``force=False`` leaves out ``--force`` for a command that has its own; ``many_workloads``
    makes ``--workload`` repeatable (a sweep); ``json_help`` says what ``--json`` prints."""
    if fn is None:
        return lambda f: protocol_options(f, force=force, many_workloads=many_workloads, json_help=json_help)

    def dflt(name: str) -> str:
        gpu, cpu = getattr(GPU_DEFAULT, name), getattr(CPU_EMBEDDED, name)
        return f"[default: {gpu}]" if gpu == cpu else f"[default: {gpu} on GPU, {cpu} on CPU]"

    opts = [
        click.option("--workload", default=None, multiple=many_workloads,
                     help="Spec name, a shape such as synthetic:hq=8,hkv=2,d=64,n=4096,dtype=fp16 (optional "
                          "seed=, layout=clustered|uniform, rope_theta=), or a .safetensors file"
                          + (" (repeatable: one paired run per workload, one table and Result)" if many_workloads
                             else "")
                     + " [default: qwen2.5-7b-l14-32k on GPU, cpu-smoke on CPU]."),
        click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True,
                     help="Where to run; cpu means the Triton interpreter and the host clock."),
        click.option("--precision", default=None, callback=_percent, metavar="P%",
                     help="Run whole design cycles until every interval the command reports (speedups; latencies "
                          "where there is no pair: one method, or stages) is within +-P, then stop; intervals are then "
                          "computed at 97.5% per look so "
                          "that the stopped one still covers about 95%. [default: 0.5% on GPU; on CPU a fixed "
                          "round count]"),
        click.option("--max-time", type=float, default=None, metavar="SECONDS",
                     help="With --precision: stop at the first look after this many seconds of timing and say "
                          "the target was not reached (the first look always comes: it needs the fewest rounds "
                          f"that give every interval). [default: {GPU_DEFAULT.max_time_s:g}]"),
        click.option("--rounds", type=int, default=None,
                     help="A fixed number of rounds instead of --precision, rounded up to whole cycles of the "
                          "balanced design. [default on CPU: the smallest whole number of cycles that is at "
                          "least 12 rounds and gives every speedup at least 6 pair cycles, plus whole cycles "
                          "(up to twice as many rounds) while bad rounds, left out, leave a speedup with fewer "
                          "than 5 usable ones]"),
        click.option("--warmup-pairs", type=int, default=None,
                     help="Untimed interleaved invocations per method before each round (the first round also "
                          f"gets {GPU_DEFAULT.initial_warmup_pairs} more on GPU, {CPU_EMBEDDED.initial_warmup_pairs} "
                          f"on CPU: clocks and caches settle). {dflt('warmup_pairs')}"),
        click.option("--observations", type=int, default=None,
                     help=f"Timed invocations per method per round. {dflt('observations')}"),
        click.option("--evict-mib", type=int, default=None,
                     help="Eviction buffer read+written before each timed call (never below 8x L2). "
                          f"{dflt('evict_mib')}"),
        click.option("--eviction", type=click.Choice(EVICTION_MODES), default=None,
                     help="How the eviction buffer evicts: read-write, the paper's protocol (an in-place add that "
                          "leaves L2 full of dirty lines, whose write-back the timed call then pays), or read (a "
                          "reduction that leaves clean lines, as a decode step's weight reads do). "
                          f"{dflt('eviction')}"),
        click.option("--graph", is_flag=True, default=None, help="Time CUDA-graph replays of the operation."),
        click.option("--host-bound", is_flag=True, default=None,
                     help="No eviction: back-to-back calls, so host launch overhead shows (labelled host-bound)."),
        click.option("--fixed-launch-phase", is_flag=True, default=None,
                     help="No untimed pad kernel before every second observation cycle. By default one is "
                          "launched there so that each row runs as often at an odd as at an even position in "
                          "the stream of launches: on the H200 a call's speed depends on whether that position "
                          "is odd or even."),
        click.option("--config", "config_mode", default="auto", show_default=True,
                     help="Launch configs: auto (tuned ones from profiles/tuned/ when their key matches this "
                          "setup), default (declared defaults), or a JSON file of launch -> parameters."),
        click.option("--json", "as_json", is_flag=True,
                     help=json_help),
        click.option("--out", type=click.Path(dir_okay=False), default=None,
                     help="Write the Result here (plus an .obs.npz sidecar) instead of runs/<time>-....json under "
                          "$KPROF_HOME, else the project root, else ~/.cache/kprof."),
    ]
    if force:
        opts.append(click.option("--force", is_flag=True, help="Replace the file --out names if it exists."))
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


def protocol_overrides(kwargs: dict) -> dict:
    keys = ("rounds", "precision", "warmup_pairs", "observations", "evict_mib", "eviction", "graph", "host_bound")
    out = {k: (kwargs.pop(k) or None) if k in ("graph", "host_bound") else kwargs.pop(k) for k in keys}
    out["launch_phase"] = False if kwargs.pop("fixed_launch_phase") else None
    out["max_time_s"] = kwargs.pop("max_time")
    return out
