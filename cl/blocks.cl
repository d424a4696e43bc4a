/* Block (hierarchical) time steps and the relative opening criterion on a device state
 * (hybridtree/timebins.py, hybridtree/treewalk.py).
 *
 * A particle in time bin k takes steps of dt_max / 2^k.  At integer time ti (in units of
 * dt_max / 2^K) the active particles are those of bin >= kmin(ti): their steps start and
 * end on multiples of their own length, so no per-particle clock is needed.
 *
 * Kicks use the host's arithmetic (one rounded multiply, one rounded add, no contraction),
 * so a run with one bin gives the bits of the shared leapfrog (hybridtree/schemes.py).
 */
/* the host builds this file only on devices with double precision (device states) */
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#else
#error "blocks.cl needs double precision (cl_khr_fp64), which this device lacks"
#endif
#pragma OPENCL FP_CONTRACT OFF

#ifndef NBINS
#define NBINS 64
#endif

/* The bin of every particle with bin >= kmin (all with kmin = 0): the smallest k >= kmin,
   k <= kmax, with dt_max / 2^k <= eta sqrt(eps / |a + lam x|).  q = (dt_max / dt)^2 is
   divided by 4 per bin: exact in binary, so both backends agree to the bit. */
inline int bin_of(double q, const int kmin, const int kmax)
{
    int k = 0;
    while (k < kmax && q > 1.0) {
        q *= 0.25;
        k++;
    }
    return max(k, kmin);
}

inline double accel_norm(const int i, const double lam, __global const double *pos,
                         __global const double *acc)
{
    const double ax = acc[3 * i] + lam * pos[3 * i];
    const double ay = acc[3 * i + 1] + lam * pos[3 * i + 1];
    const double az = acc[3 * i + 2] + lam * pos[3 * i + 2];
    return sqrt(ax * ax + ay * ay + az * az);
}

__kernel void assign_bins(const int n, const int kmin, const int kmax, const double q0,
                          const double lam, __global const double *pos,
                          __global const double *acc, __global int *bin)
{
    const int i = get_global_id(0);
    if (i >= n || bin[i] < kmin)
        return;
    /* q0 = dt_max^2 / (eta^2 eps) */
    bin[i] = bin_of(q0 * accel_norm(i, lam, pos, acc), kmin, kmax);
}

/* assign_bins with a softening per type: q = (q0 |a|) * scale[type], scale = eps / eps_type
   (float64, 6 entries), so that dt = eta sqrt(eps_type / |a|) (a softening per type). */
__kernel void assign_bins_types(const int n, const int kmin, const int kmax, const double q0,
                                const double lam, __global const double *pos,
                                __global const double *acc, __global const ulong *types,
                                __global const double *scale, __global int *bin)
{
    const int i = get_global_id(0);
    if (i >= n || bin[i] < kmin)
        return;
    bin[i] = bin_of((q0 * accel_norm(i, lam, pos, acc)) * scale[types[i]], kmin, kmax);
}

/* v += h a (+ (h lam) x) for the particles of bin >= kmin, h = half_dt / 2^bin. */
__kernel void kick_bins(const int n, const int kmin, const double half_dt, const double lam,
                        __global const double *acc, __global const double *pos,
                        __global double *vel, __global const int *bin)
{
    const int i = get_global_id(0);
    if (i >= n || bin[i] < kmin)
        return;
    const double h = ldexp(half_dt, -bin[i]);
    for (int c = 3 * i; c < 3 * i + 3; c++)
        vel[c] += h * acc[c];
    if (lam != 0.0) {
        const double hl = h * lam;
        for (int c = 3 * i; c < 3 * i + 3; c++)
            vel[c] += hl * pos[c];
    }
}

/* vel += h[bin] acc for bin >= kmin: kicks whose factor is not half_dt / 2^bin (a
   comoving step's integrals of dt / a over each bin's half step, from a table). */
__kernel void kick_bins_table(const int n, const int kmin, __global const double *h,
                              __global const double *acc, __global double *vel,
                              __global const int *bin)
{
    const int i = get_global_id(0);
    if (i >= n || bin[i] < kmin)
        return;
    const double hk = h[bin[i]];
    for (int c = 3 * i; c < 3 * i + 3; c++)
        vel[c] += hk * acc[c];
}

/* Particles per bin: a histogram in local memory per work-group, then added up. */
__kernel void bin_counts(const int n, __global const int *bin, __global int *counts)
{
    __local int part[NBINS];
    const int lid = get_local_id(0);
    for (int k = lid; k < NBINS; k += get_local_size(0))
        part[k] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    const int i = get_global_id(0);
    if (i < n)
        atomic_inc(&part[clamp(bin[i], 0, NBINS - 1)]);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = lid; k < NBINS; k += get_local_size(0))
        if (part[k])
            atomic_add(&counts[k], part[k]);
}

/* flag[i] = 1 where the particle at tree position i is active (bin >= kmin); only
   caller indices below n_sinks have bins (the others: received LET entries). */
__kernel void active_flags(const int n, const int n_sinks, const int kmin,
                           __global const uint *order, __global const int *bin,
                           __global int *flag)
{
    const int i = get_global_id(0);
    if (i < n) {
        const uint c = order[i];
        flag[i] = c < (uint)n_sinks && bin[c] >= kmin;
    }
}

/* The active sinks, in tree (Morton) order, packed to the front: their coordinates (w:
   the mass, for the list walk's self term), their own source index and caller index. */
__kernel void pack_active(const int n, __global const int *flag, __global const int *offset,
                          __global const uint *order, __global const float4 *src_hi,
                          __global const float4 *src_lo, __global float4 *snk_hi,
                          __global float4 *snk_lo, __global int *self_idx,
                          __global uint *caller)
{
    const int i = get_global_id(0);
    if (i >= n || !flag[i])
        return;
    const int j = offset[i];
    snk_hi[j] = src_hi[i];
    snk_lo[j] = src_lo[i];
    self_idx[j] = i;
    caller[j] = order[i];
}

/* The active sinks of each group of the whole tree (ranges: first sink, count, tree
   order) form one group of the packed sinks where there is any: flag it, with its first
   packed sink and count (offset: the exclusive scan of the active flags, n + 1 long). */
__kernel void active_groups(const int n_groups, __global const int2 *ranges,
                            __global const int *offset, __global int *gflag,
                            __global int2 *packed)
{
    const int g = get_global_id(0);
    if (g >= n_groups)
        return;
    const int2 r = ranges[g];
    const int first = offset[r.x], count = offset[r.x + r.y] - first;
    gflag[g] = count > 0;
    packed[g] = (int2)(first, count);
}

/* The flagged groups, packed to the front (goff: the exclusive scan of gflag). */
__kernel void pack_groups(const int n_groups, __global const int *gflag,
                          __global const int *goff, __global const int2 *packed,
                          __global int2 *out)
{
    const int g = get_global_id(0);
    if (g < n_groups && gflag[g])
        out[goff[g]] = packed[g];
}

/* The flagged groups' boxes (centre hi and lo parts, half sides), packed as pack_groups
   packs their ranges; the w of the half sides cleared, as group_boxes leaves it (a
   relative walk's group_floor writes it). */
__kernel void pack_boxes(const int n_groups, __global const int *gflag,
                         __global const int *goff, __global const float4 *hi,
                         __global const float4 *lo, __global const float4 *half_sides,
                         __global float4 *out_hi, __global float4 *out_lo,
                         __global float4 *out_half)
{
    const int g = get_global_id(0);
    if (g >= n_groups || !gflag[g])
        return;
    const int j = goff[g];
    out_hi[j] = hi[g];
    out_lo[j] = lo[g];
    out_half[j] = (float4)(half_sides[g].xyz, 0.0f);
}

/* alpha |a_old| of each group's weakest sink into the w of its half-sides (the relative
   opening criterion's bound, cl/walkcommon.cl); caller[j]: sink j's row of acc, which
   has rows below n_sinks only (the others: received LET entries, not sinks). */
__kernel void group_floor(const int n_groups, const int n_sinks, __global const int2 *ranges,
                          __global const uint *caller, __global const double *acc,
                          const double alpha, __global float4 *g_half)
{
    const int g = get_global_id(0);
    if (g >= n_groups)
        return;
    const int2 r = ranges[g];
    double a2 = INFINITY;
    for (int j = r.x; j < r.x + r.y; j++) {
        if (caller[j] >= (uint)n_sinks)
            continue;
        const size_t c = 3 * (size_t)caller[j];
        a2 = fmin(a2, acc[c] * acc[c] + acc[c + 1] * acc[c + 1] + acc[c + 2] * acc[c + 2]);
    }
    g_half[g].w = (float)(alpha * sqrt(a2));
}
