"""Find the ``ncu`` binary and its version."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from dataclasses import dataclass

_CANDIDATES = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu")


@dataclass(frozen=True)
class NcuBinary:
    path: str
    version: str | None


def override_problem() -> str | None:
    """What is wrong with ``$KPROF_NCU`` when it is set and names no executable, else None."""
    path = os.environ.get("KPROF_NCU")
    if not path or (os.path.isfile(path) and os.access(path, os.X_OK)):
        return None
    why = ("does not exist" if not os.path.exists(path) else "is a folder" if os.path.isdir(path)
           else "is not executable")
    return f"KPROF_NCU={path} {why}: point it at the ncu binary, or unset it to search PATH"


def find_ncu() -> NcuBinary | None:
    """``$KPROF_NCU``, then ``ncu`` on PATH, then the usual CUDA install locations."""
    path = os.environ.get("KPROF_NCU") or shutil.which("ncu")
    if not path:
        for pattern in _CANDIDATES:
            hits = sorted(glob.glob(pattern))
            if hits:
                path = hits[-1]
                break
    if not path or not os.access(path, os.X_OK):
        return None
    return NcuBinary(path=path, version=_version(path))


def _version(path: str) -> str | None:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"Version\s+([\d.]+)", out)
    return m.group(1) if m else (out.strip().splitlines()[-1] if out.strip() else None)
