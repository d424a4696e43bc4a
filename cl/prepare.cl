/* Particle upload on the device (OpenCL C 1.2 with cl_khr_fp64): the caller's float64
 * positions go to the device as they are, and the device forms what the tree build
 * needs.  On the host the same work (extent, centre subtraction, hi/lo split, packing)
 * is eight passes over fresh arrays: 2.6 s of the 4.1 s force at N = 2^24 on the H100
 * machine's CPU.  hybridtree/tree/device_build.py uses these kernels only where the
 * device reports double precision and falls back to the host otherwise.
 *
 * Defines: WG (work-group size of extent), PER_EPS (split_sources: a softening per particle).
 */
/* double needs cl_khr_fp64: the host builds this file only where the device reports it
   (Runtime.has_fp64); elsewhere a clear error instead of one per double. */
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#else
#error "prepare.cl needs double precision (cl_khr_fp64), which this device lacks"
#endif

#ifndef WG
#define WG 256
#endif

/* Min and max of x, y, z over n entries of in (entry i: its minima at in[w i + k], its
   maxima at in[w i + off + k]; w = 3, off = 0 for positions, w = 6, off = 3 for this
   kernel's own rows), each work-group over a strided share: out[6 g .. 6 g + 5] = min x,
   y, z, max x, y, z.  The host runs it over the particles, then over those rows with one
   work-group, in place (each row is read before work-item 0 writes row 0, which only it
   reads), and reads 48 bytes.  Min and max are exact: any order gives the same bits. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void extent(const int n, const int w, const int off, __global const double *in,
            __global double *out)
{
    __local double lmin[3][WG], lmax[3][WG];
    const int lid = get_local_id(0);
    double mn[3] = {INFINITY, INFINITY, INFINITY}, mx[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int i = get_global_id(0); i < n; i += get_global_size(0))
        for (int k = 0; k < 3; k++) {
            mn[k] = fmin(mn[k], in[(size_t)w * i + k]);
            mx[k] = fmax(mx[k], in[(size_t)w * i + off + k]);
        }
    for (int k = 0; k < 3; k++) {
        lmin[k][lid] = mn[k];
        lmax[k][lid] = mx[k];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (lid < s)
            for (int k = 0; k < 3; k++) {
                lmin[k][lid] = fmin(lmin[k][lid], lmin[k][lid + s]);
                lmax[k][lid] = fmax(lmax[k][lid], lmax[k][lid + s]);
            }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        for (int k = 0; k < 3; k++) {
            out[6 * get_group_id(0) + k] = lmin[k][0];
            out[6 * get_group_id(0) + 3 + k] = lmax[k][0];
        }
}

/* The tree's cube from extent's first row (min x, y, z, max x, y, z), as
   hybridtree/gravity/tree/morton.py extent_cube(power_of_two=True) computes it, bit for bit
   for finite positions (non-finite ones: fmax skips a NaN, numpy's max does not):
   side = the smallest power of two >= (1 + 1e-6) times the largest extent (exact; the
   host finds it by frexp;
   1 for a zero extent), corner = centre of the extent - side / 2, centre = corner + side
   / 2 (the host's Cube(corner, side).centre).  cube = corner x, y, z, side, centre x, y,
   z; cube_f = side and the key scale 2^21 / side as floats (exact: powers of two), for
   the float-only kernels of treebuild.cl.  One work-item: the build reads nothing back
   (the read of the extent left the device idle about 0.28 ms per build at 2^22 on the
   H200, docs/history.md §28). */
__kernel void extent_cube(__global const double *ext, __global double *cube,
                          __global float *cube_f)
{
    if (get_global_id(0) != 0)
        return;
    double side = fmax(fmax(ext[3] - ext[0], ext[4] - ext[1]), ext[5] - ext[2]);
    if (side > 0.0) {           /* ilogb, not frexp: Oclgrind cannot follow frexp's pointer */
        const double x = side * (1.0 + 1e-6);
        const double p = ldexp(1.0, ilogb(x));     /* the largest power of two <= x, exact */
        side = p < x ? 2.0 * p : p;
    } else {
        side = 1.0;
    }
    for (int k = 0; k < 3; k++) {
        const double corner = 0.5 * (ext[k] + ext[3 + k]) - 0.5 * side;
        cube[k] = corner;
        cube[4 + k] = corner + 0.5 * side;
    }
    cube[3] = side;
    cube_f[0] = (float)side;
    cube_f[1] = (float)(2097152.0 / side);
}

/* hi = float(x - c), lo = float((x - c) - hi): the host's split_hi_lo; w = float(mass)
   and, with PER_EPS, lo.w = the particle's softening eps (else 0).  mass_step: 1 for a
   mass per particle, 0 for one mass for all (mass[0]; hybridtree/state/device.py keeps a
   uniform mass so: the same value read, the same bits). */
#ifndef PER_EPS
#define PER_EPS 0
#endif
#if PER_EPS
#define EPS_ARG , __global const float *eps
#define EPS_OF(j) eps[j]
#else
#define EPS_ARG
#define EPS_OF(j) 0.0f
#endif

/* Particle j's split into slot i, relative to the cube's centre (cube[4 .. 6]:
   extent_cube's layout). */
inline void split_one(const int i, const size_t j, __global const double *pos,
                      __global const double *mass, const int mass_step,
                      __global const double *cube, const float e, __global float4 *hi,
                      __global float4 *lo)
{
    const double x = pos[3 * j] - cube[4];
    const double y = pos[3 * j + 1] - cube[5];
    const double z = pos[3 * j + 2] - cube[6];
    const float hx = (float)x, hy = (float)y, hz = (float)z;
    hi[i] = (float4)(hx, hy, hz, (float)mass[j * (size_t)mass_step]);
    lo[i] = (float4)((float)(x - (double)hx), (float)(y - (double)hy), (float)(z - (double)hz), e);
}

__kernel void split_sources(const int n, __global const double *pos, __global const double *mass,
                            const int mass_step, __global const double *cube EPS_ARG,
                            __global float4 *hi,
                            __global float4 *lo)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    split_one(i, (size_t)i, pos, mass, mass_step, cube, EPS_OF(i), hi, lo);
}

/* split_sources straight into tree order, slot i from particle order[i] (a refit: the
   bits of split_sources then treebuild.cl's gather, one pass instead of two). */
__kernel void split_gather(const int n, __global const uint *order, __global const double *pos,
                           __global const double *mass, const int mass_step,
                           __global const double *cube EPS_ARG, __global float4 *hi,
                           __global float4 *lo)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const uint j = order[i];
    split_one(i, (size_t)j, pos, mass, mass_step, cube, EPS_OF(j), hi, lo);
}

/* spread3, grid_coord: treebuild.cl's own (a key from the same hi/lo pair is the same key) */
#include "morton.cl"

/* Morton key of particle i from its hi/lo split (split_sources) without storing the
   split: treebuild.cl's morton_keys of split_sources' pairs, the same bits, and the tree
   build needs no buffers of the pairs in the caller's order (their 32 bytes a particle:
   the tree order's pairs come from split_gather once the sort is done).  cube_f[1]: the
   key scale (extent_cube). */
__kernel void split_keys(const int n, __global const double *pos, __global const double *cube,
                         __global const float *cube_f, __global ulong *keys)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const double x = pos[3 * (size_t)i] - cube[4];
    const double y = pos[3 * (size_t)i + 1] - cube[5];
    const double z = pos[3 * (size_t)i + 2] - cube[6];
    const float hx = (float)x, hy = (float)y, hz = (float)z;
    const float lx = (float)(x - (double)hx), ly = (float)(y - (double)hy),
                lz = (float)(z - (double)hz);
    const float scale = cube_f[1];
    keys[i] = (spread3(grid_coord(hx, lx, scale)) << 2)
            | (spread3(grid_coord(hy, ly, scale)) << 1)
            | spread3(grid_coord(hz, lz, scale));
}

/* PUT_POT 0: no potential is written (a walk whose potential is not used: pot may be
   NULL); PUT_COUNTS 0: no counts (the walk kept none per sink: cnt, out_cnt may be NULL). */
#ifndef PUT_POT
#define PUT_POT 1
#endif
#ifndef PUT_COUNTS
#define PUT_COUNTS 1
#endif

/* One sink's walk result (tree position i) widened into row j of the caller's float64
   arrays. */
inline void put64(const float4 r, __global const int2 *cnt, const size_t i, const size_t j,
                  __global double *acc, __global double *pot, __global int2 *out_cnt)
{
    acc[3 * j] = r.x;
    acc[3 * j + 1] = r.y;
    acc[3 * j + 2] = r.z;
#if PUT_POT
    pot[j] = r.w;
#endif
#if PUT_COUNTS
    out_cnt[j] = cnt[i];
#endif
}

/* The walk's results back into the caller's order, widened to the host's float64 (so
   the host converts nothing): acc (n x 3), pot (n), counts (int2); only the particles
   with caller index < n_keep (a tree of this process's particles and a LET keeps the
   first: the LET's entries were no sinks). */
__kernel void unsort64(const int n, const int n_keep, __global const uint *order,
                       __global const float4 *res, __global const int2 *cnt,
                       __global double *acc, __global double *pot, __global int2 *out_cnt)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const size_t j = order[i];
    if (j >= (size_t)n_keep)
        return;
    put64(res[i], cnt, i, j, acc, pot, out_cnt);
}

/* inv[order[i]] = i: the tree position of every caller index (computed once per tree). */
__kernel void invert_order(const int n, __global const uint *order, __global uint *inv)
{
    const int i = get_global_id(0);
    if (i < n)
        inv[order[i]] = (uint)i;
}

/* unsort64 as a gather: caller index j < n_keep reads its tree position inv[j], so the
   float64 writes go out in order instead of scattered (on the H100 unsort64 took 1.3 ms
   at 2^22 and 5.5 ms at 2^24, 7 % of a step there; session 21). */
__kernel void sort_back64(const int n_keep, __global const uint *inv,
                          __global const float4 *res, __global const int2 *cnt,
                          __global double *acc, __global double *pot, __global int2 *out_cnt)
{
    const int j = get_global_id(0);
    if (j >= n_keep)
        return;
    const size_t i = inv[j];
    put64(res[i], cnt, i, (size_t)j, acc, pot, out_cnt);
}

/* sort_back64 for a float32 part (float4 per particle: ax, ay, az, pot, the walk's own
   values): caller index j < n_keep gets the result of its tree position inv[j], unwidened
   (hybridtree/state/device.py keeps a part so; the net force apart). */
__kernel void sort_back4(const int n_keep, __global const uint *inv,
                         __global const float4 *res, __global const int2 *cnt,
                         __global float4 *out, __global int2 *out_cnt)
{
    const int j = get_global_id(0);
    if (j >= n_keep)
        return;
    const size_t i = inv[j];
    out[j] = res[i];
#if PUT_COUNTS
    out_cnt[j] = cnt[i];
#endif
}
