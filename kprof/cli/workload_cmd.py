"""``kprof workload``: list named specs and describe a workload's attention statistics."""

from __future__ import annotations

import json

import click
from rich.table import Table

from kprof.cli.console import console, format_bytes


@click.group()
def workload() -> None:
    """Named workload specs and workload files."""


@workload.command("list")
def list_specs() -> None:
    """List the named specs (materialised synthetically when no captured file is given)."""
    from kprof.commands.workloads import SPECS

    wide = console.width >= 100  # narrower: the descriptions go under the table, whole
    t = Table(title="named workloads")
    for col in ("name", "Hq", "Hkv", "d", "N", "dtype", "K+V", *["description"] * wide):  # a name is typed: never cut
        t.add_column(col, justify="right" if col in ("Hq", "Hkv", "d", "N", "K+V") else "left",
                     no_wrap=col != "description")
    for s in SPECS.values():
        t.add_row(s.name, str(s.hq), str(s.hkv), str(s.d), str(s.n), s.dtype, format_bytes(s.shape.kv_bytes),
                  *[s.description] * wide)
    console.print(t)
    for s in [] if wide else SPECS.values():
        console.print(f"[bold]{s.name}[/]: {s.description}", highlight=False)


@workload.command()
@click.argument("name_or_file")
@click.option("--stats", is_flag=True,
              help="Also make a named spec's tensors and show its content hash and attention statistics (a file "
                   "always shows them).")
@click.option("--json", "as_json", is_flag=True, help="Print shape, provenance (and statistics) as JSON.")
def info(name_or_file: str, stats: bool, as_json: bool) -> None:
    """Shape, provenance and, for a file or with --stats, content hash and attention concentration
    of NAME_OR_FILE (a spec name, a synthetic: shape, or a .safetensors file).

    Statistics are exact fp64 softmax per query head: share of attention mass held by the top 1%
    of keys and by the top 512 keys, mass on the first 4 (sink) tokens, and exp(entropy).
    """
    from kprof.commands.workloads import STATISTICS, describe

    w = describe(name_or_file, stats)
    if as_json:
        click.echo(json.dumps(w.to_dict(), indent=2))
        return
    source = w.metadata.get("source", "?")
    console.print(f"[bold]{w.name}[/]  {w.shape}  K+V {format_bytes(w.shape.kv_bytes)}  source={source}"
                  + (f"  hash={w.content_hash[:16]}" if w.content_hash else ""))
    if w.spec is not None:
        console.print(f"{w.spec.description}; model {w.spec.model}"
                      + (f", layer {w.spec.layer}" if w.spec.layer is not None else "")
                      + f", RoPE theta {w.spec.rope_theta:g}")
    if w.attention is None:
        console.print("[dim]attention statistics: pass --stats (makes the tensors)[/]")
        return
    t = Table(title="attention concentration over query heads (fp64)")
    for col in ("statistic", "mean", "min", "max"):
        t.add_column(col, justify="left" if col == "statistic" else "right")
    labels = {"top1pct_mass": f"mass in top 1% ({max(1, w.shape.n // 100)} keys)",
              "top512_mass": "mass in top 512 keys", "sink_mass": "mass on first 4 tokens",
              "effective_keys": "effective keys exp(H)"}
    for f in STATISTICS:
        fmt = "{:.0f}" if f == "effective_keys" else "{:.3f}"
        t.add_row(labels[f], *(fmt.format(w.attention[f][k]) for k in ("mean", "min", "max")))
    console.print(t)
