"""The machine a measurement ran on: device, driver, clocks, software versions, tools.

The same fingerprint goes into every Result so numbers from different machines or software
stacks are never compared silently.
"""

from __future__ import annotations

import platform
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from kprof.core.version import VERSION
from kprof.measure import nvml


@dataclass(frozen=True)
class GpuInfo:
    index: int
    name: str
    compute_capability: str
    sm_count: int
    l2_bytes: int
    memory_bytes: int
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    max_sm_clock_mhz: int | None = None
    max_mem_clock_mhz: int | None = None
    temperature_c: int | None = None
    power_w: float | None = None
    throttle_reasons: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Environment:
    execution: str  # "gpu" or "cpu-interpreter"
    gpu: GpuInfo | None
    driver: str | None
    cuda_runtime: str | None
    nvml: bool
    ncu_path: str | None
    ncu_version: str | None
    python: str
    torch: str
    triton: str
    kprof: str
    git_revision: str | None
    host: str

    def to_dict(self) -> dict:
        return asdict(self)


def git_revision() -> str | None:
    """The kprof checkout's commit (with ``-dirty``), or None outside a git checkout."""
    root = Path(__file__).resolve().parent.parent
    try:
        rev = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, timeout=5)
        if rev.returncode:
            return None
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return rev.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def _gpu_info(index: int, with_nvml: bool) -> GpuInfo:
    props = torch.cuda.get_device_properties(index)
    info = dict(
        index=index,
        name=props.name,
        compute_capability=f"{props.major}.{props.minor}",
        sm_count=props.multi_processor_count,
        l2_bytes=getattr(props, "L2_cache_size", 0),
        memory_bytes=props.total_memory,
    )
    if with_nvml:
        try:
            import pynvml

            h = nvml.device_handle(index)
            s = nvml.sample(h)
            info.update(
                sm_clock_mhz=s.sm_clock_mhz,
                mem_clock_mhz=s.mem_clock_mhz,
                max_sm_clock_mhz=pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM),
                max_mem_clock_mhz=pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_MEM),
                temperature_c=s.temperature_c,
                power_w=s.power_w,
                throttle_reasons=nvml.decode_throttle(s.throttle_mask),
            )
        except Exception:  # NVML quirks on VMs must not break `kprof env`
            pass
    return GpuInfo(**info)


def collect_environment() -> Environment:
    """This machine and its software stack; ncu's path and version are filled in by ``kprof env``
    (:mod:`kprof.commands.environment`), which alone asks for them."""
    import triton

    has_gpu = torch.cuda.is_available()
    with nvml.nvml_session() as nvml_ok:
        gpu = _gpu_info(torch.cuda.current_device(), nvml_ok) if has_gpu else None
        driver = nvml.driver_version() if nvml_ok else None
    return Environment(
        execution="gpu" if has_gpu else "cpu-interpreter",
        gpu=gpu,
        driver=driver,
        cuda_runtime=torch.version.cuda,
        nvml=nvml_ok,
        ncu_path=None,
        ncu_version=None,
        python=platform.python_version(),
        torch=torch.__version__,
        triton=triton.__version__,
        kprof=VERSION,
        git_revision=git_revision(),
        host=platform.node(),
    )
