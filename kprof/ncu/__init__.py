"""Nsight Compute integration: locate ncu, run it on the kprof target, parse its CSV into tables."""

from kprof.ncu.locate import NcuBinary, find_ncu
from kprof.ncu.parse import read_ncu_csv

__all__ = ["NcuBinary", "find_ncu", "read_ncu_csv"]
