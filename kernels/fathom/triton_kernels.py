"""Fathom's Triton launches: plan (water-filling), gather (host planes -> HBM staging), scan.

Planes are uint64 bit patterns carried as int64. The plan packs the active channels' planes
densely in the staging buffer: channel j's first t_j planes go to words
``dst[j] = nb * sum_{i<j} t_i`` onward, so the scan reads one contiguous run per channel.
"""

from __future__ import annotations

import triton
import triton.language as tl

POLICY_WATER, POLICY_TOP_Q, POLICY_ALL = 0, 1, 2


@triton.jit
def fathom_plan(
    Q, Var, Depth, Dst, Active, ActDepth, ActDst, NActive, Theta, Work, budget,
    stride_qh, stride_vh, n_blocks,
    GROUP: tl.constexpr, BLOCK_G: tl.constexpr, D: tl.constexpr, STEPS: tl.constexpr,
    POLICY: tl.constexpr, CHANNELS: tl.constexpr,
):
    """Grid (Hkv,): per-channel read depths for the query group, staging offsets, and the
    compact list of active channels (ascending) with their depths, offsets and count, so the scan
    visits only those and loads a channel's channel, depth and offset without a dependent load.
    Also zeroes the head's count of scanned tiles (``Work[2 + head]``, see ``fathom_scan``).

    POLICY 0 (Fathom): g_j = sum_h q_j^2 Var_j, theta by STEPS bisections on log theta, depths
    clip(round(log4(g/theta)), 0, 4) with sum <= budget. POLICY 1 (SparQ-style): the CHANNELS
    channels with the largest group-summed |q_j| (ties to the lower index) at depth 4.
    POLICY 2: every channel at depth 4.
    """
    kvh = tl.program_id(0)
    offs_g = tl.arange(0, BLOCK_G)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + (kvh * GROUP + offs_g)[:, None] * stride_qh + offs_d[None, :],
                mask=(offs_g < GROUP)[:, None], other=0.0).to(tl.float32)
    if POLICY == 0:
        var = tl.load(Var + kvh * stride_vh + offs_d)
        g = tl.sum(q * q, axis=0) * var
        pos = g > 0
        lo = tl.min(tl.where(pos, g, float("inf")), axis=0) * 0.0009765625  # 4^-5
        hi = tl.max(g, axis=0) * 4.0
        inv_ln4 = 0.7213475204444817
        for _ in range(STEPS):
            mid = tl.sqrt(lo * hi)
            t = tl.floor(tl.log(tl.where(pos, g, 1.0) / mid) * inv_ln4 + 0.5)
            t = tl.where(pos, tl.minimum(tl.maximum(t, 0.0), 4.0), 0.0)
            over = tl.sum(t, axis=0) > budget
            lo = tl.where(over, mid, lo)
            hi = tl.where(over, hi, mid)
        t = tl.floor(tl.log(tl.where(pos, g, 1.0) / hi) * inv_ln4 + 0.5)
        t = tl.where(pos, tl.minimum(tl.maximum(t, 0.0), 4.0), 0.0).to(tl.int32)
        tl.store(Theta + kvh, hi)
    elif POLICY == 1:
        mag = tl.sum(tl.abs(q), axis=0)
        bits = mag.to(tl.int32, bitcast=True)  # |q| sums are >= 0: int order is float order
        key = (bits.to(tl.int64) << 32) | (D - 1 - offs_d).to(tl.int64)  # ties: lower channel first
        kth = tl.sum(tl.where(offs_d == CHANNELS - 1, tl.sort(key, descending=True), 0), axis=0)
        t = tl.where(key >= kth, 4, 0).to(tl.int32)
        tl.store(Theta + kvh, 0.0)
    else:
        t = tl.full([D], 4, dtype=tl.int32)
        tl.store(Theta + kvh, 0.0)
    tl.store(Depth + kvh * D + offs_d, t)
    tl.store(Dst + kvh * D + offs_d, (tl.cumsum(t, axis=0) - t) * n_blocks)
    on = (t > 0).to(tl.int32)
    slot = kvh * D + tl.cumsum(on, axis=0) - on
    tl.store(Active + slot, offs_d, mask=on > 0)
    tl.store(ActDepth + slot, t, mask=on > 0)
    tl.store(ActDst + slot, (tl.cumsum(t, axis=0) - t) * n_blocks, mask=on > 0)
    tl.store(NActive + kvh, tl.sum(on, axis=0))
    tl.store(Work + 2 + kvh, 0)


@triton.jit
def fathom_gather(
    Planes, Scales, Depth, Dst, Staged, StagedScales,
    n_blocks, staged_words,
    stride_ph, stride_pd, stride_sh, stride_sd,
    D: tl.constexpr, CHUNK: tl.constexpr,
):
    """Grid (chunks, D, Hkv): copy channel j's first t_j planes (one run of t_j * nb words) and,
    for active channels, its scales. Inactive channels have a zero-length run.

    The chunk index is the fastest-varying program id, so programs resident at the same time
    read neighbouring addresses of the store (memory order: head, channel, plane word); reading
    pinned host memory in scattered 8 KB pieces across the whole store halves the PCIe rate.
    """
    chunk = tl.program_id(0)
    j = tl.program_id(1)
    kvh = tl.program_id(2).to(tl.int64)  # head offsets pass 2^31 words beyond ~16M tokens at Hkv 8
    t = tl.load(Depth + kvh * D + j)
    length = t * n_blocks
    start = chunk * CHUNK
    if start < length:
        dst = tl.load(Dst + kvh * D + j)
        offs = start + tl.arange(0, CHUNK)
        live = offs < length
        words = tl.load(Planes + kvh * stride_ph + j * stride_pd + offs, mask=live)
        tl.store(Staged + kvh * staged_words + dst + offs, words, mask=live)
        if start < n_blocks:
            s_live = offs < n_blocks
            sc = tl.load(Scales + kvh * stride_sh + j * stride_sd + offs, mask=s_live)
            tl.store(StagedScales + kvh * stride_sh + j * stride_sd + offs, sc, mask=s_live)


@triton.jit
def _channel_meta(Active, ActDepth, ActDst, kvh, c, n_active, D: tl.constexpr):
    """Channel, depth and staging offset of the c-th active channel (depth 0 past the list)."""
    live = c < n_active
    j = tl.load(Active + kvh * D + c, mask=live, other=0)
    t = tl.load(ActDepth + kvh * D + c, mask=live, other=0)
    dst = tl.load(ActDst + kvh * D + c, mask=live, other=0)
    return j, t, dst


@triton.jit
def _channel_words(Words32, Scales, Q, kvh, j, t, dst, half, hb_live, blk, heads, g_mask, n_blocks,
                   stride_wh, stride_wd, stride_qh, stride_sh, stride_sd, FUSED: tl.constexpr):
    """One channel's plane half-words per 32-token half-block (0 past its depth: absent low bits of
    the code), its block scales (0 when the channel is past the list) and the group's q_j.

    The planes come from the staging buffer (channel at word ``dst``) or, FUSED, straight from
    the store (channel ``j``, wherever it lives: pinned host memory over PCIe, or HBM); either way
    plane p of the channel starts p * n_blocks words further on.
    """
    off = j * stride_wd if FUSED else dst
    base = Words32 + 2 * (kvh.to(tl.int64) * stride_wh + off) + half  # 64-bit: past 16M tokens at Hkv 8
    depth = tl.where(hb_live, t, 0)  # as a tensor: the interpreter mis-types tensor & scalar masks
    w0 = tl.load(base, mask=depth > 0, other=0)
    w1 = tl.load(base + 2 * n_blocks, mask=depth > 1, other=0)
    w2 = tl.load(base + 4 * n_blocks, mask=depth > 2, other=0)
    w3 = tl.load(base + 6 * n_blocks, mask=depth > 3, other=0)
    a = tl.load(Scales + kvh * stride_sh + j * stride_sd + blk, mask=depth > 0, other=0.0)
    qj = tl.load(Q + heads * stride_qh + j, mask=g_mask, other=0.0)
    return w0, w1, w2, w3, a, qj


@triton.jit
def _accumulate(acc, bias, w0, w1, w2, w3, a, qj, t, lane):
    """Add one channel's dequantised prefix values times q_j to the [G, 32, half-blocks] scores."""
    code = (w0[None, :] >> lane[:, None]) & 1
    code = code * 2 + ((w1[None, :] >> lane[:, None]) & 1)
    code = code * 2 + ((w2[None, :] >> lane[:, None]) & 1)
    code = code * 2 + ((w3[None, :] >> lane[:, None]) & 1)
    value = (code | 0x4B000000).to(tl.float32, bitcast=True) - 8388608.0
    wq = qj.to(tl.float32)[:, None] * (a.to(tl.float32) * 0.125)[None, :]
    bias += wq * (tl.exp2((3 - t).to(tl.float32)) - 8.0)
    acc += wq[:, None, :] * value[None, :, :]
    return acc, bias


@triton.jit
def _smid():
    """The SM this program runs on (PTX %smid)."""
    return tl.inline_asm_elementwise("mov.u32 $0, %smid;", "=r", [], dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def fathom_scan(
    Q, Words32, Scales, Active, ActDepth, ActDst, NActive, Scores, ChunkMax, Work,
    n, n_blocks, stride_wh, stride_wd,
    stride_qh, stride_sh, stride_sd, stride_oh, stride_ch, n_tiles, tiles_per_head,
    GROUP: tl.constexpr, BLOCK_G: tl.constexpr, D: tl.constexpr, BLOCKS: tl.constexpr, FUSED: tl.constexpr,
    AHEAD: tl.constexpr, RESERVE: tl.constexpr,
):
    """Persistent workers (any grid): each takes tiles from a queue (``Work[0]``) until none are
    left; tile i is KV head i // tiles_per_head, blocks (i % tiles_per_head) * BLOCKS onward, so
    the heads finish in order. After a tile, its head's count ``Work[2 + head]`` goes up (a
    release: the tile's scores and chunk maxima are visible to whoever sees the count), so a
    head's top-k can start on a second stream while the scan goes on with later heads, with no
    launch boundary between them. The last worker to leave empties the queue (``Work[0..1]``)
    for the next launch; the plan zeroes the head counts.

    RESERVE > 0: workers landing on SMs below it leave at once (except the last worker, so the
    scan always progresses), keeping those SMs for the selection launches: a top-k program
    needs a whole SM's registers, and scan tiles turn over too slowly to give it one.
    """
    worker = tl.program_id(0)
    workers = tl.num_programs(0)
    if RESERVE > 0:
        active = (_smid() >= RESERVE) | (worker == workers - 1)
    else:
        active = worker >= 0
    if active:
        tile = tl.atomic_add(Work, 1)
        while tile < n_tiles:
            kvh = tile // tiles_per_head
            _scan_tile(Q, Words32, Scales, Active, ActDepth, ActDst, NActive, Scores, ChunkMax, kvh,
                       (tile % tiles_per_head) * BLOCKS, n, n_blocks, stride_wh, stride_wd, stride_qh, stride_sh,
                       stride_sd, stride_oh, stride_ch, GROUP, BLOCK_G, D, BLOCKS, FUSED, AHEAD)
            tl.debug_barrier()  # every thread's stores of the tile come before the count
            tl.atomic_add(Work + 2 + kvh, 1, sem="release", scope="gpu")
            tile = tl.atomic_add(Work, 1)
    if tl.atomic_add(Work + 1, 1, sem="acq_rel", scope="gpu") == workers - 1:
        tl.atomic_xchg(Work, 0)
        tl.atomic_xchg(Work + 1, 0)


@triton.jit
def _scan_tile(
    Q, Words32, Scales, Active, ActDepth, ActDst, NActive, Scores, ChunkMax, kvh, b0,
    n, n_blocks, stride_wh, stride_wd,
    stride_qh, stride_sh, stride_sd, stride_oh, stride_ch,
    GROUP: tl.constexpr, BLOCK_G: tl.constexpr, D: tl.constexpr, BLOCKS: tl.constexpr, FUSED: tl.constexpr,
    AHEAD: tl.constexpr,
):
    """Approximate scores of BLOCKS x 64 tokens (from block ``b0``) for the G heads of KV head
    ``kvh``, one active channel at a time, its loads issued AHEAD (1 or 2) channels ahead of its
    arithmetic; also each 32-token chunk's best score per head (the top-k's first, pruning pass
    reads only those). ``Words32`` is the staging buffer (``stride_wh`` words per head) or, FUSED,
    the store's planes (``stride_wh``, ``stride_wd`` words per head and channel): the fused scan
    is its own gather, and reading host memory over PCIe it needs many bytes in flight (a
    depth-1 channel gives a program only ~300 of them per step: hence AHEAD 2).

    Why it is cheap per token: planes are read as int32 halves (tokens 0-31 and 32-63 of a block),
    so extracting a bit is a 32-bit shift and mask; missing planes read as 0 bits, which makes the
    decoded code c4 = c_t * 2^(4-t) and the t-bit mid-rise value (c4 + 2^(3-t) - 8) * a / 8 with
    no per-depth select; the code becomes a float by or-ing it into 2^23's mantissa (no int-to-
    float conversion); and the per-block term q_j a (2^(3-t) - 8) / 8 is summed once per block,
    not per token. Per token and channel: 4 x (shift, mask, shift-add), or, subtract, G FMAs.
    """
    offs_hb = tl.arange(0, 2 * BLOCKS)
    blk = b0 + offs_hb // 2
    hb_live = blk < n_blocks
    half = 2 * b0 + offs_hb  # int32 word of this half-block within a plane run
    lane = tl.arange(0, 32)
    offs_g = tl.arange(0, BLOCK_G)
    g_mask = offs_g < GROUP
    heads = kvh * GROUP + offs_g
    n_active = tl.load(NActive + kvh)
    # in flight at the top of step c: channel c's words (w*), with AHEAD 2 channel c + 1's (p*),
    # and the metadata of the next channel to issue (j, t, dst): no load waits on another
    j, t, dst = _channel_meta(Active, ActDepth, ActDst, kvh, 0, n_active, D)
    w0, w1, w2, w3, a, qj = _channel_words(Words32, Scales, Q, kvh, j, t, dst, half, hb_live, blk, heads, g_mask,
                                           n_blocks, stride_wh, stride_wd, stride_qh, stride_sh, stride_sd, FUSED)
    t_cur = t
    j, t, dst = _channel_meta(Active, ActDepth, ActDst, kvh, 1, n_active, D)
    pw0, pw1, pw2, pw3, pa, pq, pt = w0, w1, w2, w3, a, qj, t_cur  # AHEAD 1: never read
    if AHEAD == 2:
        pw0, pw1, pw2, pw3, pa, pq = _channel_words(Words32, Scales, Q, kvh, j, t, dst, half, hb_live, blk, heads,
                                                    g_mask, n_blocks, stride_wh, stride_wd, stride_qh, stride_sh,
                                                    stride_sd, FUSED)
        pt = t
        j, t, dst = _channel_meta(Active, ActDepth, ActDst, kvh, 2, n_active, D)
    # tiles are [bit, half-block] with the half-blocks fastest: a warp's threads spread over
    # half-blocks and each thread keeps several bits (tokens) of one half-word, so every plane
    # word a thread loads serves several tokens (bit-fastest tiles gave one token per load)
    acc = tl.zeros([BLOCK_G, 32, 2 * BLOCKS], dtype=tl.float32)
    bias = tl.zeros([BLOCK_G, 2 * BLOCKS], dtype=tl.float32)
    for c in range(0, n_active):
        # channel c + AHEAD's loads first, so they are in flight during channel c's arithmetic
        nw0, nw1, nw2, nw3, na, nq = _channel_words(Words32, Scales, Q, kvh, j, t, dst, half, hb_live, blk, heads,
                                                    g_mask, n_blocks, stride_wh, stride_wd, stride_qh, stride_sh,
                                                    stride_sd, FUSED)
        nt = t
        j, t, dst = _channel_meta(Active, ActDepth, ActDst, kvh, c + 1 + AHEAD, n_active, D)
        acc, bias = _accumulate(acc, bias, w0, w1, w2, w3, a, qj, t_cur, lane)
        if AHEAD == 1:
            w0, w1, w2, w3, a, qj, t_cur = nw0, nw1, nw2, nw3, na, nq, nt
        else:
            w0, w1, w2, w3, a, qj, t_cur = pw0, pw1, pw2, pw3, pa, pq, pt
            pw0, pw1, pw2, pw3, pa, pq, pt = nw0, nw1, nw2, nw3, na, nq, nt
    acc += bias[:, None, :]
    tok = half[None, :] * 32 + lane[:, None]
    live = tok < n
    best = tl.max(acc + tl.where(live, 0.0, float("-inf"))[None], axis=1)
    tl.store(Scores + heads[:, None, None] * stride_oh + tok[None, :, :], acc, mask=g_mask[:, None, None] & live[None])
    tl.store(ChunkMax + heads[:, None] * stride_ch + half[None, :], best,
             mask=g_mask[:, None] & (half * 32 < n)[None, :])


@triton.jit
def fathom_fetch_rows(
    K, V, SortedRows, First, Slot, UK, UV,
    n_entries, stride_kh, stride_kn, stride_uh, stride_un,
    D: tl.constexpr, ROWS: tl.constexpr, PAIRED: tl.constexpr,
):
    """Grid (Hkv, cdiv(G*k, ROWS)): copy each distinct winner row once (K and V, from host or
    HBM) into the KV head's union buffer at its union slot. PAIRED: V follows K in both the
    source and the union buffer, so a row is one 2d-wide run (one load, one store)."""
    kvh = tl.program_id(0).to(tl.int64)  # a head's rows span 2^31 elements past ~1M tokens (Hkv 8, d 128)
    offs = tl.program_id(1) * ROWS + tl.arange(0, ROWS)
    live = offs < n_entries
    first = tl.load(First + kvh * n_entries + offs, mask=live, other=0) != 0
    row = tl.load(SortedRows + kvh * n_entries + offs, mask=live & first, other=0)
    slot = tl.load(Slot + kvh * n_entries + offs, mask=live & first, other=0)
    m = (live & first)[:, None]
    src = kvh * stride_kh + row[:, None] * stride_kn
    dst = kvh * stride_uh + slot[:, None] * stride_un
    if PAIRED:
        offs_kv = tl.arange(0, 2 * D)[None, :]
        tl.store(UK + dst + offs_kv, tl.load(K + src + offs_kv, mask=m), mask=m)
    else:
        offs_d = tl.arange(0, D)[None, :]
        tl.store(UK + dst + offs_d, tl.load(K + src + offs_d, mask=m), mask=m)
        tl.store(UV + dst + offs_d, tl.load(V + src + offs_d, mask=m), mask=m)


@triton.jit
def fathom_attend(
    Q, UK, UV, HeadSlots, PartM, PartL, PartAcc,
    k_top, qk_scale_log2,
    stride_qh, stride_uh, stride_un, stride_sh, stride_ph,
    GROUP: tl.constexpr, D: tl.constexpr, BLOCK_R: tl.constexpr,
):
    """Grid (Hq, cdiv(k, BLOCK_R)): one head's softmax partials over one tile of its winners (read
    from the union buffer): running max (log2 units), sum of exponentials and weighted V.

    A tile per program puts every tile's loads in flight at once, where one program per head
    would walk its tiles one after another, and the dense decode's split merge
    (``kernels/common/split_kv_combine.py``) rescales and adds the tiles.
    """
    h = tl.program_id(0)
    split = tl.program_id(1)
    kvh = h // GROUP
    offs_d = tl.arange(0, D)
    q = tl.load(Q + h * stride_qh + offs_d).to(tl.float32)
    offs_r = split * BLOCK_R + tl.arange(0, BLOCK_R)
    live = offs_r < k_top
    slot = tl.load(HeadSlots + h * stride_sh + offs_r, mask=live, other=0)
    rows = kvh * stride_uh + slot[:, None] * stride_un + offs_d[None, :]
    kk = tl.load(UK + rows, mask=live[:, None], other=0.0).to(tl.float32)
    vv = tl.load(UV + rows, mask=live[:, None], other=0.0).to(tl.float32)
    s = tl.where(live, tl.sum(kk * q[None, :], axis=1) * qk_scale_log2, float("-inf"))
    m = tl.max(s, axis=0)
    p = tl.exp2(s - m)
    tl.store(PartM + h * stride_ph + split, m)
    tl.store(PartL + h * stride_ph + split, tl.sum(p, axis=0))
    tl.store(PartAcc + (h * stride_ph + split) * D + offs_d, tl.sum(p[:, None] * vv, axis=0))
