"""Fathom's selection launches: the exact chunk-pruned top-k per query head, and the union of
winners per KV head. Both replace chains of torch launches (two radix top-ks and four gathers;
a segmented sort, compare, cumsum and scatter) with one Triton program per row.

Top-k works on order-preserving int32 keys of the fp32 scores and finds the k-th largest key by
bisection or radix select over a register-resident row, then writes the
selected positions in ascending order with one prefix sum: ties at the threshold are taken
lowest position first, so the result is exactly one of the valid top-k sets.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _order_key(x):
    """fp32 -> int32 with the same order (negative floats have their magnitude bits flipped)."""
    b = x.to(tl.int32, bitcast=True)
    return b ^ ((b >> 31) & 0x7FFFFFFF)


@triton.jit
def _threshold(key, k, floor, RADIX_BITS: tl.constexpr, SEARCH: tl.constexpr):
    """The k-th largest key T and how many keys equal to T the top k take (k minus the count
    above T). Dead lanes carry the smallest int32, below every float's key, so they never count.

    RADIX_BITS 0: bisection, each step a block-wide count; SEARCH 0 over the whole int32 range
    (32 steps), SEARCH 1 from ``floor`` (at least k keys are >= it) to the largest finite key,
    stopping early when a count is exactly k (every key >= that mid is then taken). Otherwise
    radix select, 32 / RADIX_BITS rounds, each one histogram of the
    next RADIX_BITS bits over the keys sharing T's bits so far. Keys outside that prefix go to bin
    0, whose count is never read (only bins above the chosen digit are): T's digit is 0 exactly
    when bins 1.. hold fewer keys than the rank still wanted. Fewer rounds, but Triton's histogram
    costs grow with the bins, so bracketed bisection (SEARCH 1) is the default.
    """
    if RADIX_BITS == 0:
        if SEARCH == 0:
            lo = tl.min(key, axis=0).to(tl.int64)
            hi = tl.max(key, axis=0).to(tl.int64)
            for _ in range(32):
                mid = lo + (hi - lo + 1) // 2
                enough = tl.sum((key >= mid.to(tl.int32)).to(tl.int32), axis=0) >= k
                lo = tl.where(enough, mid, lo)
                hi = tl.where(enough, hi, mid - 1)
            thresh = lo.to(tl.int32)
        else:
            thresh = _bracketed_bisection(key, k, floor)
        rank = k - tl.sum((key > thresh).to(tl.int32), axis=0)
    else:
        thresh, rank = _radix_threshold(key, k, RADIX_BITS)
    return thresh, rank


@triton.jit
def _bracketed_bisection(key, k, floor):
    """``_threshold``'s SEARCH 1: T within [floor, largest finite key] (the largest key when k or
    more are +inf); a mid with exactly k keys >= it ends the search early, as T: the count above
    it then leaves exactly as many to take at it as there are keys equal to it."""
    inf_key = 2139095040  # +inf's key: forced tokens and chunks carry it
    n_inf = tl.sum((key >= inf_key).to(tl.int32), axis=0)
    top = tl.where(n_inf >= k, tl.max(key, axis=0), tl.max(tl.where(key < inf_key, key, -2147483648), axis=0))
    hi = top.to(tl.int64)
    lo = tl.minimum(floor.to(tl.int64), hi)
    exact = lo > hi  # false: a scalar flag, set when a count hits k exactly
    while (lo < hi) & (exact == 0):
        mid = lo + (hi - lo + 1) // 2
        count = tl.sum((key >= mid.to(tl.int32)).to(tl.int32), axis=0)
        exact = count == k
        lo = tl.where(count >= k, mid, lo)
        hi = tl.where(count >= k, hi, mid - 1)
    return lo.to(tl.int32)


@triton.jit
def _group_floor(key, BLOCK: tl.constexpr, GROUPS: tl.constexpr):
    """min over GROUPS strided groups (key i in group i % GROUPS) of each group's max: with
    GROUPS >= k, at least k keys (one per group) are >= it, so it bounds the k-th largest below."""
    return tl.min(tl.max(tl.reshape(key, [BLOCK // GROUPS, GROUPS]), axis=0), axis=0)


@triton.jit
def _radix_threshold(key, k, RADIX_BITS: tl.constexpr):
    """``_threshold`` by radix select (RADIX_BITS > 0)."""
    n_bins: tl.constexpr = 1 << RADIX_BITS
    bins = tl.arange(0, n_bins)
    prefix = tl.zeros([], dtype=tl.int32)
    rank = k + tl.zeros([], dtype=tl.int32)
    for r in tl.static_range(32 // RADIX_BITS):
        shift = 32 - RADIX_BITS * (r + 1)
        digit = (key >> shift) & (n_bins - 1)
        if r == 0:
            digit = digit ^ (n_bins // 2)  # signed order of the top digit -> unsigned bins
            hist = tl.histogram(digit, n_bins)
        else:
            same = (key >> (shift + RADIX_BITS)) == (prefix >> (shift + RADIX_BITS))
            hist = tl.histogram(tl.where(same, digit, 0), n_bins)
        at_least = tl.sum(hist, axis=0) - tl.cumsum(hist, axis=0) + hist  # keys with digit >= bin (bin > 0)
        d = tl.max(tl.where(at_least >= rank, bins, 0), axis=0)
        rank -= tl.sum(tl.where(bins > d, hist, 0), axis=0)
        if r == 0:
            d = d ^ (n_bins // 2)
        prefix = prefix | (d << shift)
    return prefix, rank


@triton.jit
def _compact(key, thresh, need, base_gt, base_eq, Out, values, live):
    """Store ``values`` of the selected elements of one tile at their ranks: every key above the
    threshold, and the first ``need`` (over all tiles) equal to it. Returns the updated counts.

    One prefix sum serves both counts (above in the low 16 bits, equal in the high ones): a
    selected element's rank is (above so far) + min(equal so far, need) - 1.
    """
    gt = live & (key > thresh)
    eq = live & (key == thresh)
    s = tl.cumsum(gt.to(tl.int32) + eq.to(tl.int32) * 65536, axis=0)
    c_gt = base_gt + (s & 0xFFFF)
    c_eq = base_eq + (s >> 16)
    sel = gt | (eq & (c_eq <= need))
    tl.store(Out + c_gt + tl.minimum(c_eq, need) - 1, values, mask=sel)
    return base_gt + tl.sum(gt.to(tl.int32), axis=0), base_eq + tl.sum(eq.to(tl.int32), axis=0)


@triton.jit
def _chunk_keys(ChunkMax, h, offs, n, n_chunks, stride_ch, CHUNK: tl.constexpr, RECENT: tl.constexpr):
    """Keys of chunk maxima; chunks holding a forced token (the first, and the last RECENT tokens) rank first."""
    live = offs < n_chunks
    m = tl.load(ChunkMax + h * stride_ch + offs, mask=live, other=float("-inf"))
    forced = live & ((offs == 0) | ((offs + 1) * CHUNK > n - RECENT))
    return _order_key(tl.where(forced, float("inf"), m)), live


@triton.jit
def _token_keys(Scores, ChunkSel, h, offs, n, k, stride_sh, CHUNK: tl.constexpr, SINK: tl.constexpr,
                RECENT: tl.constexpr):
    """Keys and token ids of the selected chunks' tokens; forced tokens rank first."""
    c = offs // CHUNK
    live = c < k
    chunk = tl.load(ChunkSel + h * k + c, mask=live, other=0)
    tok = chunk * CHUNK + offs % CHUNK
    s = tl.load(Scores + h * stride_sh + tok, mask=live, other=float("-inf"))  # padded row: no bound check
    forced = live & ((tok < SINK) | ((tok >= n - RECENT) & (tok < n)))
    return _order_key(tl.where(forced, float("inf"), s)), tok, live


@triton.jit
def fathom_topk(
    Scores, ChunkMax, ChunkSel, TopIdx, Scanned, Expired, SortedRows, First, Slot, HeadSlots, Arrived,
    n, n_chunks, k, stride_sh, stride_ch, stride_th, tiles, max_polls, n_entries, stride_hs,
    CHUNK: tl.constexpr, SINK: tl.constexpr, RECENT: tl.constexpr,
    BLOCK_C: tl.constexpr, BLOCK_T: tl.constexpr, TILE: tl.constexpr, RADIX_BITS: tl.constexpr,
    SEARCH: tl.constexpr, WAIT: tl.constexpr, GROUP: tl.constexpr, UNION: tl.constexpr, BLOCK_E: tl.constexpr,
    SEARCH_STEPS: tl.constexpr, GATHER: tl.constexpr = 0,
):
    """Grid (Hq,): the exact top-k tokens of one head, ascending, with forced tokens first.

    Pass 1 picks the k chunks with the best maxima (``ChunkSel``, ascending); pass 2 the k best
    of their k x CHUNK tokens. Exact: a top-k token's chunk has a max at least its score, and an
    unpicked chunk loses only to k picked chunks that each hold a token scoring at least as high.
    Rows of ``Scores`` are padded to whole chunks with -inf. BLOCK_C >= n_chunks and
    BLOCK_T >= k * CHUNK are powers of two; TILE divides both and bounds each prefix sum.

    WAIT: first wait until the scan running beside it has finished this head's KV head
    (``Scanned[h // GROUP]`` reaches ``tiles``, an acquire: the scan releases each count after
    the tile's stores). A wait gives up after ``max_polls`` reads and adds one to ``Expired``
    (the result is then not valid), so a bug costs seconds, not a hung device.

    UNION: the last of a KV head's G programs to finish (``Arrived``, which it resets) also
    builds that head's union (``_union``): one launch fewer per step, and no launch gap between
    the two on the step's critical path.
    """
    tl.static_assert(TILE <= 16384, "the packed prefix sum keeps tile counts in 16 bits")
    tl.static_assert(SINK <= CHUNK, "pass 1 forces only the first chunk for the sink tokens")
    h = tl.program_id(0)
    if WAIT:
        polls = 0
        while (tl.atomic_add(Scanned + h // GROUP, 0, sem="acquire", scope="gpu") < tiles) & (polls < max_polls):
            polls += 1
        if polls >= max_polls:
            tl.atomic_add(Expired, 1)
        tl.debug_barrier()
    groups: tl.constexpr = BLOCK_T // CHUNK  # a power of two >= k
    key, live = _chunk_keys(ChunkMax, h, tl.arange(0, BLOCK_C), n, n_chunks, stride_ch, CHUNK, RECENT)
    key = tl.where(live, key, -2147483648)
    chunk_thresh, need = _threshold(key, k, _group_floor(key, BLOCK_C, groups), RADIX_BITS, SEARCH)
    base_gt = tl.zeros([], dtype=tl.int32)
    base_eq = tl.zeros([], dtype=tl.int32)
    for t0 in tl.static_range(0, BLOCK_C, TILE):
        offs = t0 + tl.arange(0, TILE)
        key, live = _chunk_keys(ChunkMax, h, offs, n, n_chunks, stride_ch, CHUNK, RECENT)
        base_gt, base_eq = _compact(key, chunk_thresh, need, base_gt, base_eq, ChunkSel + h * k, offs, live)
    tl.debug_barrier()  # pass 2 reads the chunk list this program's threads just wrote

    key, tok, live = _token_keys(Scores, ChunkSel, h, tl.arange(0, BLOCK_T), n, k, stride_sh, CHUNK, SINK, RECENT)
    key = tl.where(live, key, -2147483648)
    # the k-th best chunk max bounds the k-th best score below: k chosen chunks each hold a token
    # scoring at least it
    floor = tl.maximum(chunk_thresh, _group_floor(key, BLOCK_T, groups))
    thresh, need = _threshold(key, k, floor, RADIX_BITS, SEARCH)
    base_gt = tl.zeros([], dtype=tl.int32)
    base_eq = tl.zeros([], dtype=tl.int32)
    for t0 in tl.static_range(0, BLOCK_T, TILE):
        offs = t0 + tl.arange(0, TILE)
        key, tok, live = _token_keys(Scores, ChunkSel, h, offs, n, k, stride_sh, CHUNK, SINK, RECENT)
        base_gt, base_eq = _compact(key, thresh, need, base_gt, base_eq, TopIdx + h * stride_th, tok.to(tl.int64),
                                    live)
    if UNION:
        tl.debug_barrier()  # the whole list is stored before the count says so
        kvh = h // GROUP
        if tl.atomic_add(Arrived + kvh, 1, sem="acq_rel", scope="gpu") == GROUP - 1:
            tl.atomic_xchg(Arrived + kvh, 0)
            _union(TopIdx, SortedRows, First, Slot, HeadSlots, kvh, k, n_entries, stride_th, stride_hs, GROUP,
                   BLOCK_E, SEARCH_STEPS, GATHER)


@triton.jit
def fathom_union(
    TopIdx, SortedRows, First, Slot, HeadSlots,
    k, n_entries, stride_th, stride_hs,
    GROUP: tl.constexpr, BLOCK_E: tl.constexpr, SEARCH_STEPS: tl.constexpr, GATHER: tl.constexpr = 0,
):
    """Grid (Hkv,): the union of each KV head's winners (``_union``) as a launch of its own."""
    _union(TopIdx, SortedRows, First, Slot, HeadSlots, tl.program_id(0), k, n_entries, stride_th, stride_hs,
           GROUP, BLOCK_E, SEARCH_STEPS, GATHER)


@triton.jit
def _union(
    TopIdx, SortedRows, First, Slot, HeadSlots, kvh,
    k, n_entries, stride_th, stride_hs,
    GROUP: tl.constexpr, BLOCK_E: tl.constexpr, SEARCH_STEPS: tl.constexpr, GATHER: tl.constexpr = 0,
):
    """Merge KV head ``kvh``'s G ascending winner lists into one sorted list of G*k entries
    (``SortedRows``), flag each distinct row's first entry (``First``), number the distinct rows
    (``Slot``, per sorted entry) and give every head its winners' union slots (``HeadSlots``).

    An entry's merged position is its index in its own list plus, for every other list, the
    count of smaller rows found by binary search (equal rows of lower heads count too, so
    duplicates sit together, lowest head first). SEARCH_STEPS >= log2(k + 1). The winner lists
    are read from L2 (``.cg``): inside the top-k launch, other programs wrote them.

    GATHER 0: every search step loads from the lists in L2 (G x (SEARCH_STEPS + 1) dependent rounds
    of G x k loads, all from this one SM). GATHER 1: the lists are read once, as the entries
    themselves (entry (a, i) is list a's i-th row), and each step gathers from that register copy
    (``tl.gather``, through shared memory), and each entry's slot from the numbering in registers.
    """
    offs = tl.arange(0, BLOCK_E)
    live = offs < n_entries
    a = offs // k
    i = offs % k
    x = tl.load(TopIdx + (kvh * GROUP + a) * stride_th + i, mask=live, other=0, cache_modifier=".cg")
    pos = i
    first = live
    for b in tl.static_range(GROUP):
        row = TopIdx + (kvh * GROUP + b) * stride_th
        lo = tl.zeros([BLOCK_E], dtype=tl.int32)
        hi = tl.zeros([BLOCK_E], dtype=tl.int32) + k
        for _ in tl.static_range(SEARCH_STEPS):  # lower bound: first index with row[idx] >= x
            mid = (lo + hi) // 2
            if GATHER == 1:
                at = tl.gather(x, tl.minimum(b * k + mid, BLOCK_E - 1), 0)
                smaller = live & (mid < k) & (at < x)
            else:
                smaller = tl.load(row + mid, mask=live & (mid < k), other=9223372036854775807,
                                  cache_modifier=".cg") < x
            lo = tl.where(smaller, mid + 1, lo)
            hi = tl.where(smaller, hi, mid)
        if GATHER == 1:
            found = live & (lo < k) & (tl.gather(x, tl.minimum(b * k + lo, BLOCK_E - 1), 0) == x)
        else:
            found = tl.load(row + lo, mask=live & (lo < k), other=-1, cache_modifier=".cg") == x
        pos += tl.where(b < a, lo + found.to(tl.int32), tl.where(b > a, lo, 0))
        first = first & ~(found & (b < a))
    tl.store(SortedRows + kvh * n_entries + pos, x, mask=live)
    tl.store(First + kvh * n_entries + pos, first, mask=live)
    tl.debug_barrier()  # the numbering below reads the flags in merged order
    f = tl.load(First + kvh * n_entries + offs, mask=live, other=0).to(tl.int32)
    numbered = (tl.cumsum(f, axis=0) - 1).to(tl.int64)
    tl.store(Slot + kvh * n_entries + offs, numbered, mask=live)
    if GATHER == 1:
        slot = tl.gather(numbered, tl.minimum(pos, BLOCK_E - 1), 0)
    else:
        tl.debug_barrier()
        slot = tl.load(Slot + kvh * n_entries + pos, mask=live, other=0)
    tl.store(HeadSlots + (kvh * GROUP + a) * stride_hs + i, slot, mask=live)
