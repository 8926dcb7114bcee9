"""``kprof methods`` (what can be timed) and ``kprof check`` (is its output right here)."""

from __future__ import annotations

import json
import sys

import click
from rich.table import Table

from kprof.cli.console import console, err_console
from kprof.config_space import parse_overrides
from kprof.execution import resolve_target
from kprof.methods import METHODS, get_method
from kprof.validation import compare_outputs
from kprof.workloads import resolve_workload


@click.command()
def methods() -> None:
    """List registered methods, their launches and tunable launch parameters (defaults in bold)."""
    t = Table(title="methods")
    t.add_column("method")
    t.add_column("GPU only")
    t.add_column("summary")
    t.add_column("launch: parameters")
    for name in sorted(METHODS):
        m = METHODS[name]()
        spaces = m.config_space()
        params = "\n".join(
            f"{launch}: " + ", ".join(f"{p.name}={{{','.join(f'[b]{v}[/]' if v == p.default else str(v) for v in p.values)}}}"
                                      for p in space.params)
            for launch, space in spaces.items()
        ) or "(library call, nothing to tune)"
        t.add_row(name, "yes" if m.needs_cuda else "no", m.summary, params)
    console.print(t)


@click.command()
@click.option("--method", "method_name", required=True, help="Method to check (see `kprof methods`).")
@click.option("--workload", "workload_name", default=None,
              help="Spec name or .safetensors file [default: qwen2.5-7b-l14-32k on GPU, cpu-smoke on CPU].")
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True,
              help="Where to run; cpu uses the Triton interpreter.")
@click.option("--set", "overrides", multiple=True, metavar="LAUNCH.PARAM=V",
              help="Override a launch parameter, e.g. --set partial.BLOCK_N=128 (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print the validation report as JSON.")
def check(method_name: str, workload_name: str | None, device: str, overrides: tuple[str, ...], as_json: bool) -> None:
    """Run a method once and compare its output with the fp64 reference; exit 1 on a mismatch."""
    target = resolve_target(device)
    workload_name = workload_name or ("qwen2.5-7b-l14-32k" if target.is_gpu else "cpu-smoke")
    method = get_method(method_name)
    w = resolve_workload(workload_name)
    prepared = method.prepare(w, target, parse_overrides(overrides))
    if prepared.output is not None:
        prepared.output.fill_(float("nan"))
    out = prepared.run()
    report = compare_outputs(out, method.reference(w))
    if as_json:
        click.echo(json.dumps({"method": method_name, "workload": w.name, "config": prepared.config,
                               "rel_error": report.rel_error, "max_abs_error": report.max_abs_error,
                               "non_finite": report.non_finite, "tolerance": report.tolerance,
                               "passed": report.passed}, indent=2))
    else:
        if not target.is_gpu:
            err_console.print(f"[yellow]{target.label}[/]")
        t = Table(title=f"{method_name} on {w.name} ({w.shape})")
        for col in ("rel L2 error", "max abs error", "tolerance", "status"):
            t.add_column(col, justify="right")
        t.add_row(f"{report.rel_error:.3e}", f"{report.max_abs_error:.3e}", f"{report.tolerance:.0e}", report.status)
        console.print(t)
    if not report.passed:
        sys.exit(1)
