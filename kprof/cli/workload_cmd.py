"""``kprof workload``: list named specs and describe a workload's attention statistics."""

from __future__ import annotations

import json
from dataclasses import asdict

import click
from rich.table import Table

from kprof.cli.console import console, format_bytes


@click.group()
def workload() -> None:
    """Named workload specs and workload files."""


@workload.command("list")
def list_specs() -> None:
    """List the named specs (materialised synthetically when no captured file is given)."""
    from kprof.workloads import SPECS

    t = Table(title="named workloads")
    for col in ("name", "Hq", "Hkv", "d", "N", "dtype", "K+V", "description"):
        t.add_column(col, justify="right" if col in ("Hq", "Hkv", "d", "N", "K+V") else "left")
    for s in SPECS.values():
        t.add_row(s.name, str(s.hq), str(s.hkv), str(s.d), str(s.n), s.dtype, format_bytes(s.shape.kv_bytes),
                  s.description)
    console.print(t)


@workload.command()
@click.argument("name_or_file")
@click.option("--json", "as_json", is_flag=True, help="Print shape, hash and statistics as JSON.")
def info(name_or_file: str, as_json: bool) -> None:
    """Shape, content hash and attention concentration of NAME_OR_FILE (a spec name or .safetensors).

    Statistics are exact fp64 softmax per query head: share of attention mass held by the top 1%
    of keys and by the top 512 keys, mass on the first 4 (sink) tokens, and exp(entropy).
    """
    from kprof.commands.preflight import check_workloads
    from kprof.workloads import resolve_workload
    from kprof.workloads.statistics import attention_profile

    check_workloads([name_or_file])
    w = resolve_workload(name_or_file)
    prof = attention_profile(w)
    fields = ("top1pct_mass", "top512_mass", "sink_mass", "effective_keys")
    summary = {f: {"mean": prof.mean(f), "min": prof.min(f), "max": prof.max(f)} for f in fields}
    if as_json:
        doc = {
            "name": w.name,
            "shape": asdict(w.shape),
            "content_hash": w.content_hash(),
            "metadata": w.metadata,
            "attention": summary,
            "heads": [asdict(h) for h in prof.heads],
        }
        click.echo(json.dumps(doc, indent=2))
        return
    console.print(f"[bold]{w.name}[/]  {w.shape}  K+V {format_bytes(w.shape.kv_bytes)}  "
                  f"source={w.metadata.get('source', '?')}  hash={w.content_hash()[:16]}")
    t = Table(title="attention concentration over query heads (fp64)")
    for col in ("statistic", "mean", "min", "max"):
        t.add_column(col, justify="left" if col == "statistic" else "right")
    labels = {"top1pct_mass": f"mass in top 1% ({max(1, w.shape.n // 100)} keys)",
              "top512_mass": "mass in top 512 keys", "sink_mass": "mass on first 4 tokens",
              "effective_keys": "effective keys exp(H)"}
    for f in fields:
        fmt = "{:.0f}" if f == "effective_keys" else "{:.3f}"
        t.add_row(labels[f], *(fmt.format(summary[f][k]) for k in ("mean", "min", "max")))
    console.print(t)
