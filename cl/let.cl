/* Many processes with the state on the device (hybridtree/parallel/device_let.py and
 * migrate.py): the LET a process sends to each other process's box, sink groups that hold
 * local particles, and the compaction of particles that change domain.  OpenCL C 1.2
 * with cl_khr_fp64 (the device state needs it anyway).
 *
 * LET selection without a walk: the host walk visits a cell when no ancestor of it was
 * accepted, skipped or a leaf ("closed").  In pre-order, the descendants of cell a are the
 * cells a + 1 .. next[a] - 1, so every closed non-leaf cell marks +1 at a + 1 and -1 at
 * next[a]; after a prefix sum a cell is visited exactly when its sum is 0.  One pass
 * over (box, cell) pairs, one scan, one pass to count and one to fill: no levels, no
 * stack.  Per box the marks of a segment sum to zero, so one scan over all boxes'
 * segments (C + 1 entries each) gives every segment its own sums.
 */
/* double needs cl_khr_fp64: the host builds this file only where the device reports it
   (Runtime.has_fp64); elsewhere a clear error instead of one per double. */
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#else
#error "let.cl needs double precision (cl_khr_fp64), which this device lacks"
#endif
#pragma OPENCL FP_CONTRACT OFF

#ifndef HARD
#define HARD 0
#endif
/* PERIODIC = 1: a periodic cube of side BOX_L (a double literal) with the boxes and
   positions in [0, BOX_L]: distances are to the nearest image, HARD's cut is TreePM's
   r_cut, and a cell that some other image could bring within r_cut of a sink (its radius
   plus r_cut reaches half the box) is never sent as a pseudo-particle, because the
   receiver's walk takes a point mass on its nearest image only. */
#ifndef PERIODIC
#define PERIODIC 0
#endif

#define LET_NONE 0
#define LET_CELL 1
#define LET_LEAF 2

/* Distance of coordinate x from the interval [lo, hi] along one axis (0 inside); in a
   periodic cube the nearest of x - L, x, x + L (box and x in [0, L]) */
inline double axis_d(const double lo, const double hi, const double x)
{
    const double d = fmax(fmax(lo - x, 0.0), x - hi);
#if PERIODIC
    const double up = fmax(fmax(lo - (x + (BOX_L)), 0.0), (x + (BOX_L)) - hi);
    const double down = fmax(fmax(lo - (x - (BOX_L)), 0.0), (x - (BOX_L)) - hi);
    return fmin(d, fmin(up, down));
#else
    return d;
#endif
}

/* Squared distance of a point from the box bx (lo xyz, hi xyz; 0 inside) */
inline double box_d2(__global const double *bx, const double x, const double y, const double z)
{
    const double dx = axis_d(bx[0], bx[3], x);
    const double dy = axis_d(bx[1], bx[4], y);
    const double dz = axis_d(bx[2], bx[5], z);
    return (dx * dx + dy * dy) + dz * dz;
}

/* Decision of cell c for box b (boxes: lo xyz, hi xyz per box, the caller's float64
   coordinates); the cell's centre of mass as the host reads it back (hi + lo + centre). */
__kernel void let_decide(const int n_cells, const int n_boxes, __global const double *boxes,
                         const double cx, const double cy, const double cz, const double r_out,
                         __global const float4 *cell_hi, __global const float4 *cell_lo,
                         __global const int4 *info, __global const int4 *link,
                         __global int *marks, __global uchar *decision)
{
    const size_t gid = get_global_id(0);
    if (gid >= (size_t)n_cells * n_boxes)
        return;
    const int b = (int)(gid / n_cells), c = (int)(gid % n_cells);
    const float4 h = cell_hi[c], l = cell_lo[c];
    const double px = ((double)h.x + (double)l.x) + cx;
    const double py = ((double)h.y + (double)l.y) + cy;
    const double pz = ((double)h.z + (double)l.z) + cz;
    const double d2 = box_d2(boxes + 6 * b, px, py, pz);
    const int4 ci = info[c], lk = link[c];
#if PERIODIC
    const int accept = d2 > (double)l.w && r_out + (double)as_float(lk.w) < 0.5 * (BOX_L);
#else
    const int accept = d2 > (double)l.w;
#endif
    int skip = 0;
#if HARD
    const double reach = r_out + (double)as_float(lk.w);
    skip = d2 > reach * reach;
#endif
    const int leaf = ci.w != 0;
    decision[gid] = skip ? LET_NONE : (accept ? LET_CELL : (leaf ? LET_LEAF : LET_NONE));
    if ((accept || skip) && !leaf) {      /* its subtree is hidden from the box */
        __global int *seg = marks + (size_t)b * (n_cells + 1);
        atomic_add(seg + c + 1, 1);
        atomic_sub(seg + lk.x, 1);
    }
}

/* Whether particle i of an opened leaf travels to box b: always for the full LET; for
   the hard LET only within r_out of the box (beyond it the hard force is exactly zero
   for every sink in the box). */
inline int travels(__global const double *bx, __global const double *pos, const size_t i,
                   const double r_out)
{
#if HARD
    return box_d2(bx, pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]) <= r_out * r_out;
#else
    return 1;
#endif
}

/* Entries of cell c for box b: 1 for an accepted cell, the particles of an opened leaf
   that travel; ``cover``: the exclusive scan of the marks (cover[f + 1] = sum up to f). */
__kernel void let_count(const int n_cells, const int n_boxes, __global const uchar *decision,
                        __global const uint *cover, __global const int4 *info,
                        __global const double *boxes, __global const uint *order,
                        __global const double *pos, const double r_out,
                        __global uint *n_cell, __global uint *n_part)
{
    const size_t gid = get_global_id(0);
    if (gid >= (size_t)n_cells * n_boxes)
        return;
    const int b = (int)(gid / n_cells), c = (int)(gid % n_cells);
    const int visited = cover[(size_t)b * (n_cells + 1) + c + 1] == 0u;
    const uchar d = visited ? decision[gid] : LET_NONE;
    n_cell[gid] = d == LET_CELL;
    uint m = 0u;
    if (d == LET_LEAF) {
        const int4 ci = info[c];
        for (int j = ci.x; j < ci.x + ci.y; ++j)
            m += travels(boxes + 6 * b, pos, order[j], r_out);
    }
    n_part[gid] = m;
}

/* Accepted cells as (x, y, z, mass) float64 rows (and their quadrupoles), particles of
   opened leaves that travel as (x, y, z, mass) rows taken from the caller's float64
   arrays. */
__kernel void let_fill(const int n_cells, const int n_boxes,
                       const double cx, const double cy, const double cz,
                       __global const uint *n_cell, __global const uint *cell_off,
                       __global const uint *n_part, __global const uint *part_off,
                       __global const float4 *cell_hi, __global const float4 *cell_lo,
                       __global const int4 *info, __global const uint *order,
                       __global const double *pos, __global const double *mass,
                       __global const double *boxes, const double r_out,
                       __global double *cells, __global double *parts
#if QUAD
                       , __global const float8 *cell_quad, __global float8 *quads
#endif
                       )
{
    const size_t gid = get_global_id(0);
    if (gid >= (size_t)n_cells * n_boxes)
        return;
    const int b = (int)(gid / n_cells), c = (int)(gid % n_cells);
    if (n_cell[gid]) {
        const size_t k = cell_off[gid];
        const float4 h = cell_hi[c], l = cell_lo[c];
        cells[4 * k] = ((double)h.x + (double)l.x) + cx;
        cells[4 * k + 1] = ((double)h.y + (double)l.y) + cy;
        cells[4 * k + 2] = ((double)h.z + (double)l.z) + cz;
        cells[4 * k + 3] = (double)h.w;
#if QUAD
        quads[k] = cell_quad[c];
#endif
    }
    if (n_part[gid]) {
        size_t k = part_off[gid];
        const int4 ci = info[c];
        for (int j = ci.x; j < ci.x + ci.y; ++j) {
            const size_t i = order[j];
            if (!travels(boxes + 6 * b, pos, i, r_out))
                continue;
            parts[4 * k] = pos[3 * i];
            parts[4 * k + 1] = pos[3 * i + 1];
            parts[4 * k + 2] = pos[3 * i + 2];
            parts[4 * k + 3] = mass[i];
            ++k;
        }
    }
}

/* out[at + b] = off[b * stride] for b = 0 .. n (segment starts of a scan, and its total) */
__kernel void segment_starts(const int n, const int stride, __global const uint *off,
                             __global uint *out, const int at)
{
    const int b = get_global_id(0);
    if (b <= n)
        out[at + b] = off[(size_t)b * stride];
}

/* flag[g] = 1 when group g holds a particle of this process (caller index < n_local) */
__kernel void local_groups(const int n_groups, __global const int2 *ranges,
                           __global const uint *order, const int n_local, __global uint *flag)
{
    const int g = get_global_id(0);
    if (g >= n_groups)
        return;
    const int2 r = ranges[g];
    uint any = 0u;
    for (int j = r.x; j < r.x + r.y && !any; ++j)
        any = order[j] < (uint)n_local;
    flag[g] = any;
}

/* the flagged groups' ranges and boxes, packed in order */
__kernel void pack_groups(const int n_groups, __global const uint *flag, __global const uint *off,
                          __global const int2 *ranges, __global const float4 *hi,
                          __global const float4 *lo, __global const float4 *hw,
                          __global int2 *o_ranges, __global float4 *o_hi, __global float4 *o_lo,
                          __global float4 *o_half)
{
    const int g = get_global_id(0);
    if (g >= n_groups || !flag[g])
        return;
    const uint k = off[g];
    o_ranges[k] = ranges[g];
    o_hi[k] = hi[g];
    o_lo[k] = lo[g];
    o_half[k] = hw[g];
}

/* Owner rank of each particle in the cuboid grid (hybridtree.parallel.domain.Domains):
   the number of inner cuts at or below the coordinate along x, then y within the slab,
   then z within the column; migrant[i] = owner != rank.
   cuts: x (nx - 1), then y (nx x (ny - 1)), then z (nx x ny x (nz - 1)). */
__kernel void owners(const int n, __global const double *pos, const int nx, const int ny,
                     const int nz, __global const double *cuts, const int rank,
                     __global long *owner, __global uint *migrant)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const double x = pos[3 * (size_t)i], y = pos[3 * (size_t)i + 1], z = pos[3 * (size_t)i + 2];
    int ix = 0, iy = 0, iz = 0;
    for (int k = 0; k < nx - 1; ++k)
        ix += cuts[k] <= x;
    __global const double *yc = cuts + (nx - 1) + ix * (ny - 1);
    for (int k = 0; k < ny - 1; ++k)
        iy += yc[k] <= y;
    __global const double *zc = cuts + (nx - 1) + nx * (ny - 1) + (ix * ny + iy) * (nz - 1);
    for (int k = 0; k < nz - 1; ++k)
        iz += zc[k] <= z;
    const long o = (long)((ix * ny + iy) * nz + iz);
    owner[i] = o;
    migrant[i] = o != rank;
}

/* One field (``width`` 8-byte words per row) of every row: a migrant's goes to its
   packed row (``stride`` words, the field at ``field``), the others' to their place
   among those that stay (order kept).  ``off``: exclusive scan of the migrant flags. */
__kernel void split_rows(const int n, const int width, __global const uint *migrant,
                         __global const uint *off, __global const ulong *src, const int stride,
                         const int field, __global ulong *packed, __global ulong *stay)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const size_t k = off[i];
    if (migrant[i]) {
        for (int w = 0; w < width; ++w)
            packed[k * stride + field + w] = src[(size_t)i * width + w];
    } else {
        const size_t s = (size_t)i - k;
        for (int w = 0; w < width; ++w)
            stay[s * width + w] = src[(size_t)i * width + w];
    }
}

/* One field of ``m`` packed rows into rows first .. first + m - 1 of a field array. */
__kernel void unpack_rows(const int m, const int width, __global const ulong *packed,
                          const int stride, const int field, __global ulong *dst,
                          const int first)
{
    const int i = get_global_id(0);
    if (i >= m)
        return;
    for (int w = 0; w < width; ++w)
        dst[((size_t)first + i) * width + w] = packed[(size_t)i * stride + field + w];
}

/* split_rows and unpack_rows for a field narrower than a word (``width`` bytes per row,
   < 8: a state's uint32 IDs, uint8 types): it travels in the first bytes of one word of
   the packed row (the word's other bytes unused). */
__kernel void split_rows_narrow(const int n, const int width, __global const uint *migrant,
                                __global const uint *off, __global const uchar *src,
                                const int stride, const int field, __global uchar *packed,
                                __global uchar *stay)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const size_t k = off[i];
    if (migrant[i]) {
        for (int w = 0; w < width; ++w)
            packed[(k * stride + field) * 8 + w] = src[(size_t)i * width + w];
    } else {
        const size_t s = (size_t)i - k;
        for (int w = 0; w < width; ++w)
            stay[s * width + w] = src[(size_t)i * width + w];
    }
}

__kernel void unpack_rows_narrow(const int m, const int width, __global const uchar *packed,
                                 const int stride, const int field, __global uchar *dst,
                                 const int first)
{
    const int i = get_global_id(0);
    if (i >= m)
        return;
    for (int w = 0; w < width; ++w)
        dst[((size_t)first + i) * width + w] = packed[((size_t)i * stride + field) * 8 + w];
}

/* dst row i = src row idx[i] (``width`` 8-byte words per row): samples of positions */
__kernel void take_rows(const int m, const int width, __global const int *idx,
                        __global const ulong *src, __global ulong *dst)
{
    const int i = get_global_id(0);
    if (i >= m)
        return;
    for (int w = 0; w < width; ++w)
        dst[(size_t)i * width + w] = src[(size_t)idx[i] * width + w];
}
