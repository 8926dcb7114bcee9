"""Dense decode attention in Triton: the two-launch split-KV kernel and the one-launch form."""

from kprof.kernels.dense.one_launch import LAUNCH_KERNELS as ONE_LAUNCH_KERNELS
from kprof.kernels.dense.one_launch import LAUNCH_SPACES as ONE_LAUNCH_SPACES
from kprof.kernels.dense.one_launch import OneLaunchDecode
from kprof.kernels.dense.split_kv import LAUNCH_KERNELS, LAUNCH_SPACES, SplitKVDecode

__all__ = ["LAUNCH_KERNELS", "LAUNCH_SPACES", "ONE_LAUNCH_KERNELS", "ONE_LAUNCH_SPACES", "OneLaunchDecode",
           "SplitKVDecode"]
