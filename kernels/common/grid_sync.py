"""Programs of one launch that wait for others of the same launch: bounded polls, counted faults,
and when waiting is safe.

A program may wait only for programs that are already running or that can still be scheduled:
the waiters must leave room on the SMs for those they wait on (``waiters_fit``). A wait gives up
after ``MAX_POLLS`` reads and counts a fault, so a GPU shared with another kernel gives a wrong
output that the run reports, never a hang. The Triton interpreter runs programs one after
another, so there nothing may wait for a later program.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kprof.kernels import INTERPRETED

INTERPRETER_SMS = 4  # the interpreter has no SMs; grids sized per SM count it as this many
MAX_POLLS = 1 << 24  # reads of a flag or counter before a waiting program gives up (a second or more)
LINE_WORDS = tl.constexpr(32)  # int32 words per 128-byte line: a flag or counter that programs poll sits alone on one


def sm_count(device: torch.device) -> int:
    if device.type != "cuda":
        return INTERPRETER_SMS
    return torch.cuda.get_device_properties(device).multi_processor_count


def waiters_fit(waiters: int, device: torch.device) -> bool:
    """Whether ``waiters`` programs may wait for the rest of their launch: fewer than one per SM
    leaves every SM room for the programs they wait on; never under the interpreter."""
    return not INTERPRETED and waiters < sm_count(device)


def wait_faults(n: int, who: str) -> list[str]:
    """The one-line report of ``n`` waits that gave up (empty when none did)."""
    if not n:
        return []
    return [f"{n} {who} stopped waiting for others of their launch after {MAX_POLLS:,} polls: another kernel "
            "held the SMs they needed, so those outputs are wrong; run with nothing else on the GPU"]


@triton.jit
def wait_at_least(ptr, target, Faults, MAX_POLLS: tl.constexpr):
    """Poll ``*ptr`` (gpu-scope acquire) until it reaches ``target`` and return True; after
    MAX_POLLS reads give up, add one to ``*Faults`` and return False. Every thread of the program
    sees what was released before the value it waited for: the acquire, then the barrier, is what
    makes the caller's plain (L1-cached) loads of that data safe."""
    seen = tl.atomic_add(ptr, 0, sem="acquire", scope="gpu")
    polls = 0
    while (seen < target) & (polls < MAX_POLLS):
        seen = tl.atomic_add(ptr, 0, sem="acquire", scope="gpu")
        polls += 1
    tl.debug_barrier()
    if seen < target:
        tl.atomic_add(Faults, 1)
    return seen >= target
