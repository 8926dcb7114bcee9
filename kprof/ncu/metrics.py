"""Nsight Compute metric names behind kprof's tables (SANTA++ Table 14 columns) and named sets."""

from __future__ import annotations

# table column -> ncu metric
TABLE14 = {
    "ctas": "launch__grid_size",
    "duration_us": "gpu__time_duration.sum",
    "occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "eligible_warps": "smsp__warps_eligible.avg.per_cycle_active",
    "dram_pct": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "registers_per_thread": "launch__registers_per_thread",
}

METRIC_SETS = {
    "table14": tuple(TABLE14.values()),
    "memory": (
        "dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_sector_hit_rate.pct",
        "l1tex__t_sector_hit_rate.pct", "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    ),
    "compute": (
        "sm__throughput.avg.pct_of_peak_sustained_elapsed", "sm__inst_executed.sum",
        "smsp__inst_executed.avg.per_cycle_active", "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    ),
    "launch": (
        "launch__block_size", "launch__grid_size", "launch__registers_per_thread",
        "launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic",
        "launch__waves_per_multiprocessor",
    ),
}


def resolve_metrics(sets: tuple[str, ...] | list[str]) -> list[str]:
    """Table 14 metrics plus each named set or raw metric name, in order, without duplicates."""
    out = list(TABLE14.values())
    for item in sets:
        for name in METRIC_SETS.get(item, (item,)):
            if name not in out:
                out.append(name)
    return out
