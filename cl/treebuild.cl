/* Octree build on the device (OpenCL C 1.2): the same tree as hybridtree/tree/octree.py.
 *
 * Input: particles as float4 hi/lo pairs relative to the centre of a cube whose side is a
 * power of two (so that the key scaling and every cell centre are exact in float32).
 * Pipeline (hybridtree/tree/device_build.py drives it):
 *   morton_keys (or prepare.cl's split_keys) -> radix sort (sort.cl) -> count_cells ->
 *   scan -> fill_cells -> gather (or prepare.cl's split_gather) -> cell_moments once per
 *   level, deepest first.  The counts and scans are kept in the buffers the gather fills
 *   last (the particles' hi/lo pairs), so that they cost no memory of their own.
 * A refit (hybridtree/gravity/tree/refit.py) keeps the cells and redoes only the last
 * step for moved particles: split_gather (prepare.cl) -> cell_moments with ext.
 *
 * Why per particle: cells are stored in pre-order, i.e. sorted by (first particle, level).
 * Every cell that starts at particle i has a level above D(i), the number of leading
 * octal digits that keys i-1 and i share; the cells starting at i form one chain that
 * ends in a leaf.  So one work-item per particle can count (and later write) the cells
 * that start there, and a prefix sum of those counts places every cell: the index of
 * the first cell starting at or after particle p is offset[p], hence next[c] =
 * offset[start + count].  A cell exists when its parent holds more than NMAX particles;
 * a level-21 cell that still holds more (coincident keys) is cut into pseudo-children
 * (level 22) of NMAX consecutive particles, as on the host.
 *
 * Defines: QUAD (0 monopole, 1 quadrupole), PER_EPS (a softening per particle in the w of
 * its lo part: cell_moments also writes cell_eps, cl/walkcommon.cl), GUARDF (2.8: a mixed
 * cell is opened within GUARDF times its largest eps; measured on a disk softened 20x less
 * than its halo, p99 of the disk's error 6e-4 with 2.8, 4e-3 with 1, 1.3e-2 with 0).
 */
#define MAXL 21                 /* deepest level the 63-bit keys resolve */
#define HALF_SCALE 1048576.0f   /* 2^20 = half of the 2^21 integer cells per axis */

#ifndef QUAD
#define QUAD 0
#endif
#ifndef PER_EPS
#define PER_EPS 0
#endif
#ifndef GUARDF
#define GUARDF 2.8f
#endif

#include "morton.cl"

/* Inverse of spread3: every third bit, compacted. */
inline uint compact3(ulong v)
{
    v &= 0x1249249249249249UL;
    v = (v | (v >> 2)) & 0x10C30C30C30C30C3UL;
    v = (v | (v >> 4)) & 0x100F00F00F00F00FUL;
    v = (v | (v >> 8)) & 0x1F0000FF0000FFUL;
    v = (v | (v >> 16)) & 0x1F00000000FFFFUL;
    v = (v | (v >> 32)) & 0x1FFFFFUL;
    return (uint)v;
}

/* The Morton key of a hi/lo pair (relative to the cube centre); scale: the key scale. */
inline ulong pair_key(const float4 h, const float4 l, const float scale)
{
    return (spread3(grid_coord(h.x, l.x, scale)) << 2)
         | (spread3(grid_coord(h.y, l.y, scale)) << 1)
         | spread3(grid_coord(h.z, l.z, scale));
}

/* cube_f: the cube's side and the key scale 2^21 / side (cl/prepare.cl extent_cube, or
   the host's cube). */
__kernel void morton_keys(const int n, __global const float4 *pos_hi,
                          __global const float4 *pos_lo, __global const float *cube_f,
                          __global ulong *keys)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    keys[i] = pair_key(pos_hi[i], pos_lo[i], cube_f[1]);
}

/* Particles into tree order: out[i] = in[order[i]]. */
__kernel void gather(const int n, __global const uint *order,
                     __global const float4 *in_hi, __global const float4 *in_lo,
                     __global float4 *out_hi, __global float4 *out_lo)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    const uint j = order[i];
    out_hi[i] = in_hi[j];
    out_lo[i] = in_lo[j];
}

/* Number of leading octal digits that two keys share (MAXL when equal). */
inline int common_digits(const ulong a, const ulong b)
{
    const ulong x = a ^ b;
    return x == 0 ? MAXL : ((int)clz(x) - 1) / 3;   /* bit 63 is always 0 */
}

/* Last key of the level-L cell that holds key k. */
inline ulong cell_last_key(const ulong k, const int level)
{
    const int shift = 3 * (MAXL - level);
    return level == 0 ? 0x7FFFFFFFFFFFFFFFUL : (((k >> shift) + 1) << shift) - 1;
}

/* First index j in [lo, hi) with keys[j] > v (hi when none). */
inline int upper_bound(__global const ulong *keys, int lo, int hi, const ulong v)
{
    while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        if (keys[mid] <= v) lo = mid + 1; else hi = mid;
    }
    return lo;
}

/* First index j in [lo, hi) with keys[j] >= v. */
inline int lower_bound(__global const ulong *keys, int lo, int hi, const ulong v)
{
    while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        if (keys[mid] < v) lo = mid + 1; else hi = mid;
    }
    return lo;
}

/* First index j in [lo, hi) with keys[j] > v (hi when none), found by steps doubling
   from lo and a binary search of the last step: O(log(j - lo)) reads near lo, where a
   plain binary search over the whole array reads log2(n) scattered keys. */
inline int gallop_upper(__global const ulong *keys, const int lo, const int hi, const ulong v)
{
    int a = lo, b = lo, step = 1;           /* keys[lo, a) <= v */
    while (b < hi && keys[b] <= v) {
        a = b + 1;
        b += min(step, hi - b);
        step <<= 1;
    }
    return upper_bound(keys, a, b, v);     /* b == hi or keys[b] > v */
}

/* What a tree keeps of a cell besides its link (next, first particle, leaf count or 0,
   radius bits) and moments: levels[c], its level.  A cell's first particle is link.y, a
   leaf's count link.z (0: not a leaf); cell_info makes the LET's int4 rows from these. */

/* The cells that start at particle i, for leaves of at most nmax particles.
   Returns how many; when write != 0 also stores them from cell index base on.
   *leaf_count gets the size of the leaf that ends the chain (0 if no cell starts at i). */
inline int cells_at(const int i, const int n, __global const ulong *keys, const int nmax,
                    const int write, const int base, __global const uint *offset,
                    __global int *levels, __global int4 *link, int *leaf_count)
{
    const ulong k = keys[i];
    const int d = i == 0 ? -1 : common_digits(keys[i - 1], k);
    *leaf_count = 0;
    if (d == MAXL) {          /* inside a level-21 cell: only a pseudo-child can start here */
        const int s = lower_bound(keys, 0, i, k);
        const int e = upper_bound(keys, i, n, k);
        if (e - s <= nmax || (i - s) % nmax != 0) return 0;
        const int c = min(nmax, e - i);
        if (write) {
            levels[base] = MAXL + 1;
            link[base] = (int4)((int)offset[i + c], i, c, 0);
        }
        *leaf_count = c;
        return 1;
    }
    if (d >= 0) {             /* the parent (level d, holding i - 1 too) must be split */
        /* Only whether it holds more than nmax matters, so the searches stay within
           nmax + 1 of i: a bound they hit already makes e - s > nmax, and most
           particles (no cell starts there) end here after a few nearby reads. */
        const ulong first = (k >> (3 * (MAXL - d))) << (3 * (MAXL - d));
        const int s = lower_bound(keys, i - min(i, nmax + 1), i, first);
        const int e = upper_bound(keys, i, i + min(n - i, nmax + 1), cell_last_key(k, d));
        if (e - s <= nmax) return 0;
    }
    int m = 0, end = n;       /* a cell ends no later than its parent */
    for (int level = d + 1; level <= MAXL; ++level) {
        end = gallop_upper(keys, i, end, cell_last_key(k, level));
        const int c = end - i;
        const int leaf = c <= nmax;
        if (write) {
            levels[base + m] = level;
            link[base + m] = (int4)((int)offset[i + c], i, leaf ? c : 0, 0);
        }
        ++m;
        if (leaf) {
            *leaf_count = c;
            return m;
        }
    }
    /* a level-21 cell with more than nmax particles: its first pseudo-child starts here */
    const int c = min(nmax, gallop_upper(keys, i, end, k) - i);
    if (write) {
        levels[base + m] = MAXL + 1;
        link[base + m] = (int4)((int)offset[i + c], i, c, 0);
    }
    *leaf_count = c;
    return m + 1;
}

/* n_start[i]: cells that start at particle i; optional (each may be NULL): leaf_flag[i]
   = 1 and leaf_size[size_at + i] = its size when a leaf starts at i, else 0 (size_at: a
   build keeps the sizes behind the flags' scan in one buffer, device_build.py). */
__kernel void count_cells(const int n, __global const ulong *keys, const int nmax,
                          __global uint *n_start, __global uint *leaf_flag,
                          __global uint *leaf_size, const uint size_at)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    int lc;
    const int cells = cells_at(i, n, keys, nmax, 0, 0, 0, 0, 0, &lc);
    if (n_start) n_start[i] = (uint)cells;
    if (leaf_flag) leaf_flag[i] = lc > 0;
    if (leaf_size) leaf_size[(size_t)size_at + (size_t)i] = (uint)lc;
}

__kernel void fill_cells(const int n, __global const ulong *keys, const int nmax,
                         __global const uint *offset, __global int *levels, __global int4 *link)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    int lc;
    cells_at(i, n, keys, nmax, 1, (int)offset[i], offset, levels, link, &lc);
}

/* Leaves of the split with at most nmax particles, in key order: (start, count). */
__kernel void fill_leaves(const int n, __global const uint *leaf_size, const uint size_at,
                          __global const uint *offset, __global int2 *leaves)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    const uint c = leaf_size[(size_t)size_at + (size_t)i];
    if (c > 0) leaves[offset[i]] = (int2)(i, (int)c);
}

/* Level of the parent cell of the leaf [s, s + c) of a split (-1: the leaf is the root):
   the parent holds more particles than the leaf, contiguous with it in key order, so it
   is the deepest cell the leaf shares with particle s - 1 or s + c.  MAXL: a
   pseudo-child (a chunk of a clump of equal keys). */
inline int leaf_parent_level(const int2 leaf, const int n, __global const ulong *keys)
{
    int pl = -1;
    if (leaf.x > 0)
        pl = common_digits(keys[leaf.x - 1], keys[leaf.x]);
    if (leaf.x + leaf.y < n)
        pl = max(pl, common_digits(keys[leaf.x + leaf.y - 1], keys[leaf.x + leaf.y]));
    return pl;
}

/* Whether leaves a and b (a before b) are children of the same cell, at level pl of a's parent. */
inline int siblings(const int2 a, const int pl, const int2 b, const int n,
                    __global const ulong *keys)
{
    if (pl >= MAXL || leaf_parent_level(b, n, keys) != pl)
        return 0;
    return pl <= 0 || (keys[a.x] >> (3 * (MAXL - pl))) == (keys[b.x] >> (3 * (MAXL - pl)));
}

/* Integer key-coordinate box of the particles of a leaf. */
inline void leaf_box(const int2 leaf, __global const ulong *keys, int4 *lo, int4 *hi)
{
    *lo = (int4)(INT_MAX);
    *hi = (int4)(INT_MIN);
    for (int p = leaf.x; p < leaf.x + leaf.y; p++) {
        const ulong k = keys[p];
        const int4 c = (int4)((int)compact3(k >> 2), (int)compact3(k >> 1), (int)compact3(k), 0);
        *lo = min(*lo, c);
        *hi = max(*hi, c);
    }
}

/* box[2 i], box[2 i + 1]: the lower and upper corner of leaf i's key box (leaf_box), one
   work-item per leaf, so that pack_leaves reads each box instead of a run's first leaf
   computing all its siblings' boxes in turn. */
__kernel void leaf_boxes(const int n_leaves, __global const int2 *leaves,
                         __global const ulong *keys, __global int4 *box)
{
    const int i = get_global_id(0);
    if (i >= n_leaves) return;
    int4 lo, hi;
    leaf_box(leaves[i], keys, &lo, &hi);
    box[2 * i] = lo;
    box[2 * i + 1] = hi;
}

/* Size of a box for packing: the sum of its three sides. */
inline int box_side(const int4 lo, const int4 hi)
{
    return (hi.x - lo.x) + (hi.y - lo.y) + (hi.z - lo.z);
}

/* Sink groups from the leaves of a split with at most nmax per leaf: consecutive siblings
   merged greedily while the group holds at most nmax particles and its key box (sum of
   sides) stays within spread.x / spread.y times that of its largest leaf box and within
   spread.z / spread.w times the sum of its leaves' (siblings diagonally opposite in their
   parent would hold the cells between them: PACK_UNION; hybridtree.tree.octree's
   packed_leaf_ranges does the same on the host).  The first leaf of every run of siblings
   (at most 8; pseudo-children stand alone) sets group_flag for its run: 1 where a group
   starts.
   box: the leaves' key boxes (leaf_boxes). */
__kernel void pack_leaves(const int n_leaves, __global const int2 *leaves, const int n,
                          __global const ulong *keys, __global const int4 *box,
                          const int nmax, const int4 spread, __global uint *group_flag)
{
    const int i = get_global_id(0);
    if (i >= n_leaves) return;
    const int2 leaf = leaves[i];
    const int pl = leaf_parent_level(leaf, n, keys);
    if (i > 0) {
        const int2 prev = leaves[i - 1];
        if (siblings(prev, leaf_parent_level(prev, n, keys), leaf, n, keys))
            return;             /* not the first of its run */
    }
    group_flag[i] = 1;
    int fill = leaf.y;
    int4 glo = box[2 * i], ghi = box[2 * i + 1];
    int gside = box_side(glo, ghi);
    long gsum = gside;                  /* the sum of the group's leaves' sums */
    for (int j = i + 1; j < n_leaves && siblings(leaf, pl, leaves[j], n, keys); j++) {
        const int c = leaves[j].y;
        const int4 lo = box[2 * j], hi = box[2 * j + 1];
        const int4 nlo = min(glo, lo), nhi = max(ghi, hi);
        const int side = box_side(lo, hi);
        const int nside = max(gside, side);
        const long u = box_side(nlo, nhi);
        const int start = fill + c > nmax || spread.y * u > spread.x * (long)nside
                          || spread.w * u > spread.z * (gsum + side);
        group_flag[j] = start;
        fill = start ? c : fill + c;
        glo = start ? lo : nlo;
        ghi = start ? hi : nhi;
        gside = start ? side : nside;
        gsum = start ? side : gsum + side;
    }
}

/* (first particle, count) of every group: leaves from a flagged one to the next flag. */
__kernel void fill_groups(const int n_leaves, __global const int2 *leaves,
                          __global const uint *group_flag, __global const uint *offset,
                          __global int2 *groups)
{
    const int i = get_global_id(0);
    if (i >= n_leaves || !group_flag[i]) return;
    int count = leaves[i].y;
    for (int j = i + 1; j < n_leaves && !group_flag[j]; j++)
        count += leaves[j].y;
    groups[offset[i]] = (int2)(leaves[i].x, count);
}

/* a + b as an unevaluated float pair (Knuth's TwoSum, no ordering assumption). */
inline float2 two_sum(const float a, const float b)
{
    const float s = a + b;
    const float bb = s - a;
    return (float2)(s, (a - (s - bb)) + (b - bb));
}

inline void add_quad(float *q, const float3 d, const float m)
{
    const float r2 = dot(d, d);
    q[0] += m * (3.0f * d.x * d.x - r2);
    q[1] += m * (3.0f * d.y * d.y - r2);
    q[2] += m * (3.0f * d.z * d.z - r2);
    q[3] += m * 3.0f * d.x * d.y;
    q[4] += m * 3.0f * d.x * d.z;
    q[5] += m * 3.0f * d.y * d.z;
}

/* Integer coordinates of the level-geo cell (geo <= MAXL) that holds key k. */
inline uint3 key_coords(const ulong k, const int geo)
{
    const int sh = MAXL - geo;
    return (uint3)(compact3(k >> 2) >> sh, compact3(k >> 1) >> sh, compact3(k) >> sh);
}

/* Geometric centre (relative to the cube centre) and side of the cell of integer
   coordinates u at level geo <= MAXL.  Exact in float32: the cube's side is a power of
   two. */
inline float3 coords_centre(const uint3 u, const int geo, const float side, float *side_l)
{
    *side_l = side / (float)(1 << geo);
    return (float3)((float)u.x + 0.5f, (float)u.y + 0.5f, (float)u.z + 0.5f) * *side_l
           - 0.5f * side;
}

/* keys[key_at + c] = the Morton key of cell c's first particle, from its hi/lo pair in
   tree order (the tree as built: morton_keys of that pair is its sorted key), for every
   cell: what a refit needs of the keys once their buffer holds the inverse order
   (device_build.py inverse_order writes it in the first half, these behind it). */
__kernel void cell_keys(const int n_cells, const int key_at, __global const int4 *link,
                        __global const float4 *src_hi, __global const float4 *src_lo,
                        __global const float *cube_f, __global ulong *keys)
{
    const int c = get_global_id(0);
    if (c >= n_cells) return;
    const int p = link[c].y;
    keys[(size_t)key_at + (size_t)c] = pair_key(src_hi[p], src_lo[p], cube_f[1]);
}

/* Moments of every cell of one level (children are done: launched deepest level first).
   Sums are taken relative to the cell's exact geometric centre; the centre of mass is
   stored as a hi/lo pair relative to the cube centre, as the walk expects.

   ext NULL: a build, whose particles lie in their cells' cubes (side l).  ext given: a
   refit (hybridtree/gravity/tree/refit.py: the cells kept, the particles moved): ext
   (floats 6c ... 6c + 5) gets cell c's box, its lower then upper corner relative to its
   geometric centre (a leaf: the bounding box of its particles; else that of its
   children's boxes).  S_eff and the bounding radius then take the tighter of two cubes
   that hold every particle, which is all the opening tests assume (a build's
   guarantee, kept): the cell's cube grown about its geometric centre to l_eff = 2 h (h:
   the max-norm distance of the box's faces from that centre), or the cube about the
   box's centre of side max(l, its longest side), s measured from that centre (never
   tighter than the build's cube, whose accuracy at theta the refit keeps).  A cell
   whose box lies in its cube keeps the build's l and centre, so a refit of unmoved
   particles gives the build's bits.  The moved cube follows particles that moved
   together (a disk's rotation), for which a cube grown about the old centre opens over
   the whole displacement.
   key_at < 0: a cell's key is keys[its first particle] (the sorted keys); else
   keys[key_at + c] (cell_keys: a refit once the keys' buffer holds the inverse order). */
__kernel void cell_moments(const int n_cells, const int level, __global const float *cube_f,
                           const float inv_theta, __global const ulong *keys,
                           const int key_at, __global const float4 *src_hi,
                           __global const float4 *src_lo,
                           __global const int *levels, __global int4 *link,
                           __global float4 *cell_hi, __global float4 *cell_lo,
                           __global float *ext
#if PER_EPS
                           , __global float4 *cell_eps   /* mean eps^2, max, min eps, guard */
#endif
#if QUAD
                           , __global float8 *cell_quad
#endif
                           )
{
    const int c = get_global_id(0);
    if (c >= n_cells) return;
    if (levels[c] != level) return;
    const int4 lk = link[c];
    const int first = lk.y, leaf_count = lk.z;      /* leaf_count 0: not a leaf */
    const float side = cube_f[0];
    float side_l;
    const int geo = min(level, MAXL);
    const uint3 u = key_coords(keys[key_at < 0 ? first : key_at + c], geo);
    const float3 centre = coords_centre(u, geo, side, &side_l);
    const int end = lk.x;
    float m = 0.0f;
    float3 dm = (float3)(0.0f);
    /* a refit's box of the particles, relative to the geometric centre */
    float3 box_lo = (float3)(INFINITY), box_hi = (float3)(-INFINITY);
#if PER_EPS
    float me2 = 0.0f, e_max = 0.0f, e_min = INFINITY;   /* sum of m eps^2; extremes */
#endif
    if (leaf_count) {
        for (int j = first; j < first + leaf_count; ++j) {
            const float4 h = src_hi[j];
            const float4 l = src_lo[j];
            const float3 d = (h.xyz - centre) + l.xyz;
            m += h.w;
            dm += h.w * d;
#if PER_EPS
            me2 += h.w * (l.w * l.w);
            e_max = fmax(e_max, l.w);
            e_min = fmin(e_min, l.w);
#endif
            if (ext) {
                box_lo = fmin(box_lo, d);
                box_hi = fmax(box_hi, d);
            }
        }
    } else {
        for (int ch = c + 1; ch < end; ch = link[ch].x) {
            const float4 h = cell_hi[ch];
            const float3 d = (h.xyz - centre) + cell_lo[ch].xyz;
            m += h.w;
            dm += h.w * d;
#if PER_EPS
            const float4 ce = cell_eps[ch];
            me2 += h.w * ce.x;
            e_max = fmax(e_max, ce.y);
            e_min = fmin(e_min, ce.z);
#endif
            if (ext) {
                const int cgeo = min(levels[ch], MAXL);
                const uint3 cu = key_coords(keys[key_at < 0 ? link[ch].y : key_at + ch], cgeo);
                float side_ch;
                const float3 a = coords_centre(cu, cgeo, side, &side_ch) - centre;
                box_lo = fmin(box_lo, a + vload3(2 * ch, ext));
                box_hi = fmax(box_hi, a + vload3(2 * ch + 1, ext));
            }
        }
    }
    const float3 off = m > 0.0f ? dm / m : (float3)(0.0f);
    const float2 x = two_sum(centre.x, off.x), y = two_sum(centre.y, off.y),
                 z = two_sum(centre.z, off.z);
    float side_eff = side_l;
    float s = length(off);
    if (ext) {
        /* an empty cell (no particle: the box inverted) keeps its cube */
        if (!(box_lo.x <= box_hi.x)) box_lo = box_hi = (float3)(0.0f);
        vstore3(box_lo, 2 * c, ext);
        vstore3(box_hi, 2 * c + 1, ext);
        const float3 mid = 0.5f * (box_lo + box_hi);
        /* the box's cube: its half side, rounded up so that mid +- it holds lo and hi */
        const float3 half3 = 0.5f * (box_hi - box_lo);
        const float box_h = fmax(half3.x, fmax(half3.y, half3.z)) * 1.000001f
                            + 2e-7f * (fabs(mid.x) + fabs(mid.y) + fabs(mid.z));
        const float3 far3 = fmax(fabs(box_lo), fabs(box_hi));
        const float h = fmax(far3.x, fmax(far3.y, far3.z));     /* about the cell's centre */
        /* the children's roundings (~1e-6 of their sides) do not count as leaving */
        if (h > 0.5f * side_l * 1.00001f) {
            const float grown = 2.0f * h, s_box = length(off - mid);
            /* never tighter than the build's cube: a build's accuracy at theta */
            const float moved = fmax(side_l, 2.0f * box_h);
            if (moved * inv_theta + s_box < grown * inv_theta + s) {
                side_eff = moved;
                s = s_box;
            } else {
                side_eff = grown;
            }
        }
    }
    const float b = side_eff * inv_theta + s;
#if PER_EPS
    /* mixed softenings: opened within 2.8 times the largest (cl/walkcommon.cl) */
    cell_eps[c] = (float4)(m > 0.0f ? me2 / m : e_max * e_max, e_max, e_min,
                           e_min < e_max ? GUARDF * e_max : 0.0f);
#endif
    cell_hi[c] = (float4)(x.s0, y.s0, z.s0, m);
    cell_lo[c] = (float4)(x.s1, y.s1, z.s1, b * b);
    /* bounding radius about the centre of mass, rounded up, for the hard walk's cut-off */
    link[c].w = as_int((s + 0.8660254f * side_eff) * 1.000001f);
#if QUAD
    const float3 ch_ = (float3)(x.s0, y.s0, z.s0), cl_ = (float3)(x.s1, y.s1, z.s1);
    float q[6] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    if (leaf_count) {
        for (int j = first; j < first + leaf_count; ++j) {
            const float4 h = src_hi[j];
            add_quad(q, (h.xyz - ch_) + (src_lo[j].xyz - cl_), h.w);
        }
    } else {
        for (int ch = c + 1; ch < end; ch = link[ch].x) {
            const float4 h = cell_hi[ch];
            const float8 qc = cell_quad[ch];
            q[0] += qc.s0; q[1] += qc.s1; q[2] += qc.s2;
            q[3] += qc.s3; q[4] += qc.s4; q[5] += qc.s5;
            add_quad(q, (h.xyz - ch_) + (cell_lo[ch].xyz - cl_), h.w);
        }
    }
    cell_quad[c] = (float8)(q[0], q[1], q[2], q[3], q[4], q[5], 0.0f, 0.0f);
#endif
}

/* Bounding boxes of the sink groups: centre (hi, lo = 0; the lo part's w: the smallest
   softening of the group's sinks, the w of their lo parts) and half sides, enlarged so
   that the float32 rounding of hi + lo cannot put a sink outside its box. */
__kernel void group_boxes(const int n_groups, __global const int2 *groups,
                          __global const float4 *snk_hi, __global const float4 *snk_lo,
                          __global float4 *g_hi, __global float4 *g_lo, __global float4 *g_half)
{
    const int g = get_global_id(0);
    if (g >= n_groups) return;
    const int2 r = groups[g];
    float3 lo = (float3)(INFINITY), hi = (float3)(-INFINITY);
    float e_min = INFINITY;            /* the smallest sink softening (PER_EPS walks) */
    for (int j = r.x; j < r.x + r.y; ++j) {
        const float3 p = snk_hi[j].xyz + snk_lo[j].xyz;
        lo = fmin(lo, p);
        hi = fmax(hi, p);
        e_min = fmin(e_min, snk_lo[j].w);
    }
    const float3 c = 0.5f * (lo + hi);
    const float3 big = fmax(fabs(lo), fabs(hi));
    g_hi[g] = (float4)(c, 0.0f);
    g_lo[g] = (float4)(0.0f, 0.0f, 0.0f, r.y > 0 ? e_min : 0.0f);
    g_half[g] = (float4)(0.5f * (hi - lo) * 1.000001f + 3e-7f * big + 1e-30f, 0.0f);
}

/* info[c] = (first particle, count, level, is_leaf) of cell c (cl/let.cl's rows), from
   its link and level: a cell's particles end where the next cell after its subtree
   starts (n after the last). */
__kernel void cell_info(const int n_cells, const int n, __global const int *levels,
                        __global const int4 *link, __global int4 *info)
{
    const int c = get_global_id(0);
    if (c >= n_cells) return;
    const int4 lk = link[c];
    const int end = lk.x < n_cells ? link[lk.x].y : n;
    info[c] = (int4)(lk.y, end - lk.y, levels[c], lk.z != 0);
}

__kernel void iota(const int n, __global int *out)
{
    const int i = get_global_id(0);
    if (i < n) out[i] = i;
}

/* Walk results back into the caller's order: out[order[i]] = res[i]. */
__kernel void unsort(const int n, __global const uint *order, __global const float4 *res,
                     __global const int2 *cnt, __global float4 *out, __global int2 *out_cnt)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    const uint j = order[i];
    out[j] = res[i];
    out_cnt[j] = cnt[i];
}
