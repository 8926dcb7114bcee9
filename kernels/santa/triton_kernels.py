"""The SANTA++ decode kernels (Appendix D), one launch each; the fifth is the split-KV reducer.

Scores and candidates travel between launches as plain arrays. A perturbed routing score and its
team index are packed into one int64 *sort key* (an order-preserving int32 image of the fp32
score in the high word, the index in the low word), so one ``tl.sort`` orders both and a top-k
is "sort, keep the first k". All scores are natural-log domain except where noted (log2 for the
attention's exp2).
"""

from __future__ import annotations

import triton
import triton.language as tl

from kprof.kernels.common.dependent_launch import release_dependents, wait_for_predecessor
from kprof.kernels.common.grid_sync import LINE_WORDS
from kprof.kernels.common.matmul import dot
from kprof.kernels.common.split_kv_combine import combine_head
from kprof.kernels.santa.radix_select import select_top

LOG2E = 1.4426950408889634
# tl.topk (a bitonic top-k: log2(k) sort stages then shrinking merges) exists in Triton 3.6+.
# Launches choose the selection with the SELECT launch parameter (a constexpr, so only one path
# compiles): 0 full sort, 1 tl.topk (the default where it exists), 2 radix select.
HAS_TOPK = hasattr(tl, "topk")
HAS_GATHER = hasattr(tl, "gather")  # register gather across a tensor (Triton 3.2+)


@triton.jit
def _to_key(y, idx):
    """fp32 score + int index -> int64 key whose signed order is (score, index) order."""
    bits = y.to(tl.int32, bitcast=True)
    k32 = tl.where(bits < 0, bits ^ 0x7FFFFFFF, bits)
    return (k32.to(tl.int64) << 32) | idx.to(tl.int64)


@triton.jit
def _key_score(key):
    hi = (key >> 32).to(tl.int32)
    bits = tl.where(hi < 0, hi ^ 0x7FFFFFFF, hi)
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def _key_index(key):
    return (key & 0xFFFFFFFF).to(tl.int32)


@triton.jit
def _log_inclusion(x):
    """log(1 - exp(-exp(x))) in fp32 without cancellation (series below e^x = 1e-2)."""
    y = tl.exp(x)
    series = x - 0.5 * y + y * y / 24.0
    direct = tl.log(tl.maximum(1.0 - tl.exp(-tl.minimum(y, 80.0)), 1e-30))
    return tl.where(y < 1e-2, series, direct)


@triton.jit
def _gumbel(seed, row, t0, N: tl.constexpr, m_max):
    """Standard Gumbel noise for teams t0..t0+N-1 of query head ``row`` (t0 and N multiples of 4).

    One Philox call yields four uniforms r0..r3: team t of head h uses counter
    h * cdiv(M_max, 4) + t // 4 and output (r0, r2, r1, r3)[t % 4] (``tl.join`` adds the new
    axis last, so the outer join alternates fastest), so the same (seed, head, team) always gives
    the same draw at a quarter of the cost of one call per team.
    """
    counters = row * ((m_max + 3) // 4) + t0 // 4 + tl.arange(0, N // 4)
    r0, r1, r2, r3 = tl.rand4x(seed, counters)
    u = tl.reshape(tl.join(tl.join(r0, r1), tl.join(r2, r3)), (N,))
    u = tl.minimum(tl.maximum(u, 1e-7), 1.0 - 6e-8)
    return -tl.log(-tl.log(u))


@triton.jit
def santa_gumbel_dump(SeedPtr, Out, m_max, stride_oh, BLOCK: tl.constexpr):
    """Grid (Hq, cdiv(M_max, BLOCK)): write the noise launch 2 adds (for tests and validation only)."""
    h = tl.program_id(0)
    t0 = tl.program_id(1) * BLOCK
    offs = t0 + tl.arange(0, BLOCK)
    tl.store(Out + h * stride_oh + offs, _gumbel(tl.load(SeedPtr), h, t0, BLOCK, m_max), mask=offs < m_max)


@triton.jit
def score_tile(q, Rep, kvh, offs_m, m_max, stride_rh, stride_rm, HEAD_D: tl.constexpr,
               DOT_PRECISION: tl.constexpr):
    """q [BLOCK_G, d] . l_g for the representatives ``offs_m`` of KV head ``kvh``: [BLOCK_G, BLOCK_M]."""
    offs_d = tl.arange(0, HEAD_D)
    rep = tl.load(Rep + kvh * stride_rh + offs_m[:, None] * stride_rm + offs_d[None, :],
                  mask=(offs_m < m_max)[:, None], other=0.0)
    return dot(q, tl.trans(rep), DOT_PRECISION)


@triton.jit
def santa_score(
    Q, Rep, Scores,
    m_max,
    stride_qh, stride_rh, stride_rm, stride_sh,
    GROUP: tl.constexpr, BLOCK_G: tl.constexpr, BLOCK_M: tl.constexpr, HEAD_D: tl.constexpr,
    DOT_PRECISION: tl.constexpr, PDL: tl.constexpr = False,
):
    """Launch 1, grid (Hkv, cdiv(M_max, BLOCK_M)): q . l_g for every head of the group.

    Each representative key tile is loaded once and multiplied with all G query heads. The chain's
    first launch: launched without PDL, it releases launch 2 at once.
    """
    wait_for_predecessor(PDL)
    release_dependents(PDL)
    score_group_tile(Q, Rep, Scores, tl.program_id(0), tl.program_id(1), m_max, stride_qh, stride_rh, stride_rm,
                     stride_sh, GROUP, BLOCK_G, BLOCK_M, HEAD_D, DOT_PRECISION)


@triton.jit
def score_group_tile(Q, Rep, Scores, kvh, tile, m_max, stride_qh, stride_rh, stride_rm, stride_sh,
                     GROUP: tl.constexpr, BLOCK_G: tl.constexpr, BLOCK_M: tl.constexpr, HEAD_D: tl.constexpr,
                     DOT_PRECISION: tl.constexpr):
    """Store q . l_g of representative tile ``tile`` of KV head ``kvh`` for every query head of
    its group: the tile is read once for all of them."""
    offs_m = tile * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_g = tl.arange(0, BLOCK_G)
    offs_d = tl.arange(0, HEAD_D)
    heads = kvh * GROUP + offs_g
    g_mask = offs_g < GROUP
    q = tl.load(Q + heads[:, None] * stride_qh + offs_d[None, :], mask=g_mask[:, None], other=0.0)
    s = score_tile(q, Rep, kvh, offs_m, m_max, stride_rh, stride_rm, HEAD_D, DOT_PRECISION)
    tl.store(Scores + heads[:, None] * stride_sh + offs_m[None, :], s, mask=g_mask[:, None] & (offs_m < m_max)[None, :])


@triton.jit
def store_block_top(y, offs, Out, BLOCK_T: tl.constexpr, KPAD: tl.constexpr, SELECT: tl.constexpr,
                    RADIX_BITS: tl.constexpr):
    """The KPAD best (y, team) keys of one block at ``Out`` (launch 2's SELECT variants)."""
    if SELECT == 2:
        keys = tl.reshape(_to_key(y, offs), (1, BLOCK_T))
        keep = select_top(keys, KPAD, tl.full([1], 1, tl.int1), RADIX_BITS)
        slot = tl.cumsum(keep.to(tl.int32), axis=1) - 1
        tl.store(Out + slot, keys, mask=keep)
    elif SELECT == 1:
        tl.store(Out + tl.arange(0, KPAD), tl.topk(_to_key(y, offs), KPAD))
    elif SELECT == 3:
        bits = y.to(tl.int32, bitcast=True)
        word = tl.where(bits < 0, bits ^ 0x7FFFFFFF, bits)  # the key's high word: same order as y
        kth = tl.min(tl.topk(word, KPAD), axis=0)
        keep = word >= kth
        if tl.sum(keep.to(tl.int32), axis=0) == KPAD:
            slot = tl.cumsum(keep.to(tl.int32), axis=0) - 1
            tl.store(Out + slot, _to_key(y, offs), mask=keep)
        else:  # the KPAD-th word is tied: order the tie by team index as the int64 keys do
            tl.store(Out + tl.arange(0, KPAD), tl.topk(_to_key(y, offs), KPAD))
    else:
        keys = tl.sort(_to_key(y, offs), descending=True)
        rank = tl.arange(0, BLOCK_T)
        tl.store(Out + rank, keys, mask=rank < KPAD)


@triton.jit
def santa_block_topk(
    Scores, Lengths, NumTeams, SeedPtr, Cand,
    m_max, inv_sqrt_d,
    stride_sh, stride_lh, stride_ch, stride_cb,
    GROUP: tl.constexpr, BLOCK_T: tl.constexpr, KPAD: tl.constexpr, NOISE: tl.constexpr, SELECT: tl.constexpr,
    RADIX_BITS: tl.constexpr, PDL: tl.constexpr = False,
):
    """Launch 2, grid (Hq, cdiv(M_max, BLOCK_T)): routing logits, Gumbel noise, local top-(K+1).

    phi = score/sqrt(d) + log n_g; Y = phi + Gumbel noise (``_gumbel``); the block's
    KPAD (>= K+1) best keys are written, padding teams score -inf. SELECT 0 sorts the block, 1
    uses tl.topk on the int64 keys (both write best first), 2 radix-selects, 3 finds the KPAD-th
    largest 32-bit score word with tl.topk on int32 (half the exchange work of int64 keys) and
    keeps every team at or above it; when that word is tied past the KPAD-th place (padding, or
    equal scores) it falls back to the int64 tl.topk. 2 and 3 write the set in team order (3's
    fallback best first); merge reads the set in any order.
    """
    h = tl.program_id(0)
    blk = tl.program_id(1)
    kvh = h // GROUP
    offs = blk * BLOCK_T + tl.arange(0, BLOCK_T)
    m = tl.load(NumTeams + kvh)
    valid = offs < m
    # prologue (overlaps launch 1 under PDL): lengths, log n and the noise depend on nothing it writes
    log_n = tl.log(tl.load(Lengths + kvh * stride_lh + offs, mask=valid, other=1).to(tl.float32))
    if NOISE:
        noise = _gumbel(tl.load(SeedPtr), h, blk * BLOCK_T, BLOCK_T, m_max)
    wait_for_predecessor(PDL)
    release_dependents(PDL)
    s = tl.load(Scores + h * stride_sh + offs, mask=valid, other=0.0)
    y = s * inv_sqrt_d + log_n
    if NOISE:
        y = y + noise
    y = tl.where(valid, y, float("-inf"))
    store_block_top(y, offs, Cand + h * stride_ch + blk * stride_cb, BLOCK_T, KPAD, SELECT, RADIX_BITS)


@triton.jit
def _select_by_word(cand, g_mask, k_sel, KPAD: tl.constexpr):
    """Selection mask of the K best keys per row of ``cand`` [G, C] and tau, the (K+1)-th score.

    tl.topk runs on the keys' 32-bit high words (the order-preserving score image: half the
    exchange work of the int64 keys); when exactly K words lie above the (K+1)-th, "word >
    (K+1)-th word" is the selection. Otherwise (a tie at the boundary, padding)
    the int64 keys decide, so the set always equals "sort the keys, keep K".
    """
    offs_k = tl.arange(0, KPAD)
    word = (cand >> 32).to(tl.int32)
    kth = tl.sum(tl.where(offs_k[None, :] == k_sel, tl.topk(word, KPAD, dim=1), 0), axis=1)
    above = word > kth[:, None]
    n_above = tl.sum(above.to(tl.int32), axis=1)
    # K words above the (K+1)-th are the K best keys; keys tied with it share tau's score
    clean = (n_above == k_sel) | (g_mask == 0)
    if tl.min(clean.to(tl.int32), axis=0) == 1:
        chosen = g_mask[:, None] & above
        tau = _key_score(kth.to(tl.int64) << 32)
    else:
        top = tl.topk(cand, KPAD, dim=1)
        kth_key = tl.sum(tl.where(offs_k[None, :] == k_sel, top, 0), axis=1)
        chosen = g_mask[:, None] & (cand > kth_key[:, None])
        tau = _key_score(kth_key)
    return chosen, tau


@triton.jit
def team_values(Scores, Lengths, Starts, heads, kvh, team, chosen, inv_sqrt_d, stride_sh, stride_lh):
    """phi = q . l_g / sqrt(d) + log n, n and the first row of each chosen team (the corrections'
    inputs; the bound filter's CARRY stores the same three beside its keys)."""
    s = tl.load(Scores + heads[:, None] * stride_sh + team, mask=chosen, other=0.0)
    n = tl.load(Lengths + kvh * stride_lh + team, mask=chosen, other=0)
    start = tl.load(Starts + kvh * stride_lh + team, mask=chosen, other=0)
    return s * inv_sqrt_d + tl.log(tl.maximum(n, 1).to(tl.float32)), n, start


@triton.jit
def correct_and_union(team, chosen, tau, sel_slot, phi, n, start, kvh, heads, offs_g,
                      SelTeam, SelLogC, UTeam, UStart, URowPre, UCount, UMask, ULogC, Owner, Pos, SeedPtr,
                      m_max, stride_selh, stride_uh, stride_um, BLOCK_G: tl.constexpr, WIDTH: tl.constexpr,
                      UMAX: tl.constexpr, FRESH: tl.constexpr, GATHER: tl.constexpr):
    """Corrections and GQA union of the selection ``chosen`` [G, WIDTH] (team ids ``team``, their
    ``team_values``); with FRESH, KV head 0 then advances the noise seed (this call's noise was
    drawn by a launch before).

    The union is found without sorting: each chosen (head, column) entry bids for its team's
    slot in ``Owner`` with an atomic min; the lowest bid is the team's first occurrence and gets
    the next union position. ``Owner`` holds INT_MAX between calls (touched slots are reset).
    A repeated team finds its union position through the owner's code: with GATHER by a register
    gather of the positions, else through the ``Pos`` table (one more L2 round trip).
    """
    offs_u = tl.arange(0, UMAX)
    logc = _log_inclusion(phi - tau[:, None])
    tl.store(SelTeam + heads[:, None] * stride_selh + sel_slot, team, mask=chosen)
    tl.store(SelLogC + heads[:, None] * stride_selh + sel_slot, logc, mask=chosen)

    # first occurrence of each team in (head, column) order owns its slot
    code = offs_g[:, None] * WIDTH + tl.arange(0, WIDTH)[None, :]
    slot = kvh * m_max + team
    tl.atomic_min(Owner + slot, code, mask=chosen)
    tl.debug_barrier()
    owner = tl.load(Owner + slot, mask=chosen, other=0)
    first = chosen & (owner == code)
    first_flat = tl.reshape(first.to(tl.int32), (BLOCK_G * WIDTH,))
    upos_flat = tl.cumsum(first_flat, axis=0) - 1
    upos = tl.reshape(upos_flat, (BLOCK_G, WIDTH))
    # row prefix sums in union order, in registers: union order is (head, column) order of firsts
    rows_flat = tl.reshape(tl.where(first, n, 0), (BLOCK_G * WIDTH,))
    row_end = tl.reshape(tl.cumsum(rows_flat, axis=0), (BLOCK_G, WIDTH))
    if not GATHER:
        tl.store(Pos + slot, upos, mask=first)
    tl.store(UTeam + kvh * UMAX + upos, team, mask=first)
    tl.store(UStart + kvh * UMAX + upos, start, mask=first)
    tl.store(UCount + kvh, tl.sum(first_flat, axis=0))
    # entries past the count end at the total, so attend never maps a row to them
    tl.store(URowPre + kvh * (UMAX + 1) + 1 + offs_u, tl.zeros([UMAX], dtype=tl.int32) + tl.sum(rows_flat, axis=0))
    tl.store(URowPre + kvh * (UMAX + 1), 0)
    tl.debug_barrier()
    tl.store(URowPre + kvh * (UMAX + 1) + 1 + upos, row_end, mask=first)
    if GATHER:
        my_pos = tl.reshape(tl.gather(upos_flat, tl.reshape(owner, (BLOCK_G * WIDTH,)), 0), (BLOCK_G, WIDTH))
    else:
        my_pos = tl.load(Pos + slot, mask=chosen, other=0)
    tl.store(UMask + kvh * stride_uh + my_pos * stride_um + offs_g[:, None], 1, mask=chosen)
    tl.store(ULogC + kvh * stride_uh + my_pos * stride_um + offs_g[:, None], logc, mask=chosen)
    tl.store(Owner + slot, 2147483647, mask=first)  # every bid was read before the barrier above
    if FRESH:
        if kvh == 0:
            tl.store(SeedPtr, tl.load(SeedPtr) + 1)


@triton.jit
def correct_and_list(team, chosen, tau, sel_slot, phi, n, start, heads, g_mask, SelTeam, SelLogC, UTeam, UStart,
                     URowPre, UCount, ULogC, SeedPtr, advance_seed, stride_selh, stride_uh, stride_um,
                     UMAX: tl.constexpr, FRESH: tl.constexpr):
    """``merge.PER_HEAD``: the corrections, then each head's selection as a row list of its own in
    the union tables' format (no union across the group: attend runs one program per query head), in
    the selection's column order. Every entry below the count is written on every call and every one
    past it holds the total, so the tables need no reset. ``advance_seed``: the one program that
    advances the noise seed with FRESH."""
    logc = _log_inclusion(phi - tau[:, None])
    tl.store(SelTeam + heads[:, None] * stride_selh + sel_slot, team, mask=chosen)
    tl.store(SelLogC + heads[:, None] * stride_selh + sel_slot, logc, mask=chosen)
    pos = tl.cumsum(chosen.to(tl.int32), axis=1) - 1
    rows = tl.where(chosen, n, 0)
    count = tl.sum(chosen.to(tl.int32), axis=1)
    tl.store(UTeam + heads[:, None] * UMAX + pos, team, mask=chosen)
    tl.store(UStart + heads[:, None] * UMAX + pos, start, mask=chosen)
    tl.store(UCount + heads, count, mask=g_mask)
    row_pre = URowPre + heads[:, None] * (UMAX + 1)
    offs_u = tl.arange(0, UMAX)[None, :]
    tl.store(URowPre + heads * (UMAX + 1), tl.zeros_like(count), mask=g_mask)
    tl.store(row_pre + 1 + pos, tl.cumsum(rows, axis=1), mask=chosen)
    tl.store(row_pre + 1 + offs_u, tl.zeros([1, UMAX], dtype=tl.int32) + tl.sum(rows, axis=1)[:, None],
             mask=g_mask[:, None] & (offs_u >= count[:, None]))
    tl.store(ULogC + heads[:, None] * stride_uh + pos * stride_um, logc, mask=chosen)
    if FRESH:
        if advance_seed:
            tl.store(SeedPtr, tl.load(SeedPtr) + 1)


@triton.jit
def reset_union_tables(UMask, ULogC, kvh, stride_uh, stride_um, BLOCK_G: tl.constexpr, UMAX: tl.constexpr):
    """Clear KV head ``kvh``'s selection mask and set its log c_g table to +inf (a head that did
    not select a team: attend's logit - log c_g is then -inf)."""
    offs_g = tl.arange(0, BLOCK_G)
    offs_u = tl.arange(0, UMAX)
    tl.store(UMask + kvh * stride_uh + offs_u[:, None] * stride_um + offs_g[None, :], 0)
    tl.store(ULogC + kvh * stride_uh + offs_u[:, None] * stride_um + offs_g[None, :], float("inf"))


@triton.jit
def merge_union(
    kvh, Cand, Scores, Lengths, Starts, SelTeam, SelLogC, SelKey,
    UTeam, UStart, URowPre, UCount, UMask, ULogC, Owner, Pos, SeedPtr,
    inv_sqrt_d, k_sel, m_max,
    stride_ch, stride_sh, stride_lh, stride_selh, stride_uh, stride_um,
    GROUP: tl.constexpr, BLOCK_G: tl.constexpr, NCP: tl.constexpr, NCAND: tl.constexpr, KPAD: tl.constexpr,
    UMAX: tl.constexpr, FRESH: tl.constexpr, SELECT: tl.constexpr, RADIX_BITS: tl.constexpr,
    GATHER: tl.constexpr,
):
    """Global top-K and tau of each head of KV head ``kvh`` from the blocks' candidates
    (``select_keys``), then corrections and the GQA union (``correct_and_union``)."""
    offs_g = tl.arange(0, BLOCK_G)
    heads = kvh * GROUP + offs_g
    g_mask = offs_g < GROUP
    offs_c = tl.arange(0, NCP)
    # padding keys sit below every real key and stay unique within a row (low word = column)
    pad = tl.full([BLOCK_G, NCP], -9223372036854775807, tl.int64) + offs_c[None, :]
    cand = tl.load(Cand + heads[:, None] * stride_ch + offs_c[None, :],
                   mask=g_mask[:, None] & (offs_c[None, :] < NCAND), other=0)
    cand = tl.where(g_mask[:, None] & (offs_c[None, :] < NCAND), cand, pad)
    team, chosen, tau, sel_slot = select_keys(cand, heads, g_mask, SelKey, k_sel,
                                              BLOCK_G, NCP, KPAD, SELECT, RADIX_BITS)
    phi, n, start = team_values(Scores, Lengths, Starts, heads, kvh, team, chosen, inv_sqrt_d, stride_sh, stride_lh)
    correct_and_union(team, chosen, tau, sel_slot, phi, n, start, kvh, heads, offs_g, SelTeam, SelLogC,
                      UTeam, UStart, URowPre, UCount, UMask, ULogC, Owner, Pos, SeedPtr,
                      m_max, stride_selh, stride_uh, stride_um, BLOCK_G=BLOCK_G,
                      WIDTH=NCP if SELECT == 3 else KPAD, UMAX=UMAX, FRESH=FRESH, GATHER=GATHER)


@triton.jit
def select_keys(cand, heads, g_mask, SelKey, k_sel, BLOCK_G: tl.constexpr, NCP: tl.constexpr, KPAD: tl.constexpr,
                SELECT: tl.constexpr, RADIX_BITS: tl.constexpr):
    """The K best of each head's candidate keys ``cand`` [BLOCK_G, NCP] (padding below every real
    key) and tau, the (K+1)-th key's score. Returns the low words of the keys the selection is
    drawn from (``team``), ``chosen``, tau and each chosen key's slot in the head's selection.
    SELECT 0-2 order the K+1 best keys (sort, tl.topk, radix select): team and chosen are
    [BLOCK_G, KPAD] in rank order; 3 selects by the 32-bit score word (``_select_by_word``):
    [BLOCK_G, NCP] in candidate order. SELECT is a constexpr, so the width is fixed per kernel."""
    offs_k = tl.arange(0, KPAD)
    if SELECT == 3:
        chosen, tau = _select_by_word(cand, g_mask, k_sel, KPAD)
        team = _key_index(cand)
        sel_slot = tl.cumsum(chosen.to(tl.int32), axis=1) - 1
    else:
        if SELECT == 2:
            # radix-select the K+1 best, compact them through SelKey, then order those few
            keep = select_top(cand, k_sel + 1, g_mask, RADIX_BITS)
            slot = tl.cumsum(keep.to(tl.int32), axis=1) - 1
            tl.store(SelKey + heads[:, None] * KPAD + slot, cand, mask=keep & g_mask[:, None])
            tl.debug_barrier()
            top = tl.load(SelKey + heads[:, None] * KPAD + offs_k[None, :],
                          mask=g_mask[:, None] & (offs_k[None, :] <= k_sel), other=-9223372036854775807)
            top = tl.sort(top, dim=1, descending=True)
        elif SELECT == 1:
            top = tl.topk(cand, KPAD, dim=1)  # [BLOCK_G, KPAD], best first
        else:
            cand = tl.sort(cand, dim=1, descending=True)
            # keep the first KPAD columns: fold [BLOCK_G, NCP] to [BLOCK_G, KPAD]
            top = tl.reshape(cand, (BLOCK_G, NCP // KPAD, KPAD))
            top = tl.sum(tl.where(tl.arange(0, NCP // KPAD)[None, :, None] == 0, top, 0), axis=1)
        # tau: the (K+1)-th key of each head; the K before it are the selection, in rank order
        tau = _key_score(tl.sum(tl.where(offs_k[None, :] == k_sel, top, 0), axis=1))
        chosen = g_mask[:, None] & (offs_k[None, :] < k_sel)
        team = _key_index(top)
        sel_slot = offs_k[None, :] + 0 * team
    return team, chosen, tau, sel_slot


@triton.jit
def santa_merge_union(
    Cand, Scores, Lengths, Starts, SelTeam, SelLogC, SelKey,
    UTeam, UStart, URowPre, UCount, UMask, ULogC, Owner, Pos, SeedPtr,
    inv_sqrt_d, k_sel, m_max,
    stride_ch, stride_sh, stride_lh, stride_selh, stride_uh, stride_um,
    GROUP: tl.constexpr, BLOCK_G: tl.constexpr, NCP: tl.constexpr, NCAND: tl.constexpr, KPAD: tl.constexpr,
    UMAX: tl.constexpr, FRESH: tl.constexpr, SELECT: tl.constexpr, RADIX_BITS: tl.constexpr,
    GATHER: tl.constexpr = False, PDL: tl.constexpr = False,
):
    """Launch 3, grid (Hkv,): global top-K and tau per head, corrections, GQA union (``merge_union``).

    Writes per head the selected team ids and log c_g (for validation), and per KV head the
    union of teams selected by its G heads (each once) with member range, row prefix sums,
    a per-head selection mask and per-head log c_g (``correct_and_union``).
    """
    kvh = tl.program_id(0)
    # prologue (overlaps launch 2 under PDL): reset the mask and log c_g tables, which only this
    # launch writes and only launch 4 reads
    reset_union_tables(UMask, ULogC, kvh, stride_uh, stride_um, BLOCK_G, UMAX)
    wait_for_predecessor(PDL)
    release_dependents(PDL)
    merge_union(kvh, Cand, Scores, Lengths, Starts, SelTeam, SelLogC, SelKey,
                UTeam, UStart, URowPre, UCount, UMask, ULogC, Owner, Pos, SeedPtr,
                inv_sqrt_d, k_sel, m_max, stride_ch, stride_sh, stride_lh, stride_selh, stride_uh, stride_um,
                GROUP, BLOCK_G, NCP, NCAND, KPAD, UMAX, FRESH, SELECT, RADIX_BITS, GATHER)


@triton.jit
def _count_below_last(Ends, x, N: tl.constexpr, LOG2_N: tl.constexpr):
    """For a scalar ``x`` below Ends[N-1]: how many of the N non-decreasing values Ends[0..N)
    are <= it (elsewhere: N - 1). A branch-free binary search (N a power of two): log2(N)
    dependent scalar loads from a 4N-byte table, which stay in L1 after the first."""
    pos = x * 0
    for i in tl.static_range(LOG2_N):
        step = N >> (i + 1)
        pos = tl.where(tl.load(Ends + pos + step - 1) <= x, pos + step, pos)
    return pos


@triton.jit
def santa_attend(
    Q, PK, PV, SK, SV, UStart, URowPre, ULogC, M_out, L_out, Acc_out,
    n_prompt, n_suffix, qk_scale_log2,
    stride_qh, stride_kh, stride_kn, stride_sk_h, stride_sk_n, stride_uh, stride_um,
    stride_mh, stride_ah, stride_as,
    GROUP: tl.constexpr, BLOCK_G: tl.constexpr, BLOCK_R: tl.constexpr, HEAD_D: tl.constexpr,
    UMAX: tl.constexpr, NUM_SPLITS: tl.constexpr, ALL_TEAMS: tl.constexpr, DOT_PRECISION: tl.constexpr,
    PV_FP32: tl.constexpr, SEARCH: tl.constexpr = 1, LOG2_UMAX: tl.constexpr = 8, SUFFIX: tl.constexpr = True,
    PDL: tl.constexpr = False, KV_GROUP: tl.constexpr = 1,
    Done=None, Out=None, stride_oh=0, REDUCE: tl.constexpr = 0, BLOCK_S: tl.constexpr = 2,
):
    """Launch 4, grid (Hkv, NUM_SPLITS): exact attention over the union's rows (``attend_split``).
    With ``merge.PER_HEAD`` the grid is (Hq, NUM_SPLITS), GROUP 1 and KV_GROUP the GQA group: each
    program reads its query head's own list and the K/V rows of that head's KV head.
    ``REDUCE`` (``attend.REDUCE``): each program then counts itself done on its row's counter in
    ``Done`` (one 128-byte line each), and the last of the row's NUM_SPLITS programs combines its
    GROUP heads into ``Out`` and zeroes the counter for the next call, so no reduce launch follows.
    Nothing waits: the last to count has every partial, so the interpreter's one-by-one order works."""
    kvh = tl.program_id(0)
    split = tl.program_id(1)
    offs_g = tl.arange(0, BLOCK_G)
    heads = kvh * GROUP + offs_g
    q = tl.load(Q + heads[:, None] * stride_qh + tl.arange(0, HEAD_D)[None, :], mask=(offs_g < GROUP)[:, None],
                other=0.0)
    wait_for_predecessor(PDL)  # everything below reads launch 3's union
    release_dependents(PDL)
    attend_split(q, kvh, split, PK, PV, SK, SV, UStart, URowPre, ULogC, M_out, L_out, Acc_out,
                 n_prompt, n_suffix, qk_scale_log2, stride_kh, stride_kn, stride_sk_h, stride_sk_n,
                 stride_uh, stride_um, stride_mh, stride_ah, stride_as,
                 GROUP, BLOCK_G, BLOCK_R, HEAD_D, UMAX, NUM_SPLITS, ALL_TEAMS, DOT_PRECISION, PV_FP32,
                 SEARCH, LOG2_UMAX, SUFFIX, KV_GROUP)
    if REDUCE:
        tl.debug_barrier()  # every thread's partials are stored before the gpu-scope release below
        done = tl.atomic_add(Done + kvh * LINE_WORDS, 1, sem="acq_rel", scope="gpu")
        tl.debug_barrier()  # and every thread of the last program reads them after its acquire
        if done == NUM_SPLITS - 1:
            for g in range(GROUP):
                # the chunked form bounds registers; empty ranges (many, with one list a head) are not read
                combine_head(M_out, L_out, Acc_out, Out, kvh * GROUP + g, NUM_SPLITS,
                             stride_mh, stride_ah, stride_as, stride_oh, BLOCK_S, HEAD_D, 32, SKIP_EMPTY=1)
            tl.store(Done + kvh * LINE_WORDS, 0)


@triton.jit
def attend_split(
    q, kvh, split, PK, PV, SK, SV, UStart, URowPre, ULogC, M_out, L_out, Acc_out,
    n_prompt, n_suffix, qk_scale_log2,
    stride_kh, stride_kn, stride_sk_h, stride_sk_n, stride_uh, stride_um,
    stride_mh, stride_ah, stride_as,
    GROUP: tl.constexpr, BLOCK_G: tl.constexpr, BLOCK_R: tl.constexpr, HEAD_D: tl.constexpr,
    UMAX: tl.constexpr, NUM_SPLITS: tl.constexpr, ALL_TEAMS: tl.constexpr, DOT_PRECISION: tl.constexpr,
    PV_FP32: tl.constexpr, SEARCH: tl.constexpr, LOG2_UMAX: tl.constexpr, SUFFIX: tl.constexpr,
    KV_GROUP: tl.constexpr = 1,
):
    """Split ``split`` of KV head ``kvh``: exact attention over its range of the union's rows, with
    per-head masks, into that split's partials (q [BLOCK_G, d], the group's queries).

    Virtual rows are the union's member rows (packed, contiguous per team) followed by the exact
    suffix. Each program takes one contiguous range of virtual rows, reads each K/V row once for
    all G heads, and adds a row to head j only if j selected its team, with logit - log c_g
    (ULogC holds +inf where j did not select it, so the mask costs no extra load).
    With ALL_TEAMS (K = M) every packed row counts for every head with c = 1. Before the K/V
    rows each tile waits on dependent loads of the tables (L2, written by the merge): with SEARCH
    0 the ends, then each row's entry start, base and log c; 1 and 2 add the window's ends between
    those. SEARCH=3 loads every entry's start, base and (GROUP 1) log c with the ends and picks
    each row's from registers, so only the ends' level is left; for short lists (merge.PER_HEAD's
    K+1 rounded up), where a [BLOCK_R, UMAX] pick costs little. ``kvh``
    indexes the tables; K and V are those of KV head ``kvh // KV_GROUP`` (KV_GROUP > 1:
    ``merge.PER_HEAD``'s lists, one per query head).
    """
    kv = kvh // KV_GROUP
    offs_g = tl.arange(0, BLOCK_G)
    offs_d = tl.arange(0, HEAD_D)
    heads = kvh * GROUP + offs_g
    g_mask = offs_g < GROUP
    offs_u = tl.arange(0, UMAX)
    row_pre = URowPre + kvh * (UMAX + 1)
    if ALL_TEAMS:
        union_rows = n_prompt
    else:
        union_rows = tl.load(row_pre + UMAX)  # the last end: entries past the count repeat the total
        if SEARCH != 1:  # every entry's end (URowPre[1..UMAX]) in one load beside it
            ends = tl.load(row_pre + 1 + offs_u)
        if SEARCH == 3:  # and every entry's first row, base and (one head a list) log c beside them
            starts_all = tl.load(UStart + kvh * UMAX + offs_u)
            bases_all = tl.load(row_pre + offs_u)
            if GROUP == 1:
                logc_all = tl.load(ULogC + kvh * stride_uh + offs_u * stride_um)
    total = union_rows + n_suffix
    per_split = tl.cdiv(tl.cdiv(total, NUM_SPLITS), BLOCK_R) * BLOCK_R
    lo = split * per_split
    hi = tl.minimum(lo + per_split, total)
    m_i = tl.full([BLOCK_G], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_G], dtype=tl.float32)
    acc = tl.zeros([BLOCK_G, HEAD_D], dtype=tl.float32)
    for r0 in range(lo, hi, BLOCK_R):
        rows = r0 + tl.arange(0, BLOCK_R)
        live = rows < hi
        in_union = live & (rows < union_rows)
        in_suffix = live & (rows >= union_rows)
        if ALL_TEAMS:
            packed = rows
            sel = g_mask[:, None] & live[None, :]
            bias = tl.zeros([BLOCK_G, BLOCK_R], dtype=tl.float32)
        else:
            # union entry of each row: the number of entries that end at or before it
            if (SEARCH == 0) or (SEARCH == 3):
                u = tl.sum((ends[None, :] <= rows[:, None]).to(tl.int32), axis=1)
            else:
                # the tile's first entry (by binary search, or by counting the ends in registers);
                # every entry has a row, so the tile's rows lie in the BLOCK_R entries from there:
                # compare with those ends only
                x = tl.minimum(r0, union_rows - 1)
                if SEARCH == 2:
                    u0 = tl.sum((ends <= x).to(tl.int32), axis=0)
                else:
                    tl.static_assert((1 << LOG2_UMAX) == UMAX, "LOG2_UMAX must be log2(UMAX)")
                    u0 = _count_below_last(row_pre + 1, x, UMAX, LOG2_UMAX)
                window = u0 + tl.arange(0, BLOCK_R)
                w_ends = tl.load(row_pre + 1 + window, mask=window < UMAX, other=2147483647)
                u = u0 + tl.sum((w_ends[None, :] <= rows[:, None]).to(tl.int32), axis=1)
            u = tl.where(in_union, u, 0)
            if SEARCH == 3:  # picked from registers (where, not a product: entries past the count hold junk)
                pick = u[:, None] == offs_u[None, :]
                start = tl.sum(tl.where(pick, starts_all[None, :], 0), axis=1)
                base = tl.sum(tl.where(pick, bases_all[None, :], 0), axis=1)
            else:
                start = tl.load(UStart + kvh * UMAX + u, mask=in_union, other=0)
                base = tl.load(row_pre + u, mask=in_union, other=0)
            packed = start + rows - base
            sel = g_mask[:, None] & live[None, :]
            if (SEARCH == 3) and (GROUP == 1):
                logc = tl.sum(tl.where(pick, logc_all[None, :], 0.0), axis=1)
                bias = tl.where(g_mask[:, None] & in_union[None, :], logc[None, :], 0.0) * 1.4426950408889634
            else:
                m_ptr = kvh * stride_uh + u[None, :] * stride_um + offs_g[:, None]
                bias = tl.load(ULogC + m_ptr, mask=g_mask[:, None] & in_union[None, :], other=0.0) * 1.4426950408889634
        # V rows are issued with K so both DRAM round trips overlap
        k = tl.load(PK + kv * stride_kh + packed[:, None] * stride_kn + offs_d[None, :],
                    mask=in_union[:, None], other=0.0)
        v = tl.load(PV + kv * stride_kh + packed[:, None] * stride_kn + offs_d[None, :],
                    mask=in_union[:, None], other=0.0)
        if SUFFIX:  # the exact suffix's rows follow the union's (masked loads, added in)
            srow = tl.where(in_suffix, rows - union_rows, 0)
            k += tl.load(SK + kv * stride_sk_h + srow[:, None] * stride_sk_n + offs_d[None, :],
                         mask=in_suffix[:, None], other=0.0)
            v += tl.load(SV + kv * stride_sk_h + srow[:, None] * stride_sk_n + offs_d[None, :],
                         mask=in_suffix[:, None], other=0.0)
        s = dot(q, tl.trans(k), DOT_PRECISION) * qk_scale_log2 - bias
        s = tl.where(sel, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.exp2(m_i - m_safe)
        p = tl.exp2(s - m_safe[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        if PV_FP32:  # validation mode: probabilities stay fp32 (no fp16 rounding of p)
            pv = dot(p, v.to(tl.float32), "ieee")
        else:
            pv = dot(p.to(v.dtype), v, DOT_PRECISION)
        acc = acc * alpha[:, None] + pv
        m_i = m_new
    tl.store(M_out + heads * stride_mh + split, m_i, mask=g_mask)
    tl.store(L_out + heads * stride_mh + split, l_i, mask=g_mask)
    tl.store(Acc_out + heads[:, None] * stride_ah + split * stride_as + offs_d[None, :], acc, mask=g_mask[:, None])
