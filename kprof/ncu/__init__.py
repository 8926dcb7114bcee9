"""Nsight Compute integration: locating ncu (more arrives with `kprof ncu`)."""

from kprof.ncu.locate import NcuBinary, find_ncu

__all__ = ["NcuBinary", "find_ncu"]
