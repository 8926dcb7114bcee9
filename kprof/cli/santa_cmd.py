"""``kprof santa prepare``: build (or load) SANTA++ teams and packed copies, report memory and time."""

from __future__ import annotations

import json

import click
from rich.table import Table

from kprof.cli.console import console, err_console


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
    from kprof.commands.santa_prepare import prepare_teams

    status = (lambda msg: None) if as_json else (lambda msg: err_console.print(f"[dim]• {msg}[/]"))
    report = prepare_teams(workload, p, r, s, parents, seed, device, rebuild, status)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    mem, sec = report["memory_mib"], report["seconds"]
    t = Table(title=f"SANTA++ preparation: {report['workload']} ({report['shape']}), {report['cache_key']}",
              show_header=False)
    t.add_column(style="bold cyan")
    t.add_column()
    t.add_row("teams per KV head",
              ", ".join(map(str, report["teams_per_kv_head"])) + f" (mean size {report['mean_team_size']:.2f})")
    t.add_row("K per query head", ", ".join(map(str, sorted(set(report["k_per_query_head"])))) + f"  (S={s})")
    t.add_row("packed K/V", f"{mem['packed_kv']:.2f} MiB")
    t.add_row("representative keys", f"{mem['representatives']:.2f} MiB")
    t.add_row("team starts/lengths", f"{mem['starts_lengths']:.2f} MiB")
    t.add_row("total beyond K/V", f"{mem['packed_kv'] + mem['representatives'] + mem['starts_lengths']:.2f} MiB")
    t.add_row("team construction", f"{sec['teams']:.2f} s ({report['cache']['status']})")
    t.add_row("packing", f"{sec['pack'] * 1e3:.1f} ms on {report['device']}")
    t.add_row("cache", report["cache"]["path"])
    console.print(t)
