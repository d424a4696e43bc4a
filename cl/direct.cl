/* Direct summation, Chamomile scheme (OpenCL C 1.2).
 *
 * Every work-item holds one i-particle (sink) in registers; the work-group stages
 * tiles of WG j-particles (sources) in local memory.  The forces of one tile are
 * summed into a per-tile partial sum that is then added into the total (the
 * scheme's FORCE-LOOP), so the float32 rounding error grows with the number of
 * tiles, not with N.
 *
 * Positions are float32 relative to a host-chosen centre.  With SPLIT = 1 they
 * come as hi + lo pairs (x = hi + lo in float64 terms), and every difference is
 * formed as (hi_j - hi_i) + (lo_j - lo_i): exact for close pairs even when the
 * system spans many decades.
 *
 * Build-time defines: WG (work-group size = tile size), SPLIT (0/1), ZERO_GUARD
 * (0/1), RSQRT (how 1/sqrt is computed).
 * Output per sink: (ax, ay, az, potential) with G = 1; a pair at distance r
 * contributes m r_vec / (r^2 + eps^2)^(3/2) and -m / (r^2 + eps^2)^(1/2).
 * Pairs with r^2 + eps^2 == 0 (coincident, eps = 0) contribute nothing; with
 * self_skip = 1 sink i is source i and does not act on itself.
 */
/* RSQRT: how 1/sqrt is computed (CPU compilers vectorise 1/sqrt, not rsqrt calls). */
#ifndef RSQRT
#define RSQRT(x) rsqrt(x)
#endif
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

#if SPLIT
#define DELTA(s, k)                                            \
    const float4 sl = tile_lo[k];                              \
    const float dx = (s.x - x.x) + (sl.x - xl.x);              \
    const float dy = (s.y - x.y) + (sl.y - xl.y);              \
    const float dz = (s.z - x.z) + (sl.z - xl.z);
#else
#define DELTA(s, k) const float dx = s.x - x.x, dy = s.y - x.y, dz = s.z - x.z;
#endif

/* one source k of the tile acting on the sink; SKIP excludes the sink itself */
#define PAIR(k, SKIP)                                          \
    {                                                          \
        const float4 s = tile[k];                              \
        DELTA(s, k)                                            \
        const float r2 = dx * dx + dy * dy + dz * dz + eps2;   \
        float rinv = INV_R(r2);                                \
        SKIP                                                   \
        const float mr = s.w * rinv;                           \
        const float mr3 = mr * rinv * rinv;                    \
        pax += mr3 * dx; pay += mr3 * dy; paz += mr3 * dz;     \
        ppot -= mr;                                            \
    }

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void direct_force(const int n_i, __global const float4 *xi,
#if SPLIT
                  __global const float4 *xi_lo,
#endif
                  const int n_j, __global const float4 *xj,
#if SPLIT
                  __global const float4 *xj_lo,
#endif
                  const float eps2, const int self_skip,
                  __global float4 *out)
{
    __local float4 tile[WG];
#if SPLIT
    __local float4 tile_lo[WG];
#endif
    const int lid = get_local_id(0);
    const int i0 = get_group_id(0) * WG;
    const int i = i0 + lid;
    const int ic = min(i, n_i - 1);
    const float4 x = xi[ic];
#if SPLIT
    const float4 xl = xi_lo[ic];
#endif
    float ax = 0.0f, ay = 0.0f, az = 0.0f, pot = 0.0f;

    for (int j0 = 0; j0 < n_j; j0 += WG) {
        const int jl = min(j0 + lid, n_j - 1);
        tile[lid] = xj[jl];
#if SPLIT
        tile_lo[lid] = xj_lo[jl];
#endif
        barrier(CLK_LOCAL_MEM_FENCE);
        const int jn = min(WG, n_j - j0);
        float pax = 0.0f, pay = 0.0f, paz = 0.0f, ppot = 0.0f;
        /* Only the tile on the diagonal can hold the sink itself: the test is
           uniform over the work-group and taken once per tile, not per pair. */
        if (self_skip && j0 == i0) {
            for (int k = 0; k < jn; k++)
                PAIR(k, rinv = (k == lid) ? 0.0f : rinv;)
        } else {
            for (int k = 0; k < jn; k++)
                PAIR(k, ;)
        }
        ax += pax; ay += pay; az += paz; pot += ppot;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (i < n_i)
        out[i] = (float4)(ax, ay, az, pot);
}
