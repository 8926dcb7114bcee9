"""``kprof santa prepare``: build (or load) SANTA++ teams and packed copies, report memory and time."""

from __future__ import annotations

import json
import time

import click
from rich.table import Table

from kprof.cli.console import console, err_console

MIB = 2**20


@click.group()
def santa() -> None:
    """SANTA++ preparation (teams, packing) outside of timing."""


@santa.command()
@click.option("--workload", required=True, help="Spec name or .safetensors workload file.")
@click.option("--p", "p", type=click.IntRange(min=1), default=16, show_default=True,
              help="Nominal parent size P.")
@click.option("--r", "r", type=click.IntRange(min=1), default=4, show_default=True,
              help="Representatives per parent R (divides P).")
@click.option("--s", "s", type=click.IntRange(min=1), default=124, show_default=True,
              help="Nominal budget S (multiple of P/R); K = min(M, S/(P/R)).")
@click.option("--parents", type=click.Choice(["kmeans", "contiguous"]), default="kmeans", show_default=True,
              help="Parent partition: MiniBatchKMeans (Alg. 3) or contiguous spans (Alg. 4).")
@click.option("--seed", type=int, default=0, show_default=True, help="k-means seed.")
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True,
              help="Where the packed copies are made.")
@click.option("--rebuild", is_flag=True, help="Ignore the team cache and build again.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def prepare(workload, p, r, s, parents, seed, device, rebuild, as_json) -> None:
    """Build parents and teams per KV head (cached next to the workload), pack K/V team-major.

    Reports teams, the budget K, persistent memory beyond the original K/V (packed K/V,
    representative keys, team starts/lengths) and preparation time.
    """
    from kprof.commands.preflight import as_usage, check_workloads
    from kprof.core.target import resolve_target
    from kprof.kernels.santa import SantaSettings, load_or_build, pack
    from kprof.workloads import resolve_workload

    check_workloads([workload])
    with as_usage():
        settings = SantaSettings(p=p, r=r, s=s, parents=parents, seed=seed)
    target = resolve_target(device)
    status = (lambda msg: None) if as_json else (lambda msg: err_console.print(f"[dim]• {msg}[/]"))
    w = resolve_workload(workload)
    digest = w.content_hash()
    if rebuild:
        from kprof.kernels.santa.cache import cache_path

        cache_path(w, settings, digest).unlink(missing_ok=True)
    t0 = time.perf_counter()
    layout, outcome = load_or_build(w, settings, status, digest)
    layout_s = time.perf_counter() - t0
    arts = pack(w.k.to(target.device), w.v.to(target.device), layout)
    mem = arts.memory()
    teams = [int(m) for m in layout.num_teams]
    report = {
        "workload": w.name, "content_hash": digest, "settings": settings.__dict__,
        "teams_per_kv_head": teams, "k_per_query_head": [settings.budget(m) for m in teams],
        "mean_team_size": w.shape.n * len(teams) / sum(teams),
        "memory_mib": {k: v / MIB for k, v in mem.items() if k != "teams"},
        "seconds": {"teams": outcome.build_seconds, "layout_total": layout_s, "pack": arts.prep_seconds["pack"]},
        "cache": {"path": str(outcome.path), "status": outcome.status},
        "device": str(target.device),
    }
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    t = Table(title=f"SANTA++ preparation: {w.name} ({w.shape}), {settings.cache_key}", show_header=False)
    t.add_column(style="bold cyan")
    t.add_column()
    t.add_row("teams per KV head", ", ".join(map(str, teams)) + f" (mean size {report['mean_team_size']:.2f})")
    t.add_row("K per query head", ", ".join(map(str, sorted(set(report["k_per_query_head"])))) + f"  (S={s})")
    t.add_row("packed K/V", f"{mem['packed_kv'] / MIB:.2f} MiB")
    t.add_row("representative keys", f"{mem['representatives'] / MIB:.2f} MiB")
    t.add_row("team starts/lengths", f"{mem['starts_lengths'] / MIB:.2f} MiB")
    t.add_row("total beyond K/V",
              f"{(mem['packed_kv'] + mem['representatives'] + mem['starts_lengths']) / MIB:.2f} MiB")
    t.add_row("team construction", f"{outcome.build_seconds:.2f} s ({outcome.status})")
    t.add_row("packing", f"{arts.prep_seconds['pack'] * 1e3:.1f} ms on {target.device}")
    t.add_row("cache", str(outcome.path))
    console.print(t)
