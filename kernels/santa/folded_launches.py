"""``santa``'s merge and reduce folded into the launch before each: three launches instead of five.

The chain probe found that each of santa's launches keeps about 2 us that programmatic dependent
launch does not hide (the wait for the whole previous grid and its memory flush). The merge and
the reduce are small: run by the last programs of the launch before them, they start when their
own inputs are ready instead of after a grid boundary.

- ``topk.MERGE=1`` (``santa_topk_merge``): each (query head, block) program writes its block's best
  keys as launch 2 does, then counts itself in on its KV head's line; the last of the KV head's G x
  blocks programs to arrive runs launch 3's merge for that head (global top-(K+1), tau,
  corrections, GQA union). Nobody waits: a count is read only by the program that made it last.
- ``attend.COMBINE=1`` (``santa_attend_combine``): each (KV head, split) program attends as launch
  4 does and counts itself done; the last G programs of a KV head each wait for the rest, then
  combine one query head (launch 5); where waiting is not safe (the interpreter, or more waiters
  than SMs) the last program combines all G heads.

Every count goes back to zero in the launch that raised it, so the next call or graph replay
starts clean. With ``fresh=1`` the noise seed advances in the last topk program of all (every
program has drawn its noise by then), not in KV head 0's merge, which may run before other heads
draw theirs.
"""

from __future__ import annotations

import triton
import triton.language as tl

from kprof.kernels.common.dependent_launch import release_dependents, wait_for_predecessor
from kprof.kernels.common.grid_sync import LINE_WORDS, wait_at_least
from kprof.kernels.common.split_kv_combine import combine_head
from kprof.kernels.santa.triton_kernels import attend_split, merge_union, reset_union_tables, santa_block_topk

# Sync words (int32, each on its own 128-byte line): topk programs arrived in all, attend
# combiners finished, waits that gave up; then per KV head its topk arrivals and attend done count
TOPK_TOTAL = tl.constexpr(0)
COMBINED = tl.constexpr(LINE_WORDS)
FAULTS = tl.constexpr(2 * LINE_WORDS)
PER_HEAD = tl.constexpr(3 * LINE_WORDS)


def sync_words(hkv: int) -> int:
    """Int32 words of the ``Sync`` buffer for ``hkv`` KV heads."""
    return PER_HEAD.value + 2 * hkv * LINE_WORDS.value


@triton.jit
def santa_topk_merge(
    Scores, Lengths, NumTeams, SeedPtr, Cand, Sync,
    Starts, SelTeam, SelLogC, SelKey, UTeam, UStart, URowPre, UCount, UMask, ULogC, Owner, Pos,
    m_max, inv_sqrt_d, k_sel,
    stride_sh, stride_lh, stride_ch, stride_cb, stride_selh, stride_uh, stride_um,
    GROUP: tl.constexpr, BLOCK_T: tl.constexpr, KPAD: tl.constexpr, NOISE: tl.constexpr, SELECT: tl.constexpr,
    RADIX_BITS: tl.constexpr, MERGE_G: tl.constexpr, NCP: tl.constexpr, NCAND: tl.constexpr, UMAX: tl.constexpr,
    FRESH: tl.constexpr, MERGE_SELECT: tl.constexpr, MERGE_RADIX_BITS: tl.constexpr, GATHER: tl.constexpr,
    PDL: tl.constexpr = False,
):
    """Launches 2 and 3, grid (Hq, cdiv(M_max, BLOCK_T)): the block's best keys, then the KV head's
    merge in its last arriving program (module docstring)."""
    h = tl.program_id(0)
    kvh = h // GROUP
    santa_block_topk(Scores, Lengths, NumTeams, SeedPtr, Cand, m_max, inv_sqrt_d,
                     stride_sh, stride_lh, stride_ch, stride_cb,
                     GROUP, BLOCK_T, KPAD, NOISE, SELECT, RADIX_BITS, PDL)
    tl.debug_barrier()  # every thread's candidate stores happen before the release
    arrivals = Sync + PER_HEAD + kvh * LINE_WORDS
    arrived = tl.atomic_add(arrivals, 1, sem="acq_rel", scope="gpu")
    if arrived == GROUP * tl.num_programs(1) - 1:
        tl.store(arrivals, 0)
        reset_union_tables(UMask, ULogC, kvh, stride_uh, stride_um, MERGE_G, UMAX)
        tl.debug_barrier()  # the reset lands before the union's stores to the same tables
        merge_union(kvh, Cand, Scores, Lengths, Starts, SelTeam, SelLogC, SelKey,
                    UTeam, UStart, URowPre, UCount, UMask, ULogC, Owner, Pos, SeedPtr,
                    inv_sqrt_d, k_sel, m_max, stride_ch, stride_sh, stride_lh, stride_selh, stride_uh, stride_um,
                    GROUP, MERGE_G, NCP, NCAND, KPAD, UMAX, False, MERGE_SELECT, MERGE_RADIX_BITS, GATHER)
    if FRESH:
        total = tl.atomic_add(Sync + TOPK_TOTAL, 1, sem="acq_rel", scope="gpu")
        if total == tl.num_programs(0) * tl.num_programs(1) - 1:
            tl.store(SeedPtr, tl.load(SeedPtr) + 1)
            tl.store(Sync + TOPK_TOTAL, 0)


@triton.jit
def santa_attend_combine(
    Q, PK, PV, SK, SV, UStart, URowPre, ULogC, M_out, L_out, Acc_out, Out, Sync,
    n_prompt, n_suffix, qk_scale_log2, hkv,
    stride_qh, stride_kh, stride_kn, stride_sk_h, stride_sk_n, stride_uh, stride_um,
    stride_mh, stride_ah, stride_as, stride_oh,
    GROUP: tl.constexpr, BLOCK_G: tl.constexpr, BLOCK_R: tl.constexpr, HEAD_D: tl.constexpr,
    UMAX: tl.constexpr, NUM_SPLITS: tl.constexpr, ALL_TEAMS: tl.constexpr, DOT_PRECISION: tl.constexpr,
    PV_FP32: tl.constexpr, SEARCH: tl.constexpr, LOG2_UMAX: tl.constexpr, SUFFIX: tl.constexpr,
    BLOCK_S: tl.constexpr, BLOCK_HKV: tl.constexpr, PARALLEL_COMBINE: tl.constexpr, MAX_POLLS: tl.constexpr,
    PDL: tl.constexpr = False,
):
    """Launches 4 and 5, grid (Hkv, NUM_SPLITS): a split's attention, then the combine in the KV
    head's last programs (module docstring)."""
    kvh = tl.program_id(0)
    split = tl.program_id(1)
    offs_g = tl.arange(0, BLOCK_G)
    heads = kvh * GROUP + offs_g
    q = tl.load(Q + heads[:, None] * stride_qh + tl.arange(0, HEAD_D)[None, :], mask=(offs_g < GROUP)[:, None],
                other=0.0)
    wait_for_predecessor(PDL)  # everything below reads the union
    release_dependents(PDL)
    attend_split(q, kvh, split, PK, PV, SK, SV, UStart, URowPre, ULogC, M_out, L_out, Acc_out,
                 n_prompt, n_suffix, qk_scale_log2, stride_kh, stride_kn, stride_sk_h, stride_sk_n,
                 stride_uh, stride_um, stride_mh, stride_ah, stride_as,
                 GROUP, BLOCK_G, BLOCK_R, HEAD_D, UMAX, NUM_SPLITS, ALL_TEAMS, DOT_PRECISION, PV_FP32,
                 SEARCH, LOG2_UMAX, SUFFIX)
    tl.debug_barrier()  # every thread's partials are stored before the release
    done_line = Sync + PER_HEAD + (hkv + kvh) * LINE_WORDS
    done = tl.atomic_add(done_line, 1, sem="acq_rel", scope="gpu")
    finished = -1
    if PARALLEL_COMBINE:
        j = NUM_SPLITS - 1 - done
        if (j >= 0) & (j < GROUP):
            wait_at_least(done_line, NUM_SPLITS, Sync + FAULTS, MAX_POLLS)
            combine_head(M_out, L_out, Acc_out, Out, kvh * GROUP + j, NUM_SPLITS,
                         stride_mh, stride_ah, stride_as, stride_oh, BLOCK_S, HEAD_D)
            tl.debug_barrier()
            finished = tl.atomic_add(Sync + COMBINED, 1, sem="acq_rel", scope="gpu") + 1
    else:
        if done == NUM_SPLITS - 1:
            for g in range(GROUP):
                combine_head(M_out, L_out, Acc_out, Out, kvh * GROUP + g, NUM_SPLITS,
                             stride_mh, stride_ah, stride_as, stride_oh, BLOCK_S, HEAD_D)
            tl.debug_barrier()
            finished = tl.atomic_add(Sync + COMBINED, GROUP, sem="acq_rel", scope="gpu") + GROUP
    # the last combiner of all: every program has counted itself done and every wait is over
    if finished == hkv * GROUP:
        offs_hkv = tl.arange(0, BLOCK_HKV) * LINE_WORDS
        tl.store(Sync + PER_HEAD + (hkv * LINE_WORDS) + offs_hkv, 0, mask=offs_hkv < hkv * LINE_WORDS)
        tl.store(Sync + COMBINED, 0)
