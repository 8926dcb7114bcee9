"""``kprof tune``: autotune the launches of a method on a workload."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from kprof.cli.console import console, err_console
from kprof.cli.exit_codes import EXIT_INTERRUPTED
from kprof.commands.protocols import EVICTION_MODES

# kprof.tuning.search.STRATEGIES (a test keeps them equal), here so that --help imports no torch
STRATEGIES = ("exhaustive", "random", "halving", "optuna")


@click.command()
@click.option("--method", required=True, help="Method (spec) whose launches are tuned.")
@click.option("--workload", default=None,
              help="Spec name or workload file [default: qwen2.5-7b-l14-32k on GPU, cpu-smoke on CPU].")
@click.option("--launch", "launches", multiple=True,
              help="Launch to tune (repeatable) [default: every tunable launch].")
@click.option("--strategy", type=click.Choice(STRATEGIES), default="halving", show_default=True,
              help="exhaustive: every candidate; random: a seeded sample; "
                   "halving: screen, then re-measure the better half; optuna: TPE proposes each next candidate "
                   "from those measured, screened a round at a time with successive-halving pruning (for large "
                   "spaces; pip install 'kprof[optuna]'; --max-configs defaults to 64).")
@click.option("--max-configs", type=click.IntRange(min=1), default=None,
              help="Cap on candidates screened per launch (the default first, then a sample of the space).")
@click.option("--budget-s", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Stop screening a launch after this many seconds.")
@click.option("--rounds", type=click.IntRange(min=1), default=None,
              help="Screening rounds per candidate. [default: 3 on GPU, 2 on CPU]")
@click.option("--observations", type=click.IntRange(min=1), default=None,
              help="Screening observations per round. [default: 100 on GPU, 2 on CPU]")
@click.option("--eviction", type=click.Choice(EVICTION_MODES), default="read-write", show_default=True,
              help="How the L2 eviction buffer evicts before every timed call, in screening and in the finalists' "
                   "paired runs: read-write (the paper's) or read (no dirty lines to write back; see kprof compare "
                   "--help). The cache records it and refuses to resume under the other mode.")
@click.option("--finalists", type=click.IntRange(min=0), default=3, show_default=True,
              help="Best candidates re-measured against the default with the paired protocol (0: none; the "
                   "default stays unless a finalist's interval lies above 1).")
@click.option("--timeout-s", type=click.FloatRange(min=0, min_open=True), default=120.0, show_default=True,
              help="Per-candidate limit; a hung candidate's worker is killed and replaced. If the default config "
                   "itself runs past it, the tune stops and caches nothing for it.")
@click.option("--retry-failed", is_flag=True,
              help="Measure again the candidates the cache holds as failed (each records its cause and the "
                   "timeout it ran under).")
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True,
              help="Where candidates run: cuda, or cpu (the Triton interpreter and the host clock); auto takes "
                   "the GPU when there is one.")
@click.option("--devices", default=None, metavar="all|0,1,...",
              help="Screen candidates on several GPUs of this host at once, one worker process pinned to each "
                   "(its own eviction buffer and host gate; a crash restarts that worker only); the finalists' "
                   "paired confirmation runs on the first of them alone. GPUs must be of one model. Without a "
                   "GPU, the count of interpreter workers. [default: one device]")
@click.option("--backend", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="ray: one actor per GPU of a Ray cluster (pip install 'kprof[ray]'); the cache is written here, "
                   "by this process only.")
@click.option("--address", default=None, help="With --backend ray: the cluster's address. [default: a local Ray]")
@click.option("--out-dir", type=click.Path(file_okay=False), default=None,
              help="Where the per-launch cache files live (resumable). [default: profiles/tuned under $KPROF_HOME, "
                   "else the project root (pyproject.toml or .git above the working directory), else "
                   "~/.cache/kprof]")
@click.option("--replace-stale", is_flag=True,
              help="A cache file measured on another setup (device, versions, kernel source) is renamed to "
                   "*.stale.json and the launch tuned afresh (without this flag such a file stops the run).")
@click.option("--export", "export_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the chosen config of every tuned launch to this JSON file (entries of other "
                   "methods, devices or shapes already in it are kept); user code reads it with "
                   "kprof.tuning.load_config(method, launch, shape, path).")
@click.option("--json", "as_json", is_flag=True, help="Print the cache documents as JSON.")
def tune(method, workload, launches, strategy, max_configs, budget_s, rounds, observations, eviction, finalists,
         timeout_s, retry_failed, device, devices, backend, address, out_dir, replace_stale, export_path,
         as_json) -> None:
    """Search each launch's declared config space; every candidate validated before it is timed.

    Candidates run in a worker process with a timeout, so compile errors, resource errors,
    crashes and hangs are recorded as failed and the run goes on. Results are cached per
    (method, launch, device, shape bucket) and written after every candidate: an interrupted
    tune resumes. The best screened candidates are then timed against the default in the same
    rounds (a balanced paired design on the complete operation); one replaces the default only
    when the lower bound of its speedup interval is above 1.
    """
    from kprof.commands.tune import cpu_note, export, run_tune, tune_request

    req = tune_request(method, workload, device, launches, strategy, max_configs, budget_s, rounds, observations,
                       finalists, timeout_s, Path(out_dir) if out_dir else None, replace_stale, eviction,
                       retry_failed=retry_failed, devices=devices, backend=backend, address=address,
                       export_path=export_path)
    if note := cpu_note(req):
        err_console.print(f"[yellow]{note}[/]")
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TextColumn("eta"), TimeRemainingColumn(), console=err_console, transient=True)
    tasks = {}

    def progress(launch: str, done: int, total: int, message: str = "") -> None:
        if launch not in tasks:
            tasks[launch] = bar.add_task(f"{method}.{launch}", total=total)
        bar.update(tasks[launch], completed=done, total=total)
        if message:  # a line per event on stderr: logs of a run cut short show how far it got
            err_console.print(f"[dim]{message}[/]", highlight=False)

    try:
        with bar:
            outcomes = run_tune(req, progress)
    except KeyboardInterrupt:
        err_console.print(f"[bold red]interrupted[/] (Ctrl-C): every candidate measured so far is in the cache under "
                          f"{req.out_dir}; the same command resumes from there", highlight=False, soft_wrap=True)
        sys.exit(EXIT_INTERRUPTED)
    if export_path:
        path = export(outcomes, export_path)
        if not as_json:
            console.print(f"[dim]chosen configs exported to {path}[/]")
    if as_json:
        click.echo(json.dumps([asdict(o.file) for o in outcomes], indent=2))
        return
    for o in outcomes:
        _report(o)


def _config(config: dict) -> str:
    """``BLOCK_D=64, num_warps=4``: a config as the progress lines and --set write it."""
    return ", ".join(f"{k}={v}" for k, v in config.items())


def _report(outcome) -> None:
    tf = outcome.file
    default = tf.measured(tf.default)
    base = default.median_us if default and default.status == "ok" else None
    ok = tf.ok()
    counts = {s: sum(1 for c in tf.candidates if c.status == s) for s in ("ok", "pruned", "rejected", "failed")}
    t = Table(title=f"{tf.key.method}.{outcome.launch} on {tf.key.device} ({tf.key.bucket}): "
                    f"{counts['ok']} ok, " + (f"{counts['pruned']} pruned, " if counts["pruned"] else "")
                    + f"{counts['rejected']} rejected, {counts['failed']} failed; "
                    f"{outcome.measured_now} measured now in {outcome.seconds:.0f} s"
                    + (f"; {outcome.left} left by the budget (a rerun resumes them)" if outcome.left else ""))
    for col in ("config", "median us", "vs default", "status"):
        t.add_column(col, justify="left" if col == "config" else "right")
    for rec in ok[:5] + [c for c in tf.candidates if c.status != "ok"][:3]:
        cfg = _config(rec.config) + (" (default)" if rec.config == tf.default else "")
        rel = f"{base / rec.median_us:.3f}x" if base and rec.median_us else ""
        t.add_row(cfg, f"{rec.median_us:.2f}" if rec.median_us else "", rel, rec.status if rec.status == "ok" else
                  f"{rec.status}: {rec.reason[:60]}")
    console.print(t)
    for f in tf.finalists:
        if f["status"] != "ok":
            console.print(f"  finalist {_config(f['config'])}: {f['status']} ({f['reason']})")
        elif f.get("low") is None:
            console.print(f"  finalist {_config(f['config'])}: complete-operation speedup {f['speedup']:.3f}x vs "
                          f"default ({f.get('note') or 'no interval'})")
        else:
            console.print(f"  finalist {_config(f['config'])}: complete-operation speedup {f['speedup']:.3f}x "
                          f"[{f['low']:.3f}, {f['high']:.3f}] vs default over {f.get('cycles', '?')} pair cycles")
    chosen = ("default (no finalist's speedup interval lies above 1)" if tf.best == tf.default
              else _config(tf.best))
    console.print(f"  chosen: {chosen}; cache {outcome.path}", soft_wrap=True)
