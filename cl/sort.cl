/* Stable LSD radix sort of ulong keys with uint payloads, and an exclusive
 * prefix scan of uint values (OpenCL C 1.2, no extensions).
 *
 * Radix sort, one pass per RADIX_BITS-bit digit (host: hybridtree/tree/device_sort.py):
 *   radix_histogram  every work-group owns a tile of TILE = WG * ITEMS consecutive
 *                    elements and writes its digit counts digit-major,
 *                    hist[digit * n_tiles + tile];
 *   scan_*           one exclusive scan of hist turns every count into the global
 *                    output offset of that (digit, tile) pair; digit-major order
 *                    makes the tiles of one digit land in tile order, so the pass is
 *                    stable;
 *   radix_scatter    every work-group ranks the elements of its tile stably (rank =
 *                    number of earlier elements of the tile with the same digit)
 *                    and writes key and payload to offset + rank (in the tile's
 *                    sorted order with SORTED_STORES: coalesced stores on GPUs).
 *
 * Ranking within a tile: keys are loaded striped (element j * WG + lid goes to
 * work-item lid, so global loads coalesce) and their digits parked in local
 * memory; every work-item then walks a blocked run of ITEMS consecutive tile
 * positions and counts its digits in its own column of a local ushort counter
 * table, and one exclusive scan of that table (digit-major) gives every run its
 * starting rank per digit.  One scan per tile instead of one per WG-element chunk;
 * on PoCL this measured ~1.5x faster than one-hot counters packed into ulongs.
 *
 * Scan (reduce, then scan, then add): scan_reduce sums blocks of SCAN_BLOCK =
 * WG * SCAN_ITEMS values, scan_block_sums scans the block sums in one work-group
 * (any number of blocks, in chunks), scan_add scans every block again and adds its
 * block offset.
 *
 * Build-time defines: WG (work-group size, every kernel must be launched with
 * exactly WG work-items per group), ITEMS (keys per work-item and sort tile),
 * SCAN_ITEMS (values per work-item and scan block), RADIX_BITS (1..8), SORTED_STORES
 * (0 or 1, radix_scatter's order of stores).
 * Local memory of radix_scatter: about (4 or 8 with SORTED_STORES) * TILE
 * + 2 * 2^RADIX_BITS * WG bytes.
 * Counts and offsets are uint: n must stay below 2^31.
 */
#ifndef WG
#define WG 256
#endif
#ifndef ITEMS
#define ITEMS 16
#endif
#ifndef SCAN_ITEMS
#define SCAN_ITEMS 8
#endif
#ifndef RADIX_BITS
#define RADIX_BITS 4
#endif
#ifndef SORTED_STORES
#define SORTED_STORES 1
#endif

#define RADIX (1 << RADIX_BITS)
#define TILE (WG * ITEMS)
#define SCAN_BLOCK (WG * SCAN_ITEMS)

#if RADIX_BITS < 1 || RADIX_BITS > 8
#error "RADIX_BITS must be 1..8"
#endif
#if TILE > 65535
#error "WG * ITEMS must be below 65536: per-digit counts of a tile are ushort"
#endif
#if (WG & (WG - 1)) != 0
#error "WG must be a power of two (tree reduction in radix_histogram)"
#endif

/* One padding word per 32 keeps blocked accesses (stride ITEMS or SCAN_ITEMS
   words) from hitting the same local-memory bank on GPUs. */
#define PADDED(i) ((i) + ((i) >> 5))

#define REQD_WG __attribute__((reqd_work_group_size(WG, 1, 1)))

/* ---- work-group scan (every work-item must reach it) ------------------------- */

/* Inclusive scan of x over the work-group (Hillis-Steele, buf holds WG entries).
   On return buf[WG - 1] is the group total until the caller's next barrier. */
static uint wg_inclusive_scan(uint x, local uint *buf)
{
    const uint lid = get_local_id(0);
    buf[lid] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint off = 1; off < WG; off <<= 1) {
        const uint y = lid >= off ? buf[lid - off] : 0u;
        barrier(CLK_LOCAL_MEM_FENCE);
        x += y;
        buf[lid] = x;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return x;
}

/* ---- radix sort ------------------------------------------------------------- */

/* Per-work-item digit counters live in local memory as cnt[digit * WG + lid]:
   a work-item only ever touches its own column (no atomics), consecutive
   work-items hit consecutive ushorts (no bank conflicts on GPUs), and the
   digit-major flat order is exactly the order a stable rank needs. */
#define CNT(d, w) cnt[(d) * WG + (w)]

static uint digit_of(ulong key, uint shift, uint mask)
{
    return (uint)(key >> shift) & mask;
}

static void zero_counters(local ushort *cnt)
{
    for (uint d = 0; d < RADIX; ++d)
        CNT(d, get_local_id(0)) = 0;
}

/* hist[d * n_tiles + tile] = number of elements of the tile whose digit is d,
   for d = 0..mask (the last pass of a sort may have fewer than RADIX digits). */
REQD_WG kernel void radix_histogram(global const ulong *keys, uint n, uint shift, uint mask,
                                    uint n_tiles, global uint *hist)
{
    local ushort cnt[RADIX * WG];
    const uint lid = get_local_id(0);
    const uint tile = get_group_id(0);
    const uint start = tile * TILE;
    const uint count = min((uint)TILE, n - start);

    /* Counting is order-blind, so the striped (coalesced) layout is fine here. */
    zero_counters(cnt);
    for (uint j = 0; j < ITEMS; ++j) {
        const uint p = j * WG + lid;
        if (p < count)
            CNT(digit_of(keys[start + p], shift, mask), lid) += 1;
    }
    for (uint s = WG / 2; s > 0; s >>= 1) {   /* WG is a power of two */
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < s)
            for (uint d = 0; d < RADIX; ++d)
                CNT(d, lid) += CNT(d, lid + s);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint d = lid; d <= mask; d += WG)
        hist[d * n_tiles + tile] = CNT(d, 0);
}

/* Exclusive scan of the RADIX * WG counters in digit-major order: afterwards
   CNT(d, w) = (tile elements with a smaller digit) + (digit-d elements in the runs
   of work-items before w).  Totals stay <= TILE < 2^16. */
static void scan_counters(local ushort *cnt, local uint *buf)
{
    local ushort *mine = cnt + get_local_id(0) * RADIX;
    uint sum = 0;
    for (uint r = 0; r < RADIX; ++r)
        sum += mine[r];
    uint acc = wg_inclusive_scan(sum, buf) - sum;
    for (uint r = 0; r < RADIX; ++r) {
        const uint v = mine[r];
        mine[r] = (ushort)acc;
        acc += v;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* Stable scatter of one tile: element p of the tile goes to
   offsets[d * n_tiles + tile] + (number of tile elements before p with digit d).
   With first != 0 the payload is the element's input index (vals_in is not read).
   The ranks give each element its place q in the tile's sorted order.  SORTED_STORES = 1
   (GPUs): the writes go in that order (work-item lid writes places lid, lid + WG, ...),
   so that a digit's run of consecutive places lands in consecutive addresses and the
   stores coalesce (in input order a warp's 32 stores fall into up to RADIX runs);
   inv[q] is the input position of place q, whose key and payload are read from global
   memory again (the tile was just read: from the cache).  SORTED_STORES = 0 (CPUs,
   where the second read costs more than the scattered stores): each work-item writes
   the keys it loaded, in input order. */
REQD_WG kernel void radix_scatter(global const ulong *keys_in, global const uint *vals_in,
                                  uint first, uint n, uint shift, uint mask, uint n_tiles,
                                  global const uint *offsets,
                                  global ulong *keys_out, global uint *vals_out)
{
    local uint slot[PADDED(TILE)];   /* digit of each tile position (0: then its place) */
#if SORTED_STORES
    local uint inv[PADDED(TILE)];    /* input position of each place */
#endif
    local ushort cnt[RADIX * WG];
    local uint buf[WG];
    local uint base[RADIX];
    const uint lid = get_local_id(0);
    const uint tile = get_group_id(0);
    const uint start = tile * TILE;
    const uint count = min((uint)TILE, n - start);

#if !SORTED_STORES
    ulong key[ITEMS];
#endif
    for (uint j = 0; j < ITEMS; ++j) {
        const uint p = j * WG + lid;
#if SORTED_STORES
        slot[PADDED(p)] = p < count ? digit_of(keys_in[start + p], shift, mask) : 0u;
#else
        key[j] = p < count ? keys_in[start + p] : 0UL;
        slot[PADDED(p)] = digit_of(key[j], shift, mask);
#endif
    }
    zero_counters(cnt);
    barrier(CLK_LOCAL_MEM_FENCE);

    /* This work-item's blocked run: tile positions lid * ITEMS .. + ITEMS - 1. */
    const uint run = lid * ITEMS;
    for (uint t = 0; t < ITEMS; ++t) {
        const uint p = run + t;
        if (p < count)
            CNT(slot[PADDED(p)], lid) += 1;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    scan_counters(cnt, buf);

    /* Global start of digit d's elements minus their start within the tile
       (uint arithmetic wraps but base[d] + place is exact). */
    for (uint d = lid; d <= mask; d += WG)
        base[d] = offsets[d * n_tiles + tile] - CNT(d, 0);
    barrier(CLK_LOCAL_MEM_FENCE);     /* CNT(d, 0) is work-item 0's to count on below */

    /* Only this work-item touches its run's slots and its counter column; the places
       of all runs together are 0 .. count - 1, each once. */
    for (uint t = 0; t < ITEMS; ++t) {
        const uint p = run + t;
        if (p < count) {
            const uint d = slot[PADDED(p)];
            const uint r = CNT(d, lid);
            CNT(d, lid) = (ushort)(r + 1);
#if SORTED_STORES
            inv[PADDED(r)] = p;
#else
            slot[PADDED(p)] = base[d] + r;
#endif
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    for (uint j = 0; j < ITEMS; ++j) {
#if SORTED_STORES
        const uint q = j * WG + lid;
        if (q < count) {
            const uint p = inv[PADDED(q)];
            const uint dst = base[slot[PADDED(p)]] + q;
            keys_out[dst] = keys_in[start + p];
            vals_out[dst] = first ? start + p : vals_in[start + p];
        }
#else
        const uint p = j * WG + lid;
        if (p < count) {
            const uint dst = slot[PADDED(p)];
            keys_out[dst] = key[j];
            vals_out[dst] = first ? start + p : vals_in[start + p];
        }
#endif
    }
}

/* ---- exclusive scan of uint values ------------------------------------------- */

/* Exclusive scan, in place, of a block of SCAN_BLOCK values held in tile (stored
   at PADDED positions and visible to all work-items); returns the block total. */
static uint block_exclusive_scan(local uint *tile, local uint *buf)
{
    const uint run = get_local_id(0) * SCAN_ITEMS;
    uint sum = 0;
    for (uint t = 0; t < SCAN_ITEMS; ++t)
        sum += tile[PADDED(run + t)];
    uint acc = wg_inclusive_scan(sum, buf) - sum;
    const uint total = buf[WG - 1];
    for (uint t = 0; t < SCAN_ITEMS; ++t) {
        const uint v = tile[PADDED(run + t)];
        tile[PADDED(run + t)] = acc;
        acc += v;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    return total;
}

/* Coalesced load of values[start ..] into tile, zeros past n. */
static void load_block(local uint *tile, global const uint *values, uint start, uint n)
{
    const uint lid = get_local_id(0);
    for (uint j = 0; j < SCAN_ITEMS; ++j) {
        const uint p = j * WG + lid;
        tile[PADDED(p)] = start + p < n ? values[start + p] : 0u;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* block_sums[g] = sum of values[g * SCAN_BLOCK ..] (up to SCAN_BLOCK of them). */
REQD_WG kernel void scan_reduce(global const uint *values, uint n, global uint *block_sums)
{
    local uint buf[WG];
    const uint lid = get_local_id(0);
    const uint start = get_group_id(0) * SCAN_BLOCK;
    uint sum = 0;
    for (uint j = 0; j < SCAN_ITEMS; ++j) {
        const uint i = start + j * WG + lid;
        if (i < n)
            sum += values[i];
    }
    const uint incl = wg_inclusive_scan(sum, buf);
    if (lid == WG - 1)
        block_sums[get_group_id(0)] = incl;
}

/* One work-group: sums[0..m) := their exclusive scan, sums[m] := their total. */
REQD_WG kernel void scan_block_sums(global uint *sums, uint m)
{
    local uint tile[PADDED(SCAN_BLOCK)];
    local uint buf[WG];
    const uint lid = get_local_id(0);
    uint carry = 0;
    for (uint start = 0; start < m; start += SCAN_BLOCK) {
        load_block(tile, sums, start, m);
        const uint total = block_exclusive_scan(tile, buf);
        for (uint j = 0; j < SCAN_ITEMS; ++j) {
            const uint p = j * WG + lid;
            if (start + p < m)
                sums[start + p] = tile[PADDED(p)] + carry;
        }
        carry += total;
        barrier(CLK_LOCAL_MEM_FENCE);   /* the next load overwrites tile */
    }
    if (lid == 0)
        sums[m] = carry;
}

/* out[i] = exclusive scan of values at i, using the scanned block sums;
   out[n] = the total (sums[number of blocks]). */
REQD_WG kernel void scan_add(global const uint *values, uint n, global const uint *sums,
                             global uint *out)
{
    local uint tile[PADDED(SCAN_BLOCK)];
    local uint buf[WG];
    const uint lid = get_local_id(0);
    const uint group = get_group_id(0);
    const uint start = group * SCAN_BLOCK;
    load_block(tile, values, start, n);
    block_exclusive_scan(tile, buf);
    const uint offset = sums[group];
    for (uint j = 0; j < SCAN_ITEMS; ++j) {
        const uint p = j * WG + lid;
        if (start + p < n)
            out[start + p] = tile[PADDED(p)] + offset;
    }
    if (group == 0 && lid == 0)
        out[n] = sums[get_num_groups(0)];
}
