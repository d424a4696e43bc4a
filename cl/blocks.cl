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
/* the state's velocities: double, or float (memory.velocities = "float32"): read widened,
   kicked in double and rounded once, as cl/state.cl kick_vel */
#ifndef VEL_T
#define VEL_T double
#endif

#include "wide4.cl"

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
    const size_t k = 3 * (size_t)i;        /* 3 i passes 2^31 at 2^30 particles */
    const double ax = acc[k] + lam * pos[k];
    const double ay = acc[k + 1] + lam * pos[k + 1];
    const double az = acc[k + 2] + lam * pos[k + 2];
    return sqrt(ax * ax + ay * ay + az * az);
}

/* q at least qv |v|^2 (qv > 0: dt <= eta_v eps / |v|, qv = (dt_max / (eta_v eps))^2) */
inline double with_speed(double q, const int i, const double qv, __global const VEL_T *vel,
                         const double s2)
{
    if (qv > 0.0) {
        const size_t k = 3 * (size_t)i;
        const double vx = (double)vel[k], vy = (double)vel[k + 1], vz = (double)vel[k + 2];
        q = fmax(q, (qv * ((vx * vx + vy * vy) + vz * vz)) * s2);
    }
    return q;
}

__kernel void assign_bins(const int n, const int kmin, const int kmax, const double q0,
                          const double lam, __global const double *pos,
                          __global const double *acc, const double qv,
                          __global const VEL_T *vel, __global int *bin)
{
    const int i = get_global_id(0);
    if (i >= n || bin[i] < kmin)
        return;
    /* q0 = dt_max^2 / (eta^2 eps) */
    bin[i] = bin_of(with_speed(q0 * accel_norm(i, lam, pos, acc), i, qv, vel, 1.0), kmin,
                    kmax);
}

/* assign_bins with a softening per type: q = (q0 |a|) * scale[type], scale = eps / eps_type
   (float64, 6 entries), so that dt = eta sqrt(eps_type / |a|) (a softening per type). */
__kernel void assign_bins_types(const int n, const int kmin, const int kmax, const double q0,
                                const double lam, __global const double *pos,
                                __global const double *acc, const double qv,
                                __global const VEL_T *vel, __global const uchar *types,
                                __global const double *scale, __global int *bin)
{
    const int i = get_global_id(0);
    if (i >= n || bin[i] < kmin)
        return;
    const double s = scale[types[i]];
    bin[i] = bin_of(with_speed((q0 * accel_norm(i, lam, pos, acc)) * s, i, qv, vel, s * s),
                    kmin, kmax);
}

/* v += h a (+ (h lam) x) of particle i in bin b, h = half_dt / 2^b */
inline void kick_one(const int i, const int b, const double half_dt, const double lam,
                     __global const double *acc, __global const double *pos,
                     __global double *vel)
{
    const double h = ldexp(half_dt, -b);
    for (size_t c = 3 * (size_t)i; c < 3 * (size_t)i + 3; c++)
        vel[c] += h * acc[c];
    if (lam != 0.0) {
        const double hl = h * lam;
        for (size_t c = 3 * (size_t)i; c < 3 * (size_t)i + 3; c++)
            vel[c] += hl * pos[c];
    }
}

/* v += h a (+ (h lam) x) for the particles of bin >= kmin, h = half_dt / 2^bin. */
__kernel void kick_bins(const int n, const int kmin, const double half_dt, const double lam,
                        __global const double *acc, __global const double *pos,
                        __global VEL_T *vel, __global const int *bin)
{
    const int i = get_global_id(0);
    if (i >= n || bin[i] < kmin)
        return;
    const double h = ldexp(half_dt, -bin[i]);
    for (size_t c = 3 * (size_t)i; c < 3 * (size_t)i + 3; c++)
        vel[c] = (VEL_T)((double)vel[c] + h * acc[c]);
    if (lam != 0.0) {
        const double hl = h * lam;
        for (size_t c = 3 * (size_t)i; c < 3 * (size_t)i + 3; c++)
            vel[c] = (VEL_T)((double)vel[c] + hl * pos[c]);
    }
}

/* vel += h[bin] acc for bin >= kmin: kicks whose factor is not half_dt / 2^bin (a
   comoving step's integrals of dt / a over each bin's half step, from a table). */
__kernel void kick_bins_table(const int n, const int kmin, __global const double *h,
                              __global const double *acc, __global VEL_T *vel,
                              __global const int *bin)
{
    const int i = get_global_id(0);
    if (i >= n || bin[i] < kmin)
        return;
    const double hk = h[bin[i]];
    for (size_t c = 3 * (size_t)i; c < 3 * (size_t)i + 3; c++)
        vel[c] = (VEL_T)((double)vel[c] + hk * acc[c]);
}

/* The end of a substep for the active particles (bin >= kmin) in one pass: kick_bins,
   assign_bins (assign_bins_types where typed != 0: scale = eps / eps_type per GADGET
   type) and kick_bins again, the same operations in the same order per particle, so the
   same bits: each closes its step with its old bin's half kick, takes its new bin and
   opens its next step with that bin's half kick.  One read of acc, pos, vel and one
   write of vel instead of three (GPUs; PoCL's CPU device ran it 2-4x slower than the
   three kernels apart, a per-work-item cost even with no particle active, cause not
   found, so timebins.DeviceBins launches those there). */
__kernel void close_open_bins(const int n, const int kmin, const int kmax, const double q0,
                              const double half_dt, const double lam,
                              __global const double *pos, __global const double *acc,
                              const double qv, __global double *vel,
                              const int typed, __global const uchar *types,
                              __global const double *scale, __global int *bin)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const int b0 = bin[i];
    if (b0 < kmin)
        return;
    /* in registers: read once, written once (the same operations in the same order) */
    const size_t c = 3 * (size_t)i;
    const double3 a = (double3)(acc[c], acc[c + 1], acc[c + 2]);
    const double3 x = (double3)(pos[c], pos[c + 1], pos[c + 2]);
    double3 v = (double3)(vel[c], vel[c + 1], vel[c + 2]);
    double h = ldexp(half_dt, -b0);
    v += h * a;
    if (lam != 0.0)
        v += (h * lam) * x;
    const double3 g = a + lam * x;
    const double an = sqrt(g.x * g.x + g.y * g.y + g.z * g.z);
    const double s = typed ? scale[types[i]] : 1.0;
    double q = typed ? (q0 * an) * s : q0 * an;
    if (qv > 0.0)
        q = fmax(q, (qv * ((v.x * v.x + v.y * v.y) + v.z * v.z)) * (typed ? s * s : 1.0));
    const int b = bin_of(q, kmin, kmax);
    bin[i] = b;
    h = ldexp(half_dt, -b);
    v += h * a;
    if (lam != 0.0)
        v += (h * lam) * x;
    vel[c] = v.x;
    vel[c + 1] = v.y;
    vel[c + 2] = v.z;
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

/* Consecutive groups of the whole walk walked as one (active_windows): their active
   sinks' packed range and the union of their boxes. */
typedef struct {
    int first, count, members;
    double3 lo, hi;                    /* the union of the members' boxes */
    float e_min;                       /* the members' smallest sink eps (PER_EPS walks) */
    float h_min;                       /* the smallest largest half side of a member */
    int g;                             /* the first member (kept as it is when alone) */
} Run;

inline void member_box(const int g, __global const float4 *c_hi, __global const float4 *c_lo,
                       __global const float4 *half_sides, double3 *lo, double3 *hi)
{
    const double3 c = convert_double3(c_hi[g].xyz) + convert_double3(c_lo[g].xyz);
    const double3 h = convert_double3(half_sides[g].xyz);
    *lo = c - h;
    *hi = c + h;
}

/* A run's walk group into slot: its range and box (centre hi, lo, half sides) as the walk
   takes it, the w of the half sides cleared, as group_boxes leaves it (a relative walk's
   group_floor writes it). */
inline void emit_run(const Run *r, const int slot, __global const float4 *c_hi,
                     __global const float4 *c_lo, __global const float4 *half_sides,
                     __global int2 *t_ranges, __global float4 *t_hi, __global float4 *t_lo,
                     __global float4 *t_half)
{
    t_ranges[slot] = (int2)(r->first, r->count);
    if (r->members == 1) {             /* a group alone keeps its box to the bit */
        t_hi[slot] = c_hi[r->g];
        t_lo[slot] = c_lo[r->g];
        t_half[slot] = (float4)(half_sides[r->g].xyz, 0.0f);
        return;
    }
    /* the union's centre as a float hi/lo pair; its half sides rounded outwards (the
       members' boxes already hold their sinks with group_boxes' margin) */
    const double3 c = 0.5 * (r->lo + r->hi);
    const float3 ch = convert_float3(c);
    const float3 cl = convert_float3(c - convert_double3(ch));
    const float3 h = convert_float3(0.5 * (r->hi - r->lo)) * 1.000001f + 1e-30f;
    t_hi[slot] = (float4)(ch, 0.0f);
    t_lo[slot] = (float4)(cl, r->e_min);
    t_half[slot] = (float4)(h, 0.0f);
}

/* The groups of an active walk (block substeps) from the groups of the whole walk (ranges:
   first sink, count, tree order; boxes c_hi, c_lo, half_sides), one work-item per window
   of `window` consecutive groups (Morton order).  Each group's active sinks (offset: the
   exclusive scan of the active flags, n + 1 long) are packed in tree order; consecutive
   groups of a window with active sinks are walked as one while together they hold at most
   `cap` active sinks and the union of their boxes has no half side longer than `grow`
   times the smallest of the members' largest half sides (neighbours of like size on the
   key curve, not groups across a jump of it, nor a small group beside a large outer one,
   whose box would reach nearer the dense part).  A merged walk is walked with that union:
   each sink's box only grows, so every opening test is as strict as its own group's or
   stricter.  Where every sink is active (offset[n] = n_sinks, the sinks with bins) each
   group is walked alone, as the whole walk walks it.  Writes the window's walk groups to
   slots window * w ... of t_* and their number to wcount[w]; window = 1 walks every group
   with active sinks alone. */
__kernel void active_windows(const int n_groups, const int n, const int n_sinks,
                             const int window, const int cap,
                             const float grow, __global const int2 *ranges,
                             __global const int *offset, __global const float4 *c_hi,
                             __global const float4 *c_lo, __global const float4 *half_sides,
                             __global int *wcount, __global int2 *t_ranges,
                             __global float4 *t_hi, __global float4 *t_lo,
                             __global float4 *t_half)
{
    const int w = get_global_id(0);
    const int g0 = w * window;
    if (g0 >= n_groups)
        return;
    const int g1 = min(g0 + window, n_groups);
    /* every sink active: each group alone (the whole walk's groups and forces) */
    const int most = offset[n] < n_sinks ? cap : 0;
    Run run;
    run.members = 0;
    int k = 0;
    for (int g = g0; g < g1; g++) {
        const int2 r = ranges[g];
        const int first = offset[r.x], count = offset[r.x + r.y] - first;
        if (count == 0)
            continue;
        double3 lo, hi;
        member_box(g, c_hi, c_lo, half_sides, &lo, &hi);
        const float3 hs = half_sides[g].xyz;
        const float h_g = fmax(hs.x, fmax(hs.y, hs.z));
        if (run.members > 0 && run.count + count <= most) {
            const double3 u = 0.5 * (fmax(run.hi, hi) - fmin(run.lo, lo));
            if (fmax(u.x, fmax(u.y, u.z)) <= (double)grow * fmin(run.h_min, h_g)) {
                run.count += count;
                run.members++;
                run.lo = fmin(run.lo, lo);
                run.hi = fmax(run.hi, hi);
                run.e_min = fmin(run.e_min, c_lo[g].w);
                run.h_min = fmin(run.h_min, h_g);
                continue;
            }
        }
        if (run.members > 0)
            emit_run(&run, g0 + k++, c_hi, c_lo, half_sides, t_ranges, t_hi, t_lo, t_half);
        run.first = first;
        run.count = count;
        run.members = 1;
        run.lo = lo;
        run.hi = hi;
        run.e_min = c_lo[g].w;
        run.h_min = h_g;
        run.g = g;
    }
    if (run.members > 0)
        emit_run(&run, g0 + k++, c_hi, c_lo, half_sides, t_ranges, t_hi, t_lo, t_half);
    wcount[w] = k;
}

/* The windows' walk groups packed to the front (woff: the exclusive scan of wcount). */
__kernel void pack_windows(const int n_windows, const int window,
                           __global const int *wcount, __global const int *woff,
                           __global const int2 *t_ranges, __global const float4 *t_hi,
                           __global const float4 *t_lo, __global const float4 *t_half,
                           __global int2 *ranges, __global float4 *g_hi,
                           __global float4 *g_lo, __global float4 *g_half)
{
    const int w = get_global_id(0);
    if (w >= n_windows)
        return;
    for (int k = 0; k < wcount[w]; k++) {
        const int s = w * window + k, j = woff[w] + k;
        ranges[j] = t_ranges[s];
        g_hi[j] = t_hi[s];
        g_lo[j] = t_lo[s];
        g_half[j] = t_half[s];
    }
}

/* alpha |a_old| of each group's weakest sink into the w of its half-sides (the relative
   opening criterion's bound, cl/walkcommon.cl): a kernel's body, A2 the squared
   acceleration of sink j (an expression of j); caller[j]: sink j's row of acc, which has
   rows below n_sinks only (the others: received LET entries, not sinks). */
#define GROUP_FLOOR(A2)                                             \
    const int g = get_global_id(0);                                 \
    if (g >= n_groups)                                              \
        return;                                                     \
    const int2 r = ranges[g];                                       \
    double a2 = INFINITY;                                           \
    for (int j = r.x; j < r.x + r.y; j++) {                         \
        if (caller[j] >= (uint)n_sinks)                             \
            continue;                                               \
        a2 = fmin(a2, A2);                                          \
    }                                                               \
    g_half[g].w = (float)(alpha * sqrt(a2))

/* |a|^2 of row k of a float64 part (n x 3) */
static inline double acc2(__global const double *acc, const uint k)
{
    const size_t c = 3 * (size_t)k;
    return acc[c] * acc[c] + acc[c + 1] * acc[c + 1] + acc[c + 2] * acc[c + 2];
}

__kernel void group_floor(const int n_groups, const int n_sinks, __global const int2 *ranges,
                          __global const uint *caller, __global const double *acc,
                          const double alpha, __global float4 *g_half)
{
    GROUP_FLOOR(acc2(acc, caller[j]));
}

/* |a|^2 of row k of a float32 part (hybridtree/state/device.py: a float4 per particle, its
   net force s apart), each component widened by wide4 (cl/wide4.cl): acc2 of the float64
   part, bit for bit, so group_floor4's bound is group_floor's. */
static inline double acc2_4(__global const float4 *acc, __global const double *s,
                            const uint k)
{
    const float4 q = acc[k];
    const double x = wide4(q.x, s, 0), y = wide4(q.y, s, 1), z = wide4(q.z, s, 2);
    return x * x + y * y + z * z;
}

__kernel void group_floor4(const int n_groups, const int n_sinks, __global const int2 *ranges,
                           __global const uint *caller, __global const float4 *acc,
                           __global const double *s, const double alpha,
                           __global float4 *g_half)
{
    GROUP_FLOOR(acc2_4(acc, s, caller[j]));
}
