"""``kprof methods`` (what can be timed), ``kprof check`` and ``kprof validate`` (is its output right)."""

from __future__ import annotations

import json
import sys

import click
from rich.markup import escape
from rich.table import Table

from kprof.cli.console import console, err_console
from kprof.cli.exit_codes import EXIT_INVALID


def _target_options(fn):
    """--method, --workload and --device, shared by check and validate."""
    fn = click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True,
                      help="Where to run; cpu uses the Triton interpreter.")(fn)
    fn = click.option("--workload", "workload_name", default=None,
                      help="Spec name or .safetensors file [default: qwen2.5-7b-l14-32k on GPU, cpu-smoke on CPU].")(fn)
    return click.option("--method", "method_name", required=True, help="Method spec (see `kprof methods`).")(fn)


@click.command()
@click.option("--json", "as_json", is_flag=True,
              help="Print each method with its module, launches, tunable parameters and source hash as JSON.")
def methods(as_json: bool) -> None:
    """List registered methods, where each comes from, their options (NAME:key=value; --json says
    what each does), their launches and tunable launch parameters (defaults in bold).

    Your own methods: --method MODULE:NAME on any command (a Method subclass or a function
    f(q, k, v) -> o), an entry point in the group kprof.methods of an installed package, or
    KPROF_PLUGINS=pkg.module. The source hash covers the Triton kernels each launch compiles and
    those they call: tuned profiles keyed to another hash are not used.
    """
    from kprof.commands.methods import cards

    known = cards(source_hash=as_json)
    if as_json:
        click.echo(json.dumps([c.to_dict() for c in known], indent=2))
        return
    t = Table(title="methods", caption="* the default value (also in bold)")
    t.add_column("method", no_wrap=True)
    t.add_column("from")
    t.add_column("GPU only")
    t.add_column("summary", overflow="fold")  # an option's choices (a|b|c) wrap; they are never cut
    t.add_column("launch: parameters", overflow="fold")  # a long value list wraps; it is never cut
    for c in known:
        params = "\n".join(
            f"{launch}: " + ", ".join(
                f"{name}={{{', '.join(f'[b]{v}*[/]' if v == p['default'] else str(v) for v in p['values'])}}}"
                for name, p in space.items())
            for launch, space in c.launches.items()
        ) or "(library call, nothing to tune)"
        options = ", ".join(f"{key}={text.split(':', 1)[0]}" for key, text in c.options.items())
        summary = escape(c.summary) + (f"\n[dim]options: {escape(options)}[/]" if options else "")
        t.add_row(c.name, c.origin, "yes" if c.needs_cuda else "no", summary, params)
    console.print(t)


@click.command()
@_target_options
@click.option("--set", "overrides", multiple=True, metavar="LAUNCH.PARAM=V",
              help="Override a launch parameter, e.g. --set partial.BLOCK_N=128 (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print the validation report as JSON.")
def check(method_name: str, workload_name: str | None, device: str, overrides: tuple[str, ...], as_json: bool) -> None:
    """Run a method once and compare its output with the fp64 reference; exit 3 on a mismatch.

    The output buffer is poisoned first; sampling methods (santa) are checked against the fp64
    reference fed with their own selected teams and corrections.
    """
    from kprof.commands.methods import check as run_check

    c = run_check(method_name, workload_name, device, list(overrides))
    v, record = c.record.validation, c.record
    if as_json:
        click.echo(json.dumps({"method": method_name, "workload": c.workload, "config": record.config,
                               "rel_error": v.rel_error, "max_abs_error": v.max_abs_error,
                               "non_finite": v.non_finite, "tolerance": v.tolerance, "passed": v.passed,
                               "launches": record.catalog.kernels, "faults": record.faults}, indent=2))
    else:
        if not c.on_gpu:
            err_console.print(f"[yellow]{c.target_label}[/]")
        t = Table(title=f"{method_name} on {c.workload} ({c.shape})")
        for col in ("rel L2 error", "max abs error", "tolerance", "launches", "status"):
            t.add_column(col, justify="right")
        status = "ok" if v.passed else f"FAIL ({v.non_finite} non-finite)" if v.non_finite else "FAIL"
        launches = str(record.catalog.launches_per_call) if record.catalog.launches_per_call else "n/a"
        t.add_row(f"{v.rel_error:.3e}", f"{v.max_abs_error:.3e}", f"{v.tolerance:.0e}", launches, status)
        console.print(t)
    for fault in record.faults:
        err_console.print(f"[bold red]fault:[/] {fault}")
    if not v.passed or record.faults:
        sys.exit(EXIT_INVALID)


@click.command()
@_target_options
@click.option("--realisations", type=click.IntRange(min=1), default=3, show_default=True,
              help="Sampling realisations (noise seeds 0..n-1) for sampling methods; 1 run otherwise.")
@click.option("--json", "as_json", is_flag=True, help="Print one record per realisation as JSON.")
def validate(method_name: str, workload_name: str | None, device: str, realisations: int, as_json: bool) -> None:
    """Validate a method as `kprof compare` does before timing, over several sampling realisations.

    Each realisation poisons the output, runs once, compares with the fp64 reference (sampling
    methods: fed with the kernels' own selection and corrections) and checks the launch catalog.
    Exit 3 if any realisation fails or the method reports a fault in its runs.
    """
    from kprof.commands.methods import validate as run_validate

    checks = run_validate(method_name, workload_name, device, realisations)
    records = []
    for c in checks:
        v, cat = c.record.validation, c.record.catalog
        records.append({"spec": c.spec, "rel_error": v.rel_error, "max_abs_error": v.max_abs_error,
                        "non_finite": v.non_finite, "passed": v.passed, "launches": cat.launches_per_call,
                        "catalog_ok": cat.matches_expected, "kernels": cat.kernels, "faults": c.record.faults})
    ok = all(c.passed for c in checks)
    if as_json:
        click.echo(json.dumps(records, indent=2))
    else:
        t = Table(title=f"validation of {method_name} on {checks[0].workload} ({checks[0].shape})")
        for col in ("run", "rel L2 error", "max abs error", "launches", "kernels as declared", "status"):
            t.add_column(col, justify="left" if col == "run" else "right")
        for r in records:
            catalog = {True: "as expected", False: "[red]unexpected[/]", None: "n/a"}[r["catalog_ok"]]
            t.add_row(r["spec"], f"{r['rel_error']:.3e}", f"{r['max_abs_error']:.3e}",
                      str(r["launches"] or "n/a"), catalog,
                      "[red]FAULT[/]" if r["faults"] else "ok" if r["passed"] else "[red]FAIL[/]")
            for fault in r["faults"]:
                err_console.print(f"[bold red]fault[/] in {r['spec']}: {fault}")
        console.print(t)
        console.print(f"max abs error over {len(records)} run(s): {max(r['max_abs_error'] for r in records):.3e}")
    if not ok:
        sys.exit(EXIT_INVALID)
