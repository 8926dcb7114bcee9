"""``santa-fused``: the SANTA++ estimator of ``santa`` in two launches.

``santa`` keeps the paper's five launches (Appendix D); this is kprof's answer to the launch
floor its chain probe measured. Same input, same noise, same selections and the same inclusion
corrections, through the same Triton helpers:

- ``select``, Hkv x cdiv(M_max, BLOCK_M) + Hq x cdiv(M_max, BLOCK_T) programs that take tickets
  in the order they start (``select.SCORE_ONCE=1``, the default). The first score one tile of
  representatives each for a KV head's whole group (``santa``'s launch 1) and count it on their
  block's line; every later ticket is a (query head, block) that waits for its block's tiles,
  adds log n_g and the Gumbel noise of (seed, head, team) and writes the block's KPAD best keys
  (``santa``'s launch 2). The last of a head's programs to finish (an arrival counter, which no
  program waits on) keeps the head's KPAD best keys of all blocks, so the merges of launch 2,
  which run on only Hkv programs, read KPAD candidates per head instead of blocks x KPAD. With
  ``SCORE_ONCE=0``, grid (Hq, blocks), each program scores its own block (reading the group's
  tiles once per query head) and nothing waits.
- ``attend``, Hkv x (NUM_SPLITS + 1) programs that take tickets in the order they start (an
  atomic counter). The first Hkv tickets merge one KV head each (``santa``'s launch 3: global
  top-(K+1), tau, corrections, the GQA union) and publish it on a flag: a program that holds a
  ticket is running, so those merges always finish. Every later ticket is one (KV head, split)
  of ``santa``'s launch 4: it waits for its head's flag, attends its range of the union's rows
  and counts itself done; the last G programs of a KV head each combine one query head once the
  rest are done (launch 5, as ``triton-decode`` combines), and the last of all resets the
  counters for the next call or graph replay.

Waits are bounded (``MAX_POLLS``) and counted as faults, never hangs. Under the interpreter,
which runs programs one after another in grid order, the scorers and the merges come first and
the last attend program of a KV head combines all of its heads.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kprof.core.config_space import Constraint, LaunchConfig, LaunchSpace, Param
from kprof.kernels.common.bound_launch import bound_launch
from kprof.kernels.common.dependent_launch import release_dependents, wait_for_predecessor
from kprof.kernels.common.grid_sync import LINE_WORDS, MAX_POLLS, wait_at_least, wait_faults, waiters_fit
from kprof.kernels.common.split_kv_combine import combine_head
from kprof.kernels.santa.step import (
    _GATHER_AVAILABLE,
    _TOPK_AVAILABLE,
    MERGE_SELECT_HELP,
    RADIX_HELP,
    TOPK_SELECT_HELP,
    SantaDecode,
)
from kprof.kernels.santa.triton_kernels import (
    HAS_TOPK,
    LOG2E,
    _gumbel,
    attend_split,
    merge_union,
    reset_union_tables,
    score_group_tile,
    score_tile,
    store_block_top,
)

# Sync words: tickets taken, programs finished (merges and combiners), waits that gave up; then a
# flag and a done count per KV head
# (each word on its own 128-byte line: programs poll the flags and counts)
TICKETS = tl.constexpr(0)
FINISHED = tl.constexpr(LINE_WORDS)
FAULTS = tl.constexpr(2 * LINE_WORDS)
FLAGS = tl.constexpr(3 * LINE_WORDS)


@triton.jit
def santa_select(
    Q, Rep, Scores, Lengths, NumTeams, SeedPtr, Cand, Arrivals,
    m_max, inv_sqrt_d,
    stride_qh, stride_rh, stride_rm, stride_sh, stride_lh, stride_ch, stride_cb,
    GROUP: tl.constexpr, BLOCK_G: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_M: tl.constexpr,
    HEAD_D: tl.constexpr, KPAD: tl.constexpr, NOISE: tl.constexpr, SELECT: tl.constexpr,
    RADIX_BITS: tl.constexpr, DOT_PRECISION: tl.constexpr, FOLD: tl.constexpr, NCP_FOLD: tl.constexpr,
    FOLD_SELECT: tl.constexpr, PDL: tl.constexpr = False, PHASES: tl.constexpr = 3,
):
    """Launch 1, grid (Hq, cdiv(M_max, BLOCK_T)): scores, routing logits, noise, the block's top
    keys; with FOLD (more than one block) the head's top keys (``_fold_head_top``). PHASES below 3
    stops early, for ``scripts/probe_select_phases.py`` only: 1 after the scores, 2 after the
    block's top keys."""
    wait_for_predecessor(PDL)
    release_dependents(PDL)
    h = tl.program_id(0)
    blk = tl.program_id(1)
    kvh = h // GROUP
    offs_g = tl.arange(0, BLOCK_G)
    offs_d = tl.arange(0, HEAD_D)
    heads = kvh * GROUP + offs_g
    q = tl.load(Q + heads[:, None] * stride_qh + offs_d[None, :], mask=(offs_g < GROUP)[:, None], other=0.0)
    mine = (heads == h)[:, None]
    for m0 in range(0, BLOCK_T, BLOCK_M):
        offs_m = blk * BLOCK_T + m0 + tl.arange(0, BLOCK_M)
        s = score_tile(q, Rep, kvh, offs_m, m_max, stride_rh, stride_rm, HEAD_D, DOT_PRECISION)
        # this head's row of the group's tile (adding zeros keeps it exact)
        tl.store(Scores + h * stride_sh + offs_m, tl.sum(tl.where(mine, s, 0.0), axis=0), mask=offs_m < m_max)
    if PHASES >= 2:
        tl.debug_barrier()  # the block's scores were stored by every thread; each reads them all
        _head_block_top(h, blk, kvh, tl.num_programs(1), Scores, Lengths, NumTeams, SeedPtr, Cand, Arrivals, m_max,
                        inv_sqrt_d, stride_sh, stride_lh, stride_ch, stride_cb, BLOCK_T, KPAD, NOISE, SELECT,
                        RADIX_BITS, FOLD and PHASES >= 3, NCP_FOLD, FOLD_SELECT)


@triton.jit
def _head_block_top(h, blk, kvh, n_blocks, Scores, Lengths, NumTeams, SeedPtr, Cand, Arrivals, m_max, inv_sqrt_d,
                    stride_sh, stride_lh, stride_ch, stride_cb, BLOCK_T: tl.constexpr, KPAD: tl.constexpr,
                    NOISE: tl.constexpr, SELECT: tl.constexpr, RADIX_BITS: tl.constexpr, FOLD: tl.constexpr,
                    NCP_FOLD: tl.constexpr, FOLD_SELECT: tl.constexpr):
    """Query head h's routing logits and noise over block ``blk`` of its scores, the block's KPAD
    best keys, and with FOLD the head's (``_fold_head_top``)."""
    offs = blk * BLOCK_T + tl.arange(0, BLOCK_T)
    valid = offs < tl.load(NumTeams + kvh)
    log_n = tl.log(tl.load(Lengths + kvh * stride_lh + offs, mask=valid, other=1).to(tl.float32))
    y = tl.load(Scores + h * stride_sh + offs, mask=valid, other=0.0) * inv_sqrt_d + log_n
    if NOISE:
        y = y + _gumbel(tl.load(SeedPtr), h, blk * BLOCK_T, BLOCK_T, m_max)
    y = tl.where(valid, y, float("-inf"))
    store_block_top(y, offs, Cand + h * stride_ch + blk * stride_cb, BLOCK_T, KPAD, SELECT, RADIX_BITS)
    if FOLD:
        _fold_head_top(Cand + h * stride_ch, Arrivals + h * LINE_WORDS, n_blocks, stride_cb, KPAD, NCP_FOLD,
                       FOLD_SELECT)


@triton.jit
def santa_select_scored_once(
    Q, Rep, Scores, Lengths, NumTeams, SeedPtr, Cand, Arrivals, SelectSync, Faults,
    m_max, inv_sqrt_d, hq, hkv, n_tiles, n_blocks,
    stride_qh, stride_rh, stride_rm, stride_sh, stride_lh, stride_ch, stride_cb,
    GROUP: tl.constexpr, BLOCK_G: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_M: tl.constexpr,
    HEAD_D: tl.constexpr, KPAD: tl.constexpr, NOISE: tl.constexpr, SELECT: tl.constexpr,
    RADIX_BITS: tl.constexpr, DOT_PRECISION: tl.constexpr, FOLD: tl.constexpr, NCP_FOLD: tl.constexpr,
    FOLD_SELECT: tl.constexpr, MAX_POLLS: tl.constexpr, PDL: tl.constexpr = False, PHASES: tl.constexpr = 3,
):
    """Launch 1 with ``select.SCORE_ONCE=1`` (module docstring): each representative tile is read
    once for the group, as ``santa``'s launch 1 reads it, where ``santa_select`` reads it once per
    query head. Waiters hold later tickets than every scorer they wait for, so those are running.
    PHASES as ``santa_select`` (1: the scores and the waits only)."""
    wait_for_predecessor(PDL)
    release_dependents(PDL)
    ticket = tl.atomic_add(SelectSync + TICKETS, 1, sem="relaxed", scope="gpu")
    ready = SelectSync + FLAGS  # block b of KV head k counts its scored tiles at ready[(k * n_blocks + b) * LINE]
    scorers = hkv * n_tiles
    if ticket < scorers:
        kvh = ticket // n_tiles
        tile = ticket % n_tiles
        score_group_tile(Q, Rep, Scores, kvh, tile, m_max, stride_qh, stride_rh, stride_rm, stride_sh, GROUP,
                         BLOCK_G, BLOCK_M, HEAD_D, DOT_PRECISION)
        tl.debug_barrier()  # every thread's score stores happen before the release
        tl.atomic_add(ready + (kvh * n_blocks + tile * BLOCK_M // BLOCK_T) * LINE_WORDS, 1, sem="release",
                      scope="gpu")
    else:
        t = ticket - scorers
        h = t % hq
        blk = t // hq
        kvh = h // GROUP
        tiles = tl.cdiv(tl.minimum(BLOCK_T, m_max - blk * BLOCK_T), BLOCK_M)
        # the acquire and barrier in wait_at_least make the plain loads of the scores safe
        wait_at_least(ready + (kvh * n_blocks + blk) * LINE_WORDS, tiles, Faults, MAX_POLLS)
        if PHASES >= 2:
            _head_block_top(h, blk, kvh, n_blocks, Scores, Lengths, NumTeams, SeedPtr, Cand, Arrivals, m_max,
                            inv_sqrt_d, stride_sh, stride_lh, stride_ch, stride_cb, BLOCK_T, KPAD, NOISE, SELECT,
                            RADIX_BITS, FOLD and PHASES >= 3, NCP_FOLD, FOLD_SELECT)
    # every program counts itself finished; the last has seen every ticket taken and every wait
    # over (a scorer's count comes before its own finish), so it zeroes the lines for the next call
    tl.debug_barrier()
    finished = tl.atomic_add(SelectSync + FINISHED, 1, sem="acq_rel", scope="gpu")
    if finished == scorers + hq * n_blocks - 1:
        for b in range(0, hkv * n_blocks):
            tl.store(ready + b * LINE_WORDS, 0)
        tl.store(SelectSync + FINISHED, 0)
        tl.store(SelectSync + TICKETS, 0)


@triton.jit
def _fold_head_top(Cand, Arrived, n_blocks, stride_cb, KPAD: tl.constexpr, NCP: tl.constexpr,
                   SELECT: tl.constexpr):
    """Count this program's block in; the head's last program to arrive writes the head's KPAD
    best keys over all blocks to block 0's slots (the same set as the merge's global top of all
    blocks: each block kept its KPAD best) and zeroes the count for the next call. Blocks 1 and
    up keep their own keys, which nothing reads after the fold. SELECT: 0 sort, 1 tl.topk of the
    keys, 3 tl.topk of their 32-bit high words, then a threshold (the keys' order by a tie)."""
    tl.debug_barrier()  # every thread's candidate stores happen before the release
    arrived = tl.atomic_add(Arrived, 1, sem="acq_rel", scope="gpu")
    if arrived == n_blocks - 1:
        offs = tl.arange(0, NCP)
        valid = offs < n_blocks * KPAD
        # .cg: the other blocks' keys come from L2, never from a line this SM's L1 kept
        keys = tl.load(Cand + (offs // KPAD) * stride_cb + offs % KPAD, mask=valid, other=0, cache_modifier=".cg")
        # padding keys sit below every real key and stay unique (as the merge pads)
        keys = tl.where(valid, keys, tl.full([NCP], -9223372036854775807, tl.int64) + offs)
        # each selection under its own compile-time branch: Triton 3.9 compiles a runtime branch on
        # a plain bool for every SELECT, and the word path's names exist only under SELECT == 3
        if SELECT == 3:
            word = (keys >> 32).to(tl.int32)
            keep = word >= tl.min(tl.topk(word, KPAD), axis=0)
            if tl.sum(keep.to(tl.int32), axis=0) == KPAD:  # no tie at the KPAD-th word: in block order
                slot = tl.cumsum(keep.to(tl.int32), axis=0) - 1
                tl.debug_barrier()  # every thread has read the blocks before block 0's slots are overwritten
                tl.store(Cand + slot, keys, mask=keep)
            else:
                top = tl.topk(keys, KPAD)
                tl.debug_barrier()
                tl.store(Cand + tl.arange(0, KPAD), top)
        else:
            if SELECT == 0:
                keys = tl.reshape(tl.sort(keys, descending=True), (NCP // KPAD, KPAD))
                top = tl.sum(tl.where(tl.arange(0, NCP // KPAD)[:, None] == 0, keys, 0), axis=0)
            else:
                top = tl.topk(keys, KPAD)
            tl.debug_barrier()
            tl.store(Cand + tl.arange(0, KPAD), top)
        tl.store(Arrived, 0)


@triton.jit
def santa_merge_attend_reduce(
    Q, Cand, Scores, Lengths, Starts, SelTeam, SelLogC, SelKey,
    UTeam, UStart, URowPre, UCount, UMask, ULogC, Owner, Pos, SeedPtr,
    PK, PV, SK, SV, M_part, L_part, Acc_part, Out, Sync,
    inv_sqrt_d, k_sel, m_max, n_prompt, n_suffix, qk_scale_log2, hkv,
    stride_qh, stride_ch, stride_sh, stride_lh, stride_selh, stride_uh, stride_um,
    stride_kh, stride_kn, stride_sk_h, stride_sk_n, stride_mh, stride_ah, stride_as, stride_oh,
    GROUP: tl.constexpr, BLOCK_G: tl.constexpr, MERGE_G: tl.constexpr, NCP: tl.constexpr, NCAND: tl.constexpr,
    KPAD: tl.constexpr, UMAX: tl.constexpr, FRESH: tl.constexpr, MERGE_SELECT: tl.constexpr, RADIX_BITS: tl.constexpr,
    GATHER: tl.constexpr, BLOCK_R: tl.constexpr, HEAD_D: tl.constexpr, NUM_SPLITS: tl.constexpr,
    ALL_TEAMS: tl.constexpr, DOT_PRECISION: tl.constexpr, PV_FP32: tl.constexpr, SEARCH: tl.constexpr,
    LOG2_UMAX: tl.constexpr, SUFFIX: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_HKV: tl.constexpr,
    PARALLEL_COMBINE: tl.constexpr, MAX_POLLS: tl.constexpr, PDL: tl.constexpr = False,
):
    """Launch 2, Hkv x (NUM_SPLITS + 1) programs: merge, attend and reduce (module docstring)."""
    wait_for_predecessor(PDL)  # everything below reads launch 1's candidates
    release_dependents(PDL)
    ticket = tl.atomic_add(Sync + TICKETS, 1, sem="relaxed", scope="gpu")
    flags = Sync + FLAGS  # KV head h's flag at flags[h * LINE_WORDS], its done count after the flags
    done_counts = flags + hkv * LINE_WORDS
    faults = Sync + FAULTS
    finished = -1  # programs finished when this one was (merges and combiners count)
    if ticket < hkv:
        kvh = ticket
        reset_union_tables(UMask, ULogC, kvh, stride_uh, stride_um, MERGE_G, UMAX)
        merge_union(kvh, Cand, Scores, Lengths, Starts, SelTeam, SelLogC, SelKey,
                    UTeam, UStart, URowPre, UCount, UMask, ULogC, Owner, Pos, SeedPtr,
                    inv_sqrt_d, k_sel, m_max, stride_ch, stride_sh, stride_lh, stride_selh, stride_uh, stride_um,
                    GROUP, MERGE_G, NCP, NCAND, KPAD, UMAX, FRESH, MERGE_SELECT, RADIX_BITS, GATHER)
        tl.debug_barrier()  # every thread's union stores happen before the release
        tl.atomic_xchg(flags + kvh * LINE_WORDS, 1, sem="release", scope="gpu")
        # a merge counts toward the end of the call: a reader that gave up on its flag must not let
        # the reset run before this merge's flag store, or the flag would stay set for the next call
        finished = tl.atomic_add(Sync + FINISHED, 1, sem="acq_rel", scope="gpu") + 1
    else:
        t = ticket - hkv
        kvh = t % hkv
        split = t // hkv
        offs_g = tl.arange(0, BLOCK_G)
        heads = kvh * GROUP + offs_g
        q = tl.load(Q + heads[:, None] * stride_qh + tl.arange(0, HEAD_D)[None, :],
                    mask=(offs_g < GROUP)[:, None], other=0.0)
        # with K = M attend reads no union table, but waits all the same (one path to check). The
        # acquire and barrier in wait_at_least make attend's plain loads of the union safe.
        merged = wait_at_least(flags + kvh * LINE_WORDS, 1, faults, MAX_POLLS)
        attend_split(q, kvh, split, PK, PV, SK, SV, UStart, URowPre, ULogC, M_part, L_part, Acc_part,
                     n_prompt, n_suffix, qk_scale_log2, stride_kh, stride_kn, stride_sk_h, stride_sk_n,
                     stride_uh, stride_um, stride_mh, stride_ah, stride_as,
                     GROUP, BLOCK_G, BLOCK_R, HEAD_D, UMAX, NUM_SPLITS, ALL_TEAMS, DOT_PRECISION, PV_FP32,
                     SEARCH, LOG2_UMAX, SUFFIX)
        if not merged:  # it read a union that was not there: make its heads' outputs NaN, not plausible
            tl.store(M_part + heads * stride_mh + split, float("nan"), mask=offs_g < GROUP)
        tl.debug_barrier()  # every thread's partials are stored before the release
        done = tl.atomic_add(done_counts + kvh * LINE_WORDS, 1, sem="acq_rel", scope="gpu")
        tl.debug_barrier()
        if PARALLEL_COMBINE:
            # the last GROUP programs of the KV head each combine one head, once all are done
            j = NUM_SPLITS - 1 - done
            if (j >= 0) & (j < GROUP):
                wait_at_least(done_counts + kvh * LINE_WORDS, NUM_SPLITS, faults, MAX_POLLS)
                combine_head(M_part, L_part, Acc_part, Out, kvh * GROUP + j, NUM_SPLITS,
                             stride_mh, stride_ah, stride_as, stride_oh, BLOCK_S, HEAD_D, 32)
                tl.debug_barrier()
                finished = tl.atomic_add(Sync + FINISHED, 1, sem="acq_rel", scope="gpu") + 1
        else:
            if done == NUM_SPLITS - 1:
                for g in range(GROUP):
                    combine_head(M_part, L_part, Acc_part, Out, kvh * GROUP + g, NUM_SPLITS,
                                 stride_mh, stride_ah, stride_as, stride_oh, BLOCK_S, HEAD_D, 32)
                tl.debug_barrier()
                finished = tl.atomic_add(Sync + FINISHED, GROUP, sem="acq_rel", scope="gpu") + GROUP
    # the last of Hkv merges and Hq combines: every program of the call has taken its ticket and
    # is past its waits, so the sync words can be zeroed for the next call or graph replay
    if finished == hkv * (GROUP + 1):
        offs_hkv = tl.arange(0, BLOCK_HKV) * LINE_WORDS
        tl.store(flags + offs_hkv, 0, mask=offs_hkv < hkv * LINE_WORDS)
        tl.store(done_counts + offs_hkv, 0, mask=offs_hkv < hkv * LINE_WORDS)
        tl.store(Sync + FINISHED, 0)
        tl.store(Sync + TICKETS, 0)


def sync_words(hkv: int) -> int:
    """Int32 words of the ``Sync`` buffer for ``hkv`` KV heads."""
    return FLAGS.value + 2 * hkv * LINE_WORDS.value


_BEST_SELECT = 1 if HAS_TOPK else 0
_BEST_BLOCK_SELECT = 3 if HAS_TOPK else 0
FUSED_LAUNCH_SPACES = {
    "select": LaunchSpace("select", (
        Param("BLOCK_T", (32, 64, 128, 256, 512, 1024, 2048), 512, "teams per program (>= K+1)"),
        Param("BLOCK_M", (16, 32, 64, 128), 64, "representatives scored per tile product"),
        Param("SELECT", (0, 1, 2, 3), _BEST_BLOCK_SELECT, TOPK_SELECT_HELP),
        Param("RADIX_BITS", (1, 2, 4), 2, RADIX_HELP),
        Param("num_warps", (1, 2, 4, 8, 16), 8),
        Param("FOLD_SELECT", (0, 1, 3), _BEST_BLOCK_SELECT, "the fold of a head's blocks: 0 full sort, 1 tl.topk, "
              "3 tl.topk on the 32-bit score words, then a threshold (1 and 3: Triton 3.6+)"),
        Param("SCORE_ONCE", (0, 1), 1, "0: each (query head, block) program scores its block itself (the "
              "group's tiles read once per query head); 1: one program per KV head and tile scores it for the "
              "group, and the (query head, block) programs wait for their block's tiles"),
    ), (_TOPK_AVAILABLE, Constraint("select.BLOCK_M must not exceed select.BLOCK_T",
                                    lambda c, s: c["BLOCK_M"] <= c["BLOCK_T"]),
         Constraint("select.FOLD_SELECT=1 and 3 need tl.topk, which this Triton lacks",
                    lambda c, s: c["FOLD_SELECT"] not in (1, 3) or HAS_TOPK))),
    "attend": LaunchSpace("attend", (
        Param("MERGE_SELECT", (0, 1, 2, 3), _BEST_SELECT, MERGE_SELECT_HELP),
        Param("RADIX_BITS", (1, 2, 4), 2, RADIX_HELP),
        Param("GATHER", (0, 1), 0, "union position of a repeated team: 0 from a table, 1 by tl.gather"),
        Param("BLOCK_R", (16, 32, 64), 64, "virtual rows per tile"),
        Param("NUM_SPLITS", (8, 16, 32, 64, 128), 64, "row ranges per KV head"),
        Param("SEARCH", (0, 1, 2), 2, "union entry of each row (as santa's attend.SEARCH)"),
        Param("num_warps", (2, 4, 8), 4),
        Param("num_stages", (1, 2, 3), 1),
    ), (Constraint("attend.MERGE_SELECT=1 and 3 need tl.topk, which this Triton lacks",
                   lambda c, s: c["MERGE_SELECT"] not in (1, 3) or HAS_TOPK), _GATHER_AVAILABLE)),
}

FUSED_LAUNCH_KERNELS = {"select": (santa_select, santa_select_scored_once), "attend": (santa_merge_attend_reduce,)}
FUSED_KERNEL_NAMES = ("santa_select", "santa_merge_attend_reduce")  # substrings: santa_select_scored_once too


class SantaFusedDecode(SantaDecode):
    """SANTA++ in two launches over the same buffers as :class:`SantaDecode` (whose validation
    access it keeps), plus the sync words of launch 1 (``select_sync``, ``arrivals``) and launch 2
    (``sync``)."""

    block_t_name = "select.BLOCK_T"
    launch_names = ("select", "attend")
    kernel_names = FUSED_KERNEL_NAMES

    def __init__(self, q, arts, k_teams: int, config: dict[str, LaunchConfig], **kwargs):
        self.fused_cfg = {name: dict(c) for name, c in config.items()}
        sel, att = self.fused_cfg["select"], self.fused_cfg["attend"]
        # the buffers SantaDecode sizes from its topk.BLOCK_T and attend.NUM_SPLITS
        sizing = {"topk": {"BLOCK_T": sel["BLOCK_T"]}, "attend": {"NUM_SPLITS": att["NUM_SPLITS"]}}
        hkv = arts.packed_k.shape[0]
        self.sync = torch.zeros(sync_words(hkv), dtype=torch.int32, device=q.device)
        self.arrivals = torch.zeros(q.shape[0] * LINE_WORDS.value, dtype=torch.int32, device=q.device)
        # select.SCORE_ONCE: tickets, finished count, an unused line, then one per (KV head, block)
        blocks = triton.cdiv(arts.rep_keys.shape[1], sel["BLOCK_T"])
        self.select_sync = torch.zeros(FLAGS.value + hkv * blocks * LINE_WORDS.value, dtype=torch.int32,
                                       device=q.device)
        super().__init__(q, arts, k_teams, sizing, **kwargs)

    def bind(self) -> None:
        """Fix both launches' grids and arguments (``select.BLOCK_T`` and ``attend.NUM_SPLITS`` size
        buffers: changing them needs a new operator)."""
        sel, att, a, dep = self.fused_cfg["select"], self.fused_cfg["attend"], self.arts, self._dependent
        if (sel["BLOCK_T"], att["NUM_SPLITS"]) != self._sized_by[:2]:  # SantaDecode's BLOCK_T and NUM_SPLITS
            raise ValueError("select.BLOCK_T and attend.NUM_SPLITS size this step's buffers: build a new "
                             "SantaFusedDecode to change them")
        common = dict(GROUP=self.group, BLOCK_G=self.block_g, BLOCK_T=sel["BLOCK_T"], BLOCK_M=sel["BLOCK_M"],
                      HEAD_D=self.d, KPAD=self.kpad, NOISE=not self.all_teams, SELECT=sel["SELECT"],
                      RADIX_BITS=sel["RADIX_BITS"], DOT_PRECISION=self.precision,
                      FOLD=self.n_blocks > 1 and not self.all_teams, NCP_FOLD=self.ncp, FOLD_SELECT=sel["FOLD_SELECT"],
                      PDL=self.pdl, num_warps=sel["num_warps"])
        strides = (self.q.stride(0), a.rep_keys.stride(0), a.rep_keys.stride(1), self.scores.stride(0),
                   a.team_len.stride(0), self.cand.stride(0), self.cand.stride(1))
        buffers = (self.q, a.rep_keys, self.scores, a.team_len, a.num_teams, self.seed, self.cand, self.arrivals)
        if sel["SCORE_ONCE"]:
            n_tiles = triton.cdiv(self.m_max, sel["BLOCK_M"])
            assert self.select_sync.numel() >= FLAGS.value + self.hkv * self.n_blocks * LINE_WORDS.value
            self.launch_select = bound_launch(
                santa_select_scored_once, (self.hkv * n_tiles + self.hq * self.n_blocks,),
                *buffers, self.select_sync, self.sync[FAULTS.value:],
                self.m_max, self.inv_sqrt_d, self.hq, self.hkv, n_tiles, self.n_blocks, *strides,
                MAX_POLLS=MAX_POLLS, **common)
        else:
            self.launch_select = bound_launch(santa_select, (self.hq, self.n_blocks), *buffers,
                                              self.m_max, self.inv_sqrt_d, *strides, **common)
        splits = att["NUM_SPLITS"]
        self.launch_attend = bound_launch(
            santa_merge_attend_reduce, (self.hkv * (splits + 1),),
            self.q, self.cand, self.scores, a.team_len, a.team_start, self.sel_team, self.sel_logc, self.sel_key,
            self.u_team, self.u_start, self.u_rowpre, self.u_count, self.u_mask, self.u_logc, self.owner, self.pos,
            self.seed, a.packed_k, a.packed_v, self.suffix_k, self.suffix_v, self.m_part, self.l_part, self.acc,
            self.out, self.sync,
            self.inv_sqrt_d, self.k, self.m_max, self.n, self.n_suffix, self.inv_sqrt_d * LOG2E, self.hkv,
            self.q.stride(0), self.cand.stride(0), self.scores.stride(0), a.team_len.stride(0),
            self.sel_team.stride(0), self.u_mask.stride(0), self.u_mask.stride(1),
            a.packed_k.stride(0), a.packed_k.stride(1), self.suffix_k.stride(0), self.suffix_k.stride(1),
            self.m_part.stride(0), self.acc.stride(0), self.acc.stride(1), self.out.stride(0),
            # the merges read the head's folded top keys: KPAD candidates, whatever the block count
            GROUP=self.group, BLOCK_G=self.block_g, MERGE_G=self.merge_g, NCP=self.kpad, NCAND=self.kpad,
            KPAD=self.kpad, UMAX=self.umax, FRESH=self.fresh, MERGE_SELECT=att["MERGE_SELECT"],
            RADIX_BITS=att["RADIX_BITS"], GATHER=bool(att["GATHER"]), BLOCK_R=att["BLOCK_R"], HEAD_D=self.d,
            NUM_SPLITS=splits, ALL_TEAMS=self.all_teams, DOT_PRECISION=self.precision, PV_FP32=self.pv_fp32,
            SEARCH=att["SEARCH"], LOG2_UMAX=self.umax.bit_length() - 1, SUFFIX=self.n_suffix > 0,
            BLOCK_S=max(2, triton.next_power_of_2(splits)), BLOCK_HKV=max(2, triton.next_power_of_2(self.hkv)),
            PARALLEL_COMBINE=splits >= self.group and waiters_fit(self.hq, self.q.device), MAX_POLLS=MAX_POLLS,
            PDL=self.pdl, num_warps=att["num_warps"], num_stages=att["num_stages"], **dep,
        )
        self._launches = (self.launch_select, self.launch_attend)

    def faults(self) -> list[str]:
        """Waits that gave up so far, one line (a host sync: not timed)."""
        return wait_faults(int(self.sync[FAULTS.value]), "santa-fused program(s)")
