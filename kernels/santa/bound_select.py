"""SANTA++'s top-k by a bound (``topk.BOUND``): a filter in place of the block top-k.

Cut a head's teams into parts of SUB consecutive teams. The (K+1)-th largest of the parts' maxima
is a lower bound on the head's (K+1)-th largest perturbed logit: those K+1 maxima are K+1 distinct
teams at or above it. So the score launch, which already sees every team, also adds log n and the
Gumbel noise and stores each part's maximum (``santa_score_bound``); launch 2 finds the bound and
appends the teams at or above it, a few more than K+1, to the head's candidate row by atomic
counts, with no sort and no block-wide scan (``santa_filter_bound``); the merge runs the usual
selection, corrections and union on those (``santa_merge_bound``). The selection is the block
top-k's set: every key of the K+1 best is at or above the bound. The host picks SUB so that a
head has at least 2(K+1) parts (:func:`part_size`): with fewer than K+1 the bound says nothing.

When more than ``CAP`` teams of a head clear the bound (ties, or a head whose best teams crowd a
few parts), the merge bisects the int64 keys between the bound and the head's maximum until at
most CAP remain at or above, then compacts again: slower, never wrong (keys are unique, so the
count can always be brought to K+1).
"""

from __future__ import annotations

import triton
import triton.language as tl

from kprof.kernels.common.dependent_launch import release_dependents, wait_for_predecessor
from kprof.kernels.common.matmul import dot
from kprof.kernels.santa.triton_kernels import (
    _key_index,
    _to_key,
    correct_and_list,
    correct_and_union,
    reset_union_tables,
    select_keys,
    team_values,
)

_NO_KEY = tl.constexpr(-9223372036854775807)  # below every real key


def part_size(block_m: int, min_teams: int, kpad: int) -> int:
    """Teams per part: the largest power of two up to ``block_m`` that leaves the KV head with the
    fewest teams at least 2 x KPAD parts (1 when even single teams are too few)."""
    sub = block_m
    while sub > 1 and min_teams // sub < 2 * kpad:
        sub //= 2
    return sub


@triton.jit
def gumbel_rows(seed, rows, t0, BLOCK_G: tl.constexpr, N: tl.constexpr, m_max, PHILOX: tl.constexpr = 4):
    """``triton_kernels._gumbel`` for several query heads ``rows`` at once: [BLOCK_G, N], the
    same draw for the same (seed, head, team). PHILOX teams per Philox call: 4 draws four teams'
    uniforms at once and interleaves them (joins and a reshape, which move data through shared
    memory); 1 draws for every team and keeps its own output of the four (four times the Philox
    arithmetic, no data movement)."""
    if PHILOX == 4:
        counters = rows[:, None] * ((m_max + 3) // 4) + t0 // 4 + tl.arange(0, N // 4)[None, :]
        r0, r1, r2, r3 = tl.rand4x(seed, counters)
        u = tl.reshape(tl.join(tl.join(r0, r1), tl.join(r2, r3)), (BLOCK_G, N))
    else:
        offs = tl.arange(0, N)[None, :]
        counters = rows[:, None] * ((m_max + 3) // 4) + (t0 + offs) // 4
        r0, r1, r2, r3 = tl.rand4x(seed, counters)
        lane = offs % 4  # the interleaving of the joins above: (r0, r2, r1, r3)[t % 4]
        u = tl.where(lane == 0, r0, tl.where(lane == 1, r2, tl.where(lane == 2, r1, r3)))
    u = tl.minimum(tl.maximum(u, 1e-7), 1.0 - 6e-8)
    return -tl.log(-tl.log(u))


@triton.jit
def draw_noise_ahead(seed, Noise, NoiseSeeds, kvh, tile, m_max, stride_nh,
                     GROUP: tl.constexpr, BLOCK_G: tl.constexpr, N: tl.constexpr, PHILOX: tl.constexpr):
    """``score.AHEAD``'s table: the Gumbel noise of seed ``seed`` for KV head ``kvh``'s heads and
    teams [tile * N, tile * N + N), the draws ``gumbel_rows`` gives the score launch bit for bit
    (a team's draw depends on its head and index only); program (0, 0) of the draw records the
    seed the table holds, which the score launch compares with the seed it runs."""
    offs_g = tl.arange(0, BLOCK_G)
    heads = kvh * GROUP + offs_g
    offs = tile * N + tl.arange(0, N)
    noise = gumbel_rows(seed, heads, tile * N, BLOCK_G, N, m_max, PHILOX)
    tl.store(Noise + heads[:, None] * stride_nh + offs[None, :], noise,
             mask=(offs_g < GROUP)[:, None] & (offs < m_max)[None, :])
    if (kvh == 0) & (tile == 0):
        tl.store(NoiseSeeds, seed)


@triton.jit
def santa_noise_table(SeedPtr, Noise, NoiseSeeds, m_max, stride_nh,
                      GROUP: tl.constexpr, BLOCK_G: tl.constexpr, N: tl.constexpr, PHILOX: tl.constexpr):
    """Grid (Hkv, cdiv(M_max, N)): the table for the current seed, when the operator is built."""
    draw_noise_ahead(tl.load(SeedPtr), Noise, NoiseSeeds, tl.program_id(0), tl.program_id(1), m_max, stride_nh,
                     GROUP, BLOCK_G, N, PHILOX)


@triton.jit
def santa_score_bound(
    Q, Rep, Scores, Y, TileMax, Lengths, NumTeams, SeedPtr, Count, Noise, NoiseSeeds,
    m_max, inv_sqrt_d,
    stride_qh, stride_rh, stride_rm, stride_sh, stride_lh, stride_th, stride_nh,
    GROUP: tl.constexpr, BLOCK_G: tl.constexpr, BLOCK_M: tl.constexpr, HEAD_D: tl.constexpr,
    DOT_PRECISION: tl.constexpr, NOISE: tl.constexpr, SUB: tl.constexpr, PHILOX: tl.constexpr = 4,
    AHEAD: tl.constexpr = False, PDL: tl.constexpr = False,
):
    """Launch 1, grid (Hkv, cdiv(M_max, BLOCK_M)): q . l_g for every head of the group (as
    ``santa_score``), the perturbed logit Y = q . l_g / sqrt(d) + log n + Gumbel of every team, and
    each head's maximum Y over every SUB teams of this tile (-inf past the KV head's teams). It also
    zeroes the filter's counts: launches run alone (stage timings) then start from zero too.

    With AHEAD the noise comes from a table drawn ahead (``draw_noise_ahead``) when the table holds
    this seed, else it is drawn here as without; the launch records seed + 1, the seed the merge's
    extra programs draw the next call's table for when the noise is fresh."""
    kvh = tl.program_id(0)
    tile = tl.program_id(1)
    offs_m = tile * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_g = tl.arange(0, BLOCK_G)
    offs_d = tl.arange(0, HEAD_D)
    heads = kvh * GROUP + offs_g
    g_mask = offs_g < GROUP
    in_row = g_mask[:, None] & (offs_m < m_max)[None, :]
    valid = offs_m < tl.load(NumTeams + kvh)
    seed = tl.load(SeedPtr)
    if AHEAD:
        drawn = tl.load(NoiseSeeds)
    n = tl.load(Lengths + kvh * stride_lh + offs_m, mask=valid, other=1)
    wait_for_predecessor(PDL)
    release_dependents(PDL)  # the chain's first launch: launch 2 may be scheduled now
    if tile == 0:  # after the wait: the last call's merge has read them
        tl.store(Count + heads, 0, mask=g_mask)
        if AHEAD:
            if kvh == 0:
                tl.store(NoiseSeeds + 1, seed + 1)
    q = tl.load(Q + heads[:, None] * stride_qh + offs_d[None, :], mask=g_mask[:, None], other=0.0)
    rep = tl.load(Rep + kvh * stride_rh + offs_m[:, None] * stride_rm + offs_d[None, :],
                  mask=(offs_m < m_max)[:, None], other=0.0)
    # the noise and log n are arithmetic on nothing in flight: written before the product so that
    # they fill the wait for the representative keys (after the eviction, a DRAM round trip)
    # (y sums in the block top-k's order, so both paths round alike)
    log_n = tl.log(n.to(tl.float32))
    if NOISE:
        if AHEAD:
            if drawn == seed:
                noise = tl.load(Noise + heads[:, None] * stride_nh + offs_m[None, :], mask=in_row, other=0.0)
            else:  # a table of another seed: the seed set from outside, or a merge cut by PHASES
                noise = gumbel_rows(seed, heads, tile * BLOCK_M, BLOCK_G, BLOCK_M, m_max, PHILOX)
        else:
            noise = gumbel_rows(seed, heads, tile * BLOCK_M, BLOCK_G, BLOCK_M, m_max, PHILOX)
    s = dot(q, tl.trans(rep), DOT_PRECISION)
    tl.store(Scores + heads[:, None] * stride_sh + offs_m[None, :], s, mask=in_row)
    y = s * inv_sqrt_d + log_n[None, :]
    if NOISE:
        y = y + noise
    y = tl.where(valid[None, :], y, float("-inf"))
    tl.store(Y + heads[:, None] * stride_sh + offs_m[None, :], y, mask=in_row)
    if SUB == BLOCK_M:  # one part per tile: a plain row maximum (the reshape costs a layout change)
        tl.store(TileMax + heads * stride_th + tile, tl.max(y, axis=1), mask=g_mask)
    else:
        part_max = tl.max(tl.reshape(y, (BLOCK_G, BLOCK_M // SUB, SUB)), axis=2)
        offs_p = tile * (BLOCK_M // SUB) + tl.arange(0, BLOCK_M // SUB)
        tl.store(TileMax + heads[:, None] * stride_th + offs_p[None, :], part_max, mask=g_mask[:, None])


@triton.jit
def _chunk_keys(Y, heads, g_mask, c0, m_max, stride_yh, CHUNK: tl.constexpr):
    """Keys of teams [c0, c0 + CHUNK) of each head and which of them are real teams."""
    offs = c0 + tl.arange(0, CHUNK)
    ok = g_mask[:, None] & (offs < m_max)[None, :]
    y = tl.load(Y + heads[:, None] * stride_yh + offs[None, :], mask=ok, other=float("-inf"), cache_modifier=".cg")
    return _to_key(y, offs[None, :]), ok & (y > float("-inf"))


@triton.jit
def _count_at_or_above(Y, heads, g_mask, thr, m_max, stride_yh, BLOCK_G: tl.constexpr, CHUNK: tl.constexpr):
    n = tl.zeros([BLOCK_G], dtype=tl.int32)
    for c0 in range(0, m_max, CHUNK):
        key, real = _chunk_keys(Y, heads, g_mask, c0, m_max, stride_yh, CHUNK)
        n += tl.sum((real & (key >= thr[:, None])).to(tl.int32), axis=1)
    return n


@triton.jit
def _compact_at_or_above(Y, Count, Keys, heads, g_mask, thr, m_max, stride_yh, stride_kh,
                         CHUNK: tl.constexpr, CAP: tl.constexpr):
    """Append each head's keys at or above ``thr`` to its row of ``Keys`` (at most CAP stored) and
    return how many there were. Count must be zero on entry."""
    for c0 in range(0, m_max, CHUNK):
        key, real = _chunk_keys(Y, heads, g_mask, c0, m_max, stride_yh, CHUNK)
        keep = real & (key >= thr[:, None])
        slot = tl.atomic_add(Count + heads[:, None] + 0 * key.to(tl.int32), 1, mask=keep, sem="relaxed", scope="cta")
        tl.store(Keys + heads[:, None] * stride_kh + slot, key, mask=keep & (slot < CAP))
    tl.debug_barrier()  # every append is in memory before any thread reads the rows back
    return tl.load(Count + heads, mask=g_mask, other=0, cache_modifier=".cg")


@triton.jit
def _bound_key(TileMax, h, h_mask, k_sel, n_parts, stride_th, NTP: tl.constexpr, KPAD: tl.constexpr):
    """Per head in ``h`` (where ``h_mask``): the key at or above which every one of its K+1 best keys lies (the
    (K+1)-th largest part maximum's word, in the high half), and the key above all of them."""
    offs_t = tl.arange(0, NTP)
    tmax = tl.load(TileMax + h[:, None] * stride_th + offs_t[None, :],
                   mask=h_mask[:, None] & (offs_t < n_parts)[None, :], other=float("-inf"), cache_modifier=".cg")
    bits = tmax.to(tl.int32, bitcast=True)
    word = tl.where(bits < 0, bits ^ 0x7FFFFFFF, bits)  # the keys' high word: same order as Y
    top = tl.topk(word, KPAD, dim=1)
    kth = tl.sum(tl.where(tl.arange(0, KPAD)[None, :] == k_sel, top, 0), axis=1)
    return kth.to(tl.int64) << 32, (tl.max(top, axis=1).to(tl.int64) + 1) << 32


@triton.jit
def santa_filter_bound(
    Y, TileMax, Count, Keys, Scores, Lengths, Starts, Phi, Len, Start,
    k_sel, m_max, n_parts, inv_sqrt_d, stride_yh, stride_th, stride_kh, stride_sh, stride_lh,
    GROUP: tl.constexpr, BLOCK_T: tl.constexpr, NTP: tl.constexpr, KPAD: tl.constexpr, CAP: tl.constexpr,
    CARRY: tl.constexpr = False, PDL: tl.constexpr = False,
):
    """Launch 2, grid (Hq, cdiv(M_max, BLOCK_T)): append the block's teams at or above the head's
    bound to its row of ``Keys`` (at most CAP stored; ``Count`` holds how many cleared it). With
    CARRY, each kept team's ``team_values`` go beside its key (rows of Phi, Len, Start), read while
    the append's atomic is in flight, so the merge finds them with the keys."""
    h = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK_T + tl.arange(0, BLOCK_T)
    wait_for_predecessor(PDL)
    release_dependents(PDL)
    one = tl.full([1], 0, tl.int32) + h
    lo, _ = _bound_key(TileMax, one, one >= 0, k_sel, n_parts, stride_th, NTP, KPAD)
    ok = offs < m_max
    y = tl.load(Y + h * stride_yh + offs, mask=ok, other=float("-inf"))
    key = _to_key(y, offs)
    keep = ok & (y > float("-inf")) & (key >= tl.sum(lo, axis=0))
    slot = tl.atomic_add(Count + h + 0 * offs, 1, mask=keep, sem="relaxed")
    stored = keep & (slot < CAP)
    tl.store(Keys + h * stride_kh + slot, key, mask=stored)
    if CARRY:
        phi, n, start = team_values(Scores, Lengths, Starts, one, h // GROUP, offs[None, :], keep[None, :],
                                    inv_sqrt_d, stride_sh, stride_lh)
        row = h * stride_kh + slot[None, :]
        tl.store(Phi + row, phi, mask=stored[None, :])
        tl.store(Len + row, n, mask=stored[None, :])
        tl.store(Start + row, start, mask=stored[None, :])


@triton.jit
def bound_candidates(
    Y, TileMax, Count, Keys, heads, g_mask, k_sel, m_max, n_parts, stride_yh, stride_th, stride_kh,
    BLOCK_G: tl.constexpr, NTP: tl.constexpr, KPAD: tl.constexpr, CAP: tl.constexpr, CHUNK: tl.constexpr,
):
    """[BLOCK_G, CAP] candidate keys per head holding its K+1 best (padding below every key), from
    launch 2's rows, which of them are real, and whether a bisection rewrote the rows."""
    offs_c = tl.arange(0, CAP)
    count = tl.load(Count + heads, mask=g_mask, other=0, cache_modifier=".cg")
    # the whole rows, read beside the counts rather than after them (one L2 round trip, not two);
    # the slots past a head's count hold an earlier call's keys and are masked below
    cand = tl.load(Keys + heads[:, None] * stride_kh + offs_c[None, :], mask=g_mask[:, None], other=0,
                   cache_modifier=".cg")
    return kept_candidates(Y, TileMax, Count, Keys, heads, g_mask, count, cand, k_sel, m_max, n_parts,
                           stride_yh, stride_th, stride_kh, BLOCK_G, NTP, KPAD, CAP, CHUNK)


@triton.jit
def kept_candidates(
    Y, TileMax, Count, Keys, heads, g_mask, count, cand, k_sel, m_max, n_parts, stride_yh, stride_th,
    stride_kh, BLOCK_G: tl.constexpr, NTP: tl.constexpr, KPAD: tl.constexpr, CAP: tl.constexpr, CHUNK: tl.constexpr,
):
    """``bound_candidates`` on the counts and whole rows already read."""
    offs_c = tl.arange(0, CAP)
    bisected = tl.max(count, axis=0) > CAP
    if bisected:
        # bisect the keys: count(>= lo) > CAP >= K+1 > count(>= hi) until at most CAP are kept
        lo, hi = _bound_key(TileMax, heads, g_mask, k_sel, n_parts, stride_th, NTP, KPAD)
        steps = 0
        while (tl.max(count, axis=0) > CAP) & (steps < 70):
            mid = (lo >> 1) + (hi >> 1) + (lo & hi & 1)
            n = _count_at_or_above(Y, heads, g_mask, mid, m_max, stride_yh, BLOCK_G, CHUNK)
            busy = count > CAP
            up = busy & (n >= k_sel + 1)
            lo = tl.where(up, mid, lo)
            count = tl.where(up, n, count)
            hi = tl.where(busy & (n < k_sel + 1), mid, hi)
            steps += 1
        tl.debug_barrier()  # every thread has read the count before it is cleared
        tl.store(Count + heads, 0, mask=g_mask)
        tl.debug_barrier()
        count = _compact_at_or_above(Y, Count, Keys, heads, g_mask, lo, m_max, stride_yh, stride_kh, CHUNK, CAP)
        cand = tl.load(Keys + heads[:, None] * stride_kh + offs_c[None, :], mask=g_mask[:, None], other=0,
                       cache_modifier=".cg")
    stored = g_mask[:, None] & (offs_c[None, :] < count[:, None])
    return tl.where(stored, cand, tl.full([BLOCK_G, CAP], _NO_KEY, tl.int64) + offs_c[None, :]), stored, bisected


@triton.jit
def narrow_rows(Count, Keys, heads, g_mask, stride_kh, CAP: tl.constexpr):
    """``merge.NARROW``'s reads: the counts, the first CAP/2 slots and the whole rows, all beside one
    another (the half twice, from L2), so neither branch of ``narrow_selection`` waits for a second
    round trip or moves the keys between layouts."""
    rows = Keys + heads[:, None] * stride_kh
    count = tl.load(Count + heads, mask=g_mask, other=0, cache_modifier=".cg")
    low = tl.load(rows + tl.arange(0, CAP // 2)[None, :], mask=g_mask[:, None], other=0, cache_modifier=".cg")
    every = tl.load(rows + tl.arange(0, CAP)[None, :], mask=g_mask[:, None], other=0, cache_modifier=".cg")
    return count, low, every


@triton.jit
def narrow_selection(
    Y, TileMax, Count, Keys, SelKey, heads, g_mask, count, low, every, k_sel, m_max, n_parts, stride_yh,
    stride_th, stride_kh, BLOCK_G: tl.constexpr, NTP: tl.constexpr, KPAD: tl.constexpr, CAP: tl.constexpr,
    CHUNK: tl.constexpr, SELECT: tl.constexpr, RADIX_BITS: tl.constexpr,
):
    """``merge.NARROW``: ``select_keys`` over the first CAP/2 slots of the rows when no head of the
    group kept more (a branch on the counts), else over all CAP (and the bisection past CAP)."""
    half = tl.arange(0, CAP // 2)
    if tl.max(count, axis=0) <= CAP // 2:
        kept = g_mask[:, None] & (half[None, :] < count[:, None])
        in_half = tl.where(kept, low, tl.full([BLOCK_G, CAP // 2], _NO_KEY, tl.int64) + half[None, :])
        team, chosen, tau, sel_slot = select_keys(in_half, heads, g_mask, SelKey, k_sel, BLOCK_G, CAP // 2, KPAD,
                                                  SELECT, RADIX_BITS)
    else:
        in_rows, _, _ = kept_candidates(Y, TileMax, Count, Keys, heads, g_mask, count, every, k_sel, m_max,
                                        n_parts, stride_yh, stride_th, stride_kh, BLOCK_G, NTP, KPAD, CAP, CHUNK)
        team, chosen, tau, sel_slot = select_keys(in_rows, heads, g_mask, SelKey, k_sel, BLOCK_G, CAP, KPAD,
                                                  SELECT, RADIX_BITS)
    return team, chosen, tau, sel_slot


@triton.jit
def santa_merge_bound(
    Y, TileMax, Count, Keys, Phi, Len, Start, Scores, Lengths, Starts, SelTeam, SelLogC, SelKey,
    UTeam, UStart, URowPre, UCount, UMask, ULogC, Owner, Pos, SeedPtr, Noise, NoiseSeeds,
    inv_sqrt_d, k_sel, m_max, n_parts,
    stride_sh, stride_th, stride_kh, stride_lh, stride_selh, stride_uh, stride_um, stride_nh,
    GROUP: tl.constexpr, BLOCK_G: tl.constexpr, NTP: tl.constexpr, CAP: tl.constexpr, CHUNK: tl.constexpr,
    KPAD: tl.constexpr, UMAX: tl.constexpr, FRESH: tl.constexpr, SELECT: tl.constexpr,
    RADIX_BITS: tl.constexpr, GATHER: tl.constexpr = False, CARRY: tl.constexpr = False, PDL: tl.constexpr = False,
    PHASES: tl.constexpr = 4, DRAW_N: tl.constexpr = 0, PHILOX: tl.constexpr = 4, NARROW: tl.constexpr = False,
    PER_HEAD: tl.constexpr = False,
):
    """Launch 3, grid (Hkv, 1 + drawers) (or (Hq, ...) with PER_HEAD, below): the candidates launch
    2 kept (``bound_candidates``), then the global top-K, tau, corrections and union as the block
    top-k's merge does. PHASES below 4 stop after the candidates (1), the selection (2) or the
    corrections' inputs (3), storing what they have so none of it is dropped:
    ``scripts/probe_merge_phases.py`` times each cut.

    DRAW_N > 0 (``score.AHEAD`` with fresh noise): grid (Hkv, 1 + drawers); the programs past the
    first draw the next call's noise table, DRAW_N teams at a time, on SMs the merge's Hkv programs
    leave idle (``draw_noise_ahead``); the host keeps the drawers to one wave beside them.

    NARROW (``merge.NARROW``) selects from half of each row when the group's counts allow
    (``narrow_selection``).

    With CARRY the corrections' inputs come from launch 2's rows, read with the keys, instead of
    from the tables after the selection (a dependent round trip fewer). To find a ranked key's
    column, the key's low word becomes team * CAP + column for the selection: the order is
    unchanged (teams are unique in a row). After a bisection, the rows are read the usual way.
    SELECT=3 (candidate order) is refused on the host: launch 2's atomic appends fix no order.

    PER_HEAD (``merge.PER_HEAD``): grid (Hq, 1 + drawers), one query head a program, whose
    selection becomes a row list of its own (``correct_and_list``) instead of a share of its KV
    head's union: no union tables to reset, no owner bids; each row's drawers draw its head's noise."""
    tl.static_assert((PHASES >= 1) & (PHASES <= 4), "PHASES is 1 to 4")
    tl.static_assert(not NARROW or ((not CARRY) and (SELECT != 3) and (CAP >= 2 * KPAD)),
                     "NARROW selects from half the rows: no CARRY, SELECT < 3, CAP >= 2 KPAD")
    if tl.program_id(1) > 0:
        if DRAW_N > 0:
            wait_for_predecessor(PDL)
            release_dependents(PDL)
            next_seed = tl.load(NoiseSeeds + 1)  # seed + 1, from the score launch: the head-0 merge advances SeedPtr
            for tile in range(tl.program_id(1) - 1, tl.cdiv(m_max, DRAW_N), tl.num_programs(1) - 1):
                # with PER_HEAD a row of the grid is one query head, which draws its own noise
                draw_noise_ahead(next_seed, Noise, NoiseSeeds, tl.program_id(0), tile, m_max, stride_nh,
                                 1 if PER_HEAD else GROUP, BLOCK_G, DRAW_N, PHILOX)
    else:
        offs_g = tl.arange(0, BLOCK_G)
        if PER_HEAD:  # one query head; kvh indexes its KV head's team tables
            kvh = tl.program_id(0) // GROUP
            heads = tl.program_id(0) + offs_g
            g_mask = offs_g < 1
        else:
            kvh = tl.program_id(0)
            heads = kvh * GROUP + offs_g
            g_mask = offs_g < GROUP
            # prologue (overlaps launch 2 under PDL): tables only this launch writes
            reset_union_tables(UMask, ULogC, kvh, stride_uh, stride_um, BLOCK_G, UMAX)
        wait_for_predecessor(PDL)
        release_dependents(PDL)
        offs_c = tl.arange(0, CAP)
        if CARRY:
            row = heads[:, None] * stride_kh + offs_c[None, :]
            phi_c = tl.load(Phi + row, mask=g_mask[:, None], other=0.0, cache_modifier=".cg")
            n_c = tl.load(Len + row, mask=g_mask[:, None], other=0, cache_modifier=".cg")
            start_c = tl.load(Start + row, mask=g_mask[:, None], other=0, cache_modifier=".cg")
        if NARROW:
            count, low, every = narrow_rows(Count, Keys, heads, g_mask, stride_kh, CAP)
            if PHASES == 1:  # the reads alone: something of all three, stored
                cand = tl.where(count[:, None] > 0, every, 0) + tl.max(low, axis=1)[:, None]
            else:
                team, chosen, tau, sel_slot = narrow_selection(Y, TileMax, Count, Keys, SelKey, heads, g_mask, count,
                                                               low, every, k_sel, m_max, n_parts, stride_sh,
                                                               stride_th, stride_kh, BLOCK_G, NTP, KPAD, CAP, CHUNK,
                                                               SELECT, RADIX_BITS)
        else:
            cand, stored, bisected = bound_candidates(Y, TileMax, Count, Keys, heads, g_mask, k_sel, m_max, n_parts,
                                                      stride_sh, stride_th, stride_kh, BLOCK_G, NTP, KPAD, CAP, CHUNK)
        if PHASES == 1:
            tl.store(SelTeam + heads * stride_selh, tl.max(_key_index(cand), axis=1), mask=g_mask)
        if PHASES >= 2 and not NARROW:  # NARROW: selected above
            if CARRY:
                if bisected:  # the bisection rewrote the rows: their values from the tables
                    phi_c, n_c, start_c = team_values(Scores, Lengths, Starts, heads, kvh, _key_index(cand), stored,
                                                      inv_sqrt_d, stride_sh, stride_lh)
                # a ranked selection loses the column: carry it in the key
                cand = (cand & -4294967296) | ((_key_index(cand).to(tl.int64) & 0xFFFFFFFF) * CAP + offs_c[None, :])
            team, chosen, tau, sel_slot = select_keys(cand, heads, g_mask, SelKey, k_sel, BLOCK_G, CAP, KPAD,
                                                      SELECT, RADIX_BITS)
        if PHASES == 2:
            tl.store(SelTeam + heads[:, None] * stride_selh + sel_slot, team, mask=chosen)
            tl.store(SelLogC + heads * stride_selh, tau, mask=g_mask)
        if PHASES >= 3:
            if CARRY:
                col = team % CAP
                team = team // CAP
                phi = tl.gather(phi_c, col, 1)
                n = tl.gather(n_c, col, 1)
                start = tl.gather(start_c, col, 1)
            else:
                phi, n, start = team_values(Scores, Lengths, Starts, heads, kvh, team, chosen, inv_sqrt_d,
                                            stride_sh, stride_lh)
        if PHASES == 3:
            tl.store(SelTeam + heads[:, None] * stride_selh + sel_slot, team + n + start, mask=chosen)
            tl.store(SelLogC + heads[:, None] * stride_selh + sel_slot, phi - tau[:, None], mask=chosen)
        if PHASES >= 4 and PER_HEAD:
            correct_and_list(team, chosen, tau, sel_slot, phi, n, start, heads, g_mask, SelTeam, SelLogC, UTeam, UStart,
                             URowPre, UCount, ULogC, SeedPtr, tl.program_id(0) == 0, stride_selh, stride_uh,
                             stride_um, UMAX=UMAX, FRESH=FRESH)
        if PHASES >= 4 and not PER_HEAD:
            correct_and_union(team, chosen, tau, sel_slot, phi, n, start, kvh, heads, offs_g, SelTeam, SelLogC,
                              UTeam, UStart, URowPre, UCount, UMask, ULogC, Owner, Pos, SeedPtr,
                              m_max, stride_selh, stride_uh, stride_um, BLOCK_G=BLOCK_G,
                              WIDTH=CAP if SELECT == 3 else KPAD, UMAX=UMAX, FRESH=FRESH, GATHER=GATHER)
