"""Dense decode attention in Triton: a split-KV kernel and its combine step."""

from kprof.kernels.dense.split_kv import LAUNCH_SPACES, SplitKVDecode

__all__ = ["LAUNCH_SPACES", "SplitKVDecode"]
