"""``kprof env``: what this machine is and how kprof will run on it."""

from __future__ import annotations

import json

import click
from rich.table import Table

from kprof.cli.console import console, format_bytes


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the environment as one JSON object.")
@click.option("--no-ncu", is_flag=True, help="Skip locating ncu and asking its version (saves ~1 s).")
@click.option("--measure-peak", is_flag=True,
              help="Measure the device's copy bandwidth (a 2 GiB device-to-device copy under kprof's protocol; "
                   "256 MiB on the CPU) and its matmul rate per dtype (torch.mm, 8192 square; 512 on the CPU), "
                   "cached in copy-peak.json and matmul-peak.json under $KPROF_HOME/measured (else "
                   "~/.cache/kprof/measured), never in the checkout: tables then show % of these roofs.")
def env(as_json: bool, no_ncu: bool, measure_peak: bool) -> None:
    """Device, driver, clocks, throttle reasons, software versions, ncu and NVML availability, and the
    cached copy peak that tables report percent of peak against."""
    from kprof.commands.environment import describe

    status = (lambda msg: None) if as_json else (lambda msg: console.print(f"[dim]{msg}[/]"))
    report = describe(with_ncu=not no_ncu, measure_peaks=measure_peak, status=status)
    e, peak, matmul = report.environment, report.copy_peak, report.matmul_peak_tflops
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
        return
    t = Table(show_header=False, box=None, pad_edge=False)
    t.add_column(style="bold cyan")
    t.add_column()
    if e.gpu:
        g = e.gpu
        t.add_row("runs on", f"[green]GPU[/] {g.name} (cc {g.compute_capability})")
        t.add_row("SMs / L2 / memory", f"{g.sm_count} / {format_bytes(g.l2_bytes)} / {format_bytes(g.memory_bytes)}")
        if g.sm_clock_mhz is not None:
            t.add_row("SM clock", f"{g.sm_clock_mhz} MHz (max {g.max_sm_clock_mhz})")
            t.add_row("memory clock", f"{g.mem_clock_mhz} MHz (max {g.max_mem_clock_mhz})")
            t.add_row("temperature / power", f"{g.temperature_c} C / {g.power_w:.0f} W")
            t.add_row("throttle reasons", ", ".join(g.throttle_reasons) or "none")
    else:
        t.add_row("runs on", "[yellow]CPU via the Triton interpreter[/] (no CUDA device): numbers are not GPU numbers")
    t.add_row("driver", e.driver or "n/a")
    t.add_row("CUDA runtime (torch)", e.cuda_runtime or "n/a (CPU build)")
    t.add_row("NVML", "available" if e.nvml else "unavailable")
    problem = report.ncu_problem
    t.add_row("ncu", f"[yellow]{problem}[/]" if problem else f"{e.ncu_path} ({e.ncu_version})" if e.ncu_path
              else "not looked for (--no-ncu)" if no_ncu
              else "not found: install Nsight Compute, put ncu on PATH, or set KPROF_NCU")
    t.add_row("python / torch / triton", f"{e.python} / {e.torch} / {e.triton}")
    t.add_row("kprof", f"{e.kprof} (git {e.git_revision or 'n/a'})")
    t.add_row("copy peak", f"{peak.gbs:,.0f} GB/s (measured {peak.measured})" if peak
              else "not measured: kprof env --measure-peak")
    t.add_row("matmul peak", ", ".join(f"{k} {v:,.3g} TFLOP/s" for k, v in matmul.items())  # a CPU's: 0.0123
              or "not measured: kprof env --measure-peak")
    console.print(t)
