"""Nsight Compute integration: locate ncu, run it on a method, parse its CSV and reports into
tables. Importing this package imports nothing heavy: the parser (pandas) loads on use."""

from kprof.ncu.locate import NcuBinary, find_ncu

__all__ = ["NcuBinary", "find_ncu"]
