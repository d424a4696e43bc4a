/* Direct summation, Chamomile scheme (OpenCL C 1.2).
 *
 * Every work-item holds NI i-particles (sinks) in registers; the work-group stages
 * tiles of WG j-particles (sources) in local memory, and every source read from
 * local memory serves the NI sinks (fewer local loads per pair).  The forces of one
 * tile are summed into a per-tile partial sum that is then added into the total (the
 * scheme's FORCE-LOOP), so the float32 rounding error grows with the number of tiles,
 * not with N.
 *
 * Positions are float32 relative to a host-chosen centre.  With SPLIT = 1 they
 * come as hi + lo pairs (x = hi + lo in float64 terms), and every difference is
 * formed as (hi_j - hi_i) + (lo_j - lo_i): exact for close pairs even when the
 * system spans many decades.
 *
 * Build-time defines: WG (work-group size = tile size), NI (sinks per work-item),
 * SPLIT (0/1), ZERO_GUARD (0/1), RSQRT_MODE or RSQRT (how 1/sqrt is computed: rsqrt.cl), SELF_BRANCH, FULL_TILE, UNROLL,
 * SOFTENING (1 Plummer, 2 GADGET's spline: softening.cl), PER_EPS (0: one eps2 for every
 * pair; 1: a softening per particle, eps_i of the sinks and eps_j of the sources, and the
 * pair's is the larger, GADGET-4's rule).
 * Output per sink: (ax, ay, az, potential) with G = 1; a pair at distance r
 * contributes m r_vec / (r^2 + eps^2)^(3/2) and -m / (r^2 + eps^2)^(1/2).
 * Pairs with r^2 + eps^2 == 0 (coincident, eps = 0) contribute nothing; with
 * self_skip = 1 sink i is source i and does not act on itself.
 */
#include "rsqrt.cl"
#include "softening.cl"
#ifndef WG
#define WG 128
#endif
#ifndef SPLIT
#define SPLIT 0
#endif

/* ZERO_GUARD = 1 (eps = 0): a pair at zero distance contributes nothing instead
   of inf; with eps > 0 the softened distance is never zero and the test is dropped. */
#ifndef ZERO_GUARD
#define ZERO_GUARD 1
#endif
#if ZERO_GUARD
#define INV_R(r2) ((r2) > 0.0f ? RSQRT(r2) : 0.0f)
#else
#define INV_R(r2) RSQRT(r2)
#endif

#ifndef NI
#define NI 1
#endif
#ifndef PER_EPS
#define PER_EPS 0
#endif
#if PER_EPS
#define LOAD_EPS(k) const float ej_ = tile_eps[k];
/* the pair's eps2 shadows the kernel's argument inside the sink loop */
#define PAIR_EPS(q) const float e_ = fmax(ei[q], ej_); const float eps2 = e_ * e_;
#else
#define LOAD_EPS(k)
#define PAIR_EPS(q)
#endif

/* FULL_TILE (with SELF_BRANCH): a separate loop with a constant trip count for full
   tiles.  UNROLL (optional): its unroll factor. */
#ifndef FULL_TILE
#define FULL_TILE 0
#endif
/* SELF_BRANCH: the sink's own pair is excluded by a branch taken once per tile (the
   diagonal tiles) instead of a test per pair.  Faster on GPUs, but PoCL 5's kernel
   compiler aborts (Kernel.cc: region_entry_barrier assertion) on any branch between the
   barriers of the tile loop, so it is off by default and the host turns it on for GPUs. */
#ifndef SELF_BRANCH
#define SELF_BRANCH 0
#endif
#define DO_PRAGMA(x) _Pragma(#x)
#define UNROLL_PRAGMA(n) DO_PRAGMA(unroll n)
#ifdef UNROLL
#define UNROLL_LOOP UNROLL_PRAGMA(UNROLL)
#else
#define UNROLL_LOOP
#endif

#if SPLIT
#define DELTA(q)                                               \
    const float dx = (s.x - x[q].x) + (sl.x - xl[q].x);        \
    const float dy = (s.y - x[q].y) + (sl.y - xl[q].y);        \
    const float dz = (s.z - x[q].z) + (sl.z - xl[q].z);
#define LOAD_LO(k) const float4 sl = tile_lo[k];
#else
#define DELTA(q) const float dx = s.x - x[q].x, dy = s.y - x[q].y, dz = s.z - x[q].z;
#define LOAD_LO(k)
#endif

/* The factors of source s on sink q at (dx, dy, dz): mr (phi = -mr) and mr3 (a = mr3 d);
   SKIP(q) excludes the sink itself (it sets rinv to 0). */
#if SOFTENING == 2
#define FACTORS(SKIP)                                          \
            const float d2 = dx * dx + dy * dy + dz * dz;      \
            float mr, mr3, rinv = 1.0f;                        \
            SOFT(float, d2, eps2, s.w, mr, mr3);               \
            SKIP                                               \
            mr *= rinv;                                        \
            mr3 *= rinv;
#else
#define FACTORS(SKIP)                                          \
            const float r2 = dx * dx + dy * dy + dz * dz + eps2; \
            float rinv = INV_R(r2);                            \
            SKIP                                               \
            const float mr = s.w * rinv;                       \
            const float mr3 = mr * rinv * rinv;
#endif

/* source k of the tile acting on the NI sinks of this work-item.  The source is read from
   local memory once for all NI sinks. */
#define SOURCE(k, SKIP)                                        \
    {                                                          \
        const float4 s = tile[k];                              \
        LOAD_LO(k)                                             \
        LOAD_EPS(k)                                            \
        for (int q = 0; q < NI; q++) {                         \
            DELTA(q)                                           \
            PAIR_EPS(q)                                        \
            FACTORS(SKIP)                                      \
            pax[q] += mr3 * dx; pay[q] += mr3 * dy; paz[q] += mr3 * dz; \
            ppot[q] -= mr;                                     \
        }                                                      \
    }

/* NI sinks per work-item: sink q of work-item lid is i0 + q * WG + lid */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void direct_force(const int n_i, __global const float4 *xi,
#if SPLIT
                  __global const float4 *xi_lo,
#endif
                  const int n_j, __global const float4 *xj,
#if SPLIT
                  __global const float4 *xj_lo,
#endif
                  const float eps2,
#if PER_EPS
                  __global const float *eps_i, __global const float *eps_j,
#endif
                  const int self_skip, __global float4 *out)
{
    __local float4 tile[WG];
#if PER_EPS
    __local float tile_eps[WG];
    float ei[NI];
#endif
#if SPLIT
    __local float4 tile_lo[WG];
#endif
    const int lid = get_local_id(0);
    const int i0 = get_group_id(0) * (WG * NI);
    float4 x[NI];
#if SPLIT
    float4 xl[NI];
#endif
    float ax[NI], ay[NI], az[NI], pot[NI];
    #pragma unroll
    for (int q = 0; q < NI; q++) {
        const int ic = min(i0 + q * WG + lid, n_i - 1);
        x[q] = xi[ic];
#if SPLIT
        xl[q] = xi_lo[ic];
#endif
#if PER_EPS
        ei[q] = eps_i[ic];
#endif
        ax[q] = ay[q] = az[q] = pot[q] = 0.0f;
    }

    for (int j0 = 0; j0 < n_j; j0 += WG) {
        const int jl = min(j0 + lid, n_j - 1);
        tile[lid] = xj[jl];
#if SPLIT
        tile_lo[lid] = xj_lo[jl];
#endif
#if PER_EPS
        tile_eps[lid] = eps_j[jl];
#endif
        barrier(CLK_LOCAL_MEM_FENCE);
        const int jn = min(WG, n_j - j0);
        float pax[NI], pay[NI], paz[NI], ppot[NI];
        #pragma unroll
        for (int q = 0; q < NI; q++)
            pax[q] = pay[q] = paz[q] = ppot[q] = 0.0f;
#if SELF_BRANCH
        /* Only a tile on the diagonal can hold a sink itself (sink q's tile when
           j0 == i0 + q * WG): the test is uniform over the work-group and taken once
           per tile, not per pair. */
        const int diag = (self_skip && j0 >= i0 && j0 < i0 + NI * WG) ? (j0 - i0) / WG : -1;
        if (diag >= 0) {
            for (int k = 0; k < jn; k++)
                SOURCE(k, rinv = (q == diag && k == lid) ? 0.0f : rinv;)
#if FULL_TILE
        } else if (jn == WG) {          /* a full tile: a constant trip count to unroll */
            UNROLL_LOOP
            for (int k = 0; k < WG; k++)
                SOURCE(k, ;)
#endif
        } else {
            for (int k = 0; k < jn; k++)
                SOURCE(k, ;)
        }
#else
        /* the sink's own pair tested per pair: no branch between the barriers */
        for (int k = 0; k < jn; k++)
            SOURCE(k, rinv = (self_skip && j0 + k == i0 + q * WG + lid) ? 0.0f : rinv;)
#endif
        #pragma unroll
        for (int q = 0; q < NI; q++) {
            ax[q] += pax[q]; ay[q] += pay[q]; az[q] += paz[q]; pot[q] += ppot[q];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    #pragma unroll
    for (int q = 0; q < NI; q++) {
        const int i = i0 + q * WG + lid;
        if (i < n_i)
            out[i] = (float4)(ax[q], ay[q], az[q], pot[q]);
    }
}
