/* Deterministic float64 reductions of particle state kept on the device (OpenCL C 1.2
 * with cl_khr_fp64; hybridtree/reduce.py drives it and holds the numpy twins).
 *
 * Every sum has one fixed order that does not depend on the device, the work-group
 * size or the scheduling: level 1 sums each block of BLOCK consecutive terms
 * sequentially (s = t0, then s = s + t1, ...; terms past n are +0.0), each further
 * level does the same to the previous level's rows, until one row is left.  numpy's
 * cumsum over a zero-padded (rows, BLOCK, K) array is the same sequence of roundings,
 * so the host gives the very same bits.
 *
 * Defines: BLOCK (terms per sequential block), NR (radii per enclosed-mass pass),
 * WG (work-group size of count_sum), ORDERED_SUMS (0/1, see SUM below), VEL_T (the
 * velocities' type, double by default).
 */
/* double needs cl_khr_fp64: the host builds this file only where the device reports it
   (Runtime.has_fp64); elsewhere a clear error instead of one per double. */
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#else
#error "reduce.cl needs double precision (cl_khr_fp64), which this device lacks"
#endif
/* no fused multiply-adds: every product must round on its own, as numpy's does */
#pragma OPENCL FP_CONTRACT OFF

#ifndef BLOCK
#define BLOCK 64
#endif
#ifndef NR
#define NR 21
#endif
#ifndef WG
#define WG 64
#endif
/* the state's velocities (the moments read them): double, or float where the run keeps
   them in single precision (memory.velocities = "float32"), widened exactly */
#ifndef VEL_T
#define VEL_T double
#endif

/* SUM: the type of a running float64 sum.  Intel's CPU runtime reorders a loop's sum even
   without fast math (it vectorises the loop: 1 ulp apart from the written order); a
   volatile accumulator keeps the written order there.  ORDERED_SUMS = 1 where the device
   probe (hybridtree/probe.py) found that the plain loop is reordered. */
#if defined(ORDERED_SUMS) && ORDERED_SUMS
#define SUM volatile double
#else
#define SUM double
#endif

/* The level step shared by every level-1 kernel: t[K] holds this index's terms
   (already +0.0 past n); the first index starts the sums instead of adding to 0.0,
   because 0.0 + (-0.0) would turn a -0.0 term into +0.0 where numpy keeps it. */
#define ACCUMULATE(K, s, t, i)                       \
    for (int k = 0; k < (K); k++)                    \
        s[k] = (i) == 0 ? t[k] : s[k] + t[k]

/* out (ceil(m / BLOCK) x K) = block sums of the rows of in (m x K): one level.  One
   work-item per output value (row j, column k), so neighbours read neighbouring
   columns (a work-item per row, summing all K columns, read K-strided and left most of
   a GPU idle: 0.29 ms a level at 2^22 on the H100); each value is summed in the same
   order as before, so the bits are the host's (host_block_sum). */
__kernel void reduce_rows(const int m, const int K, __global const double *in,
                          __global double *out)
{
    const int g = get_global_id(0);
    if (g >= ((m + BLOCK - 1) / BLOCK) * K)
        return;
    const int j = g / K, k = g - (g / K) * K;
    const size_t first = (size_t)j * BLOCK;
    SUM s = in[first * K + k];
    for (int i = 1; i < BLOCK; i++) {
        const size_t r = first + i;
        s = s + (r < (size_t)m ? in[r * K + k] : 0.0);
    }
    out[(size_t)j * K + k] = s;
}

/* The same level with max instead of sum (exact, so any order would do; fmax skips
   NaN).  Padding is -INFINITY. */
__kernel void reduce_rows_max(const int m, const int K, __global const double *in,
                              __global double *out)
{
    const int g = get_global_id(0);
    if (g >= ((m + BLOCK - 1) / BLOCK) * K)
        return;
    const int j = g / K, k = g - (g / K) * K;
    const size_t first = (size_t)j * BLOCK;
    double s = -INFINITY;
    for (int i = 0; i < BLOCK && first + i < (size_t)m; i++)
        s = fmax(s, in[(first + i) * K + k]);
    out[(size_t)j * K + k] = s;
}

/* Block j's K sums into s (LEVEL1 and LEVEL12): TERMS is a statement that fills
   t[0 .. K-1] for particle p < n (the other terms stay +0.0). */
#define BLOCK_SUMS(K, n, j, s, TERMS)                               \
    {                                                               \
        double t[K];                                                \
        for (int i = 0; i < BLOCK; i++) {                           \
            const size_t p = (size_t)(j) * BLOCK + i;               \
            for (int k = 0; k < (K); k++)                           \
                t[k] = 0.0;                                         \
            if (p < (size_t)(n))                                    \
                TERMS;                                              \
            ACCUMULATE(K, s, t, i);                                 \
        }                                                           \
    }
/* Level 1 of a sum of K terms per particle (a kernel's body): block j's sums, one row
   of out. */
#define LEVEL1(K, n, out, TERMS)                                    \
    const int j = get_global_id(0);                                 \
    if (j >= ((n) + BLOCK - 1) / BLOCK)                             \
        return;                                                     \
    SUM s[K];                                                       \
    BLOCK_SUMS(K, n, j, s, TERMS)                                   \
    for (int k = 0; k < (K); k++)                                   \
        out[(size_t)j * (K) + k] = s[k]

/* Levels 1 and 2 in one kernel (the level-1 rows never reach global memory: their
   buffer would be 8 K / BLOCK bytes a particle): a work-group of BLOCK work-items, each
   with its block's K sums in s (LEVEL12_SUMS; blocks past the last are +0.0, as
   reduce_rows pads), leaves its BLOCK rows in local memory, and K work-items sum them
   in reduce_rows' order into row get_group_id(0) of level 2: the bits of the two levels
   one after the other.  Launched with work-groups of exactly BLOCK, and only where a
   level 2 runs anyway (more than one block: one block alone is its own sum).  Built
   where its local rows take at most 16 KiB (FUSED(K)). */
#define FUSED(K) ((K) * BLOCK * 8 <= 16384)
#define LEVEL12_TAIL(K, out, s)                                     \
    for (int k = 0; k < (K); k++)                                   \
        rows_[get_local_id(0) * (K) + k] = s[k];                    \
    barrier(CLK_LOCAL_MEM_FENCE);                                   \
    for (int k = get_local_id(0); k < (K); k += BLOCK) {            \
        SUM r = rows_[k];                                           \
        for (int i = 1; i < BLOCK; i++)                             \
            r = r + rows_[i * (K) + k];                             \
        out[(size_t)get_group_id(0) * (K) + k] = r;                 \
    }

#define LEVEL12(K, n, out, TERMS)                                   \
    __local double rows_[BLOCK * (K)];                              \
    const int j = get_global_id(0);                                 \
    SUM s[K];                                                       \
    if (j < ((n) + BLOCK - 1) / BLOCK) {                            \
        BLOCK_SUMS(K, n, j, s, TERMS)                               \
    } else {                                                        \
        for (int k = 0; k < (K); k++)                               \
            s[k] = 0.0;                                             \
    }                                                               \
    LEVEL12_TAIL(K, out, s)

#define REQD_BLOCK __attribute__((reqd_work_group_size(BLOCK, 1, 1)))

/* Every kernel reading masses takes mass_step: 1 for a mass per particle, 0 for one mass
   for all (mass[0]: hybridtree/state/device.py keeps a uniform mass once; the same value
   read, so the same bits).  M(p) is particle p's. */
#define M(p) mass[(size_t)(p) * (size_t)mass_step]

/* The net force's terms of a particle of mass m and acceleration (ax, ay, az): m ax, m ay,
   m az, m (net_t and net_t4 load them). */
static inline void net_m(const double m, const double ax, const double ay, const double az,
                         double *t)
{
    t[0] = m * ax;
    t[1] = m * ay;
    t[2] = m * az;
    t[3] = m;
}

/* The net force's terms of particle p. */
static inline void net_t(__global const double *mass, const int mass_step,
                         __global const double *acc,
                         const size_t p, double *t)
{
    net_m(M(p), acc[3 * p], acc[3 * p + 1], acc[3 * p + 2], t);
}

/* Level 1 of the net force. */
__kernel void net_terms(const int n, __global const double *mass, const int mass_step,
                        __global const double *acc, __global double *out)
{
    LEVEL1(4, n, out, net_t(mass, mass_step, acc, p, t));
}

/* Levels 1 and 2 of the net force. */
__kernel REQD_BLOCK void net_terms2(const int n, __global const double *mass,
                                    const int mass_step, __global const double *acc,
                                    __global double *out)
{
    LEVEL12(4, n, out, net_t(mass, mass_step, acc, p, t));
}

/* net_t of a float32 part (float4 per particle: ax, ay, az, pot): each component widened
   to double first, so the sums are net_terms's of the widened buffer, bit for bit
   (hybridtree/state/device.py keeps a part so and its net force beside it). */
static inline void net_t4(__global const double *mass, const int mass_step,
                          __global const float4 *acc,
                          const size_t p, double *t)
{
    const float4 a = acc[p];
    net_m(M(p), (double)a.x, (double)a.y, (double)a.z, t);
}

__kernel void net_terms4(const int n, __global const double *mass, const int mass_step,
                         __global const float4 *acc, __global double *out)
{
    LEVEL1(4, n, out, net_t4(mass, mass_step, acc, p, t));
}

__kernel REQD_BLOCK void net_terms42(const int n, __global const double *mass,
                                     const int mass_step, __global const float4 *acc,
                                     __global double *out)
{
    LEVEL12(4, n, out, net_t4(mass, mass_step, acc, p, t));
}

/* The moments' terms of particle p of mass m: m, m x (3), kinetic, potential, m v (3),
   m (x cross v) (3), m |x|^2 (for the Lambda term's potential energy); u: its potential,
   loaded by the caller (moment_t, moment_t4), used only where has_pot. */
static inline void moment_m(__global const double *pos, __global const VEL_T *vel,
                            const double m, const double u, const int has_pot, const size_t p,
                            double *t)
{
    const double h = 0.5 * m;
    const double x = pos[3 * p], y = pos[3 * p + 1], z = pos[3 * p + 2];
    const double vx = vel[3 * p], vy = vel[3 * p + 1], vz = vel[3 * p + 2];
    t[0] = m;
    t[1] = m * x;
    t[2] = m * y;
    t[3] = m * z;
    t[4] = h * ((vx * vx + vy * vy) + vz * vz);
    t[5] = has_pot ? h * u : 0.0;
    t[6] = m * vx;
    t[7] = m * vy;
    t[8] = m * vz;
    t[9] = m * (y * vz - z * vy);
    t[10] = m * (z * vx - x * vz);
    t[11] = m * (x * vy - y * vx);
    t[12] = m * ((x * x + y * y) + z * z);
}

/* moment_m with particle p's own mass. */
static inline void moment_u(__global const double *pos, __global const VEL_T *vel,
                            __global const double *mass, const int mass_step,
                            const double u, const int has_pot, const size_t p,
                            double *t)
{
    moment_m(pos, vel, M(p), u, has_pot, p, t);
}

/* moment_u of a state of float64 parts: the potential pot[p]. */
static inline void moment_t(__global const double *pos, __global const VEL_T *vel,
                            __global const double *mass, const int mass_step,
                            __global const double *pot, const int has_pot, const size_t p,
                            double *t)
{
    moment_u(pos, vel, mass, mass_step, has_pot ? pot[p] : 0.0, has_pot, p, t);
}

/* Level 1 of the moments.  pot may be NULL (has_pot 0): the potential terms are then 0.0. */
__kernel void moment_terms(const int n, __global const double *pos, __global const VEL_T *vel,
                           __global const double *mass, const int mass_step,
                           __global const double *pot, const int has_pot, __global double *out)
{
    LEVEL1(13, n, out, moment_t(pos, vel, mass, mass_step, pot, has_pot, p, t));
}

/* moment_t of a state of float32 parts: the potential the w of a float4 (ax, ay, az,
   pot) widened to double, so the sums are moment_terms's of the widened potential. */
static inline void moment_t4(__global const double *pos, __global const VEL_T *vel,
                             __global const double *mass, const int mass_step,
                             __global const float4 *pot4, const int has_pot, const size_t p,
                             double *t)
{
    moment_u(pos, vel, mass, mass_step, has_pot ? (double)pot4[p].w : 0.0, has_pot, p, t);
}

__kernel void moment_terms4(const int n, __global const double *pos,
                            __global const VEL_T *vel, __global const double *mass,
                            const int mass_step, __global const float4 *pot4, const int has_pot,
                            __global double *out)
{
    LEVEL1(13, n, out, moment_t4(pos, vel, mass, mass_step, pot4, has_pot, p, t));
}

__kernel REQD_BLOCK void moment_terms42(const int n, __global const double *pos,
                                        __global const VEL_T *vel,
                                        __global const double *mass, const int mass_step,
                                        __global const float4 *pot4, const int has_pot,
                                        __global double *out)
{
    LEVEL12(13, n, out, moment_t4(pos, vel, mass, mass_step, pot4, has_pot, p, t));
}

/* Levels 1 and 2 of the moments. */
__kernel REQD_BLOCK void moment_terms2(const int n, __global const double *pos,
                                       __global const VEL_T *vel,
                                       __global const double *mass, const int mass_step,
                                       __global const double *pot, const int has_pot,
                                       __global double *out)
{
    LEVEL12(13, n, out, moment_t(pos, vel, mass, mass_step, pot, has_pot, p, t));
}

static inline double radius(__global const double *pos, const size_t p, const double cx,
                            const double cy, const double cz)
{
    const double dx = pos[3 * p] - cx, dy = pos[3 * p + 1] - cy, dz = pos[3 * p + 2] - cz;
    return sqrt((dx * dx + dy * dy) + dz * dz);
}

/* Level 1 of the enclosed masses: term k of particle p is m_p where r_p <= radii[k], r_p
   the particle's radius about (cx, cy, cz) (radius(), as max_radius and the host twin
   compute it: the same bits).  Each pass computes the radii again rather than reading
   them from a buffer: 8 bytes a particle of device memory saved for 16 more bytes read a
   particle and pass (issue 56).  (__constant: every work-item reads the same radius at
   the same time.) */
__kernel void enclosed_terms(const int n, __global const double *pos, const double cx,
                             const double cy, const double cz, __global const double *mass,
                             const int mass_step, __constant double *radii, __global double *out)
{
    const int j = get_global_id(0);
    if (j >= (n + BLOCK - 1) / BLOCK)
        return;
    SUM s[NR];
    for (int i = 0; i < BLOCK; i++) {
        const size_t p = (size_t)j * BLOCK + i;
        const int in = p < (size_t)n;
        const double rp = in ? radius(pos, p, cx, cy, cz) : 0.0, mp = in ? M(p) : 0.0;
        for (int k = 0; k < NR; k++) {
            const double t = in && rp <= radii[k] ? mp : 0.0;
            s[k] = i == 0 ? t : s[k] + t;
        }
    }
    for (int k = 0; k < NR; k++)
        out[(size_t)j * NR + k] = s[k];
}

#if FUSED(NR)
/* Levels 1 and 2 of the enclosed masses. */
__kernel REQD_BLOCK void enclosed_terms2(const int n, __global const double *pos,
                                         const double cx, const double cy, const double cz,
                                         __global const double *mass, const int mass_step,
                                         __constant double *radii, __global double *out)
{
    __local double rows_[BLOCK * NR];
    const int j = get_global_id(0);
    SUM s[NR];
    if (j < (n + BLOCK - 1) / BLOCK) {
        for (int i = 0; i < BLOCK; i++) {
            const size_t p = (size_t)j * BLOCK + i;
            const int in = p < (size_t)n;
            const double rp = in ? radius(pos, p, cx, cy, cz) : 0.0;
            const double mp = in ? M(p) : 0.0;
            for (int k = 0; k < NR; k++) {
                const double t = in && rp <= radii[k] ? mp : 0.0;
                s[k] = i == 0 ? t : s[k] + t;
            }
        }
    } else {
        for (int k = 0; k < NR; k++)
            s[k] = 0.0;
    }
    LEVEL12_TAIL(NR, out, s)
}
#endif

/* The Lagrangian radii's multisection over the bit patterns of non-negative doubles
   (ordered as the doubles are), one work-item per mass fraction; reduce.py's _radii is
   the host's twin.  State st (longs): [0] total mass, [1] largest radius (double bits),
   [2, 2+F) the fractions (double bits), then per fraction lo, hi (bits; lo = -1 is
   "below 0", where nothing is enclosed) and want = fraction x total (double bits).
   Invariant: enclosed(lo) < want <= enclosed(hi); done when hi - lo <= 1, and hi is
   then the radius of the particle whose enclosed mass first reaches want. */
static inline long trial_bits(const long lo, const long hi, const int t, const int T)
{
    const long d = hi - lo, q = d / (T + 1), r = d - q * (T + 1);
    return lo + q * t + (r * t) / (T + 1);
}

static inline double trial_radius(const long b)
{
    return b < 0 ? -1.0 : as_double(b);
}

static inline void set_trials(const int f, const int T, const long lo, const long hi,
                              __global double *radii)
{
    for (int t = 1; t <= T; t++)
        radii[f * T + t - 1] = trial_radius(trial_bits(lo, hi, t, T));
}

/* Fraction f's (of F) first bracket (-1, rmax] (NaN's where total <= 0 or rmax is not
   finite: no radius), its want = fraction x total, and its first trials. */
static inline void start_bracket(const int f, const int F, const int T, const double total,
                                 const double rmax, const double fraction, __global long *st,
                                 __global double *radii)
{
    const int ok = total > 0.0 && isfinite(rmax);
    const long hi = ok ? as_long(rmax) : as_long((double)NAN), lo = ok ? -1 : hi;
    st[2 + F + f] = lo;
    st[2 + 2 * F + f] = hi;
    st[2 + 3 * F + f] = as_long(fraction * total);
    set_trials(f, T, lo, hi, radii);
}

__kernel void radii_start(const int F, const int T, __global long *st, __global double *radii)
{
    const int f = get_global_id(0);
    if (f >= F)
        return;
    start_bracket(f, F, T, as_double(st[0]), as_double(st[1]), as_double(st[2 + f]), st, radii);
}

/* One pass: sums[f * T + t] is the mass within trial radius t + 1 of fraction f. */
__kernel void radii_narrow(const int F, const int T, __global const double *sums,
                           __global long *st, __global double *radii)
{
    const int f = get_global_id(0);
    if (f >= F)
        return;
    const long lo = st[2 + F + f], hi = st[2 + 2 * F + f];
    if (hi - lo <= 1)
        return;
    const double want = as_double(st[2 + 3 * F + f]);
    int below = 0;              /* enclosed mass grows with the radius: a prefix is below */
    for (int t = 0; t < T; t++)
        below += sums[f * T + t] < want;
    const long nlo = below > 0 ? trial_bits(lo, hi, below, T) : lo;
    const long nhi = below < T ? trial_bits(lo, hi, below + 1, T) : hi;
    st[2 + F + f] = nlo;
    st[2 + 2 * F + f] = nhi;
    set_trials(f, T, nlo, nhi, radii);
}

/* The largest radius about (cx, cy, cz) of block j's particles. */
static inline double block_max_radius(const int n, const int j, __global const double *pos,
                                      const double cx, const double cy, const double cz)
{
    double s = -INFINITY;
    for (size_t p = (size_t)j * BLOCK; p < (size_t)j * BLOCK + BLOCK && p < (size_t)n; p++)
        s = fmax(s, radius(pos, p, cx, cy, cz));
    return s;
}

/* Level 1 of the largest radius about (cx, cy, cz). */
__kernel void max_radius(const int n, __global const double *pos, const double cx,
                         const double cy, const double cz, __global double *out)
{
    const int j = get_global_id(0);
    if (j >= (n + BLOCK - 1) / BLOCK)
        return;
    out[j] = block_max_radius(n, j, pos, cx, cy, cz);
}

/* Several sets' sums in one level chain (hybridtree/device/reduce_sets.py): set s (of S,
   at most 8) is the particles of GADGET type byte s of sel (types: one byte each), or
   every particle where that byte is ALL_TYPES.  A work-item per block and set: row j of
   out holds the S sets' K sums each (set s's at s K), each summed over the block in
   BLOCK_SUMS' order with the terms of a particle outside the set those of a mass of
   +0.0 (type_mass's masses): the bits of S level chains of one set each. */
#define ALL_TYPES 255
#define SET_TYPE(sel, s) ((uint)(((sel) >> (8 * (s))) & 255))
#define IN_SET(types, p, want) ((want) == ALL_TYPES || (uint)(types)[p] == (want))
#define LEVEL1_SETS(K, n, S, out, TERMS)                            \
    const int g = get_global_id(0);                                 \
    if (g >= ((n) + BLOCK - 1) / BLOCK * (S))                       \
        return;                                                     \
    const int j = g / (S), set = g - j * (S);                       \
    const uint want = SET_TYPE(sel, set);                           \
    SUM s[K];                                                       \
    BLOCK_SUMS(K, n, j, s, TERMS)                                   \
    for (int k = 0; k < (K); k++)                                   \
        out[((size_t)j * (S) + set) * (K) + k] = s[k]

/* The moments of S sets (moment_terms of each set's type_mass masses). */
__kernel void moment_sets(const int n, const int S, const ulong sel,
                          __global const uchar *types, __global const double *pos,
                          __global const VEL_T *vel, __global const double *mass,
                          const int mass_step, __global const double *pot, const int has_pot,
                          __global double *out)
{
    LEVEL1_SETS(13, n, S, out,
                moment_m(pos, vel, IN_SET(types, p, want) ? M(p) : 0.0,
                         has_pot ? pot[p] : 0.0, has_pot, p, t));
}

/* moment_sets of a state of float32 parts (the potential: pot4's w, moment_t4). */
__kernel void moment_sets4(const int n, const int S, const ulong sel,
                           __global const uchar *types, __global const double *pos,
                           __global const VEL_T *vel, __global const double *mass,
                           const int mass_step, __global const float4 *pot4,
                           const int has_pot, __global double *out)
{
    LEVEL1_SETS(13, n, S, out,
                moment_m(pos, vel, IN_SET(types, p, want) ? M(p) : 0.0,
                         has_pot ? (double)pot4[p].w : 0.0, has_pot, p, t));
}

/* Level 1 of the enclosed masses of S sets: set s about centre par[3 s ..], its NR trial
   radii radii[s NR ..].  A work-item per block adds each particle's mass to the sums of
   its own sets only (its type's, and every particle's), so a pass costs about one set's
   on a CPU.  The terms it skips are the +0.0 of enclosed_terms (of the set's type_mass
   masses), and s + 0.0 is s but for s = -0.0 (+0.0 then), so each sum is enclosed_terms'
   or differs from it only in the sign of a zero (all of its terms +0.0 or -0.0 masses),
   which radii_narrow's comparisons (sums < want) do not see: the same radii.  (On a GPU
   its MAX_SETS NR sums a work-item would leave registers: enclosed_sets_each there.) */
#define MAX_SETS 8
__kernel void enclosed_sets(const int n, const int S, const ulong sel,
                            __global const uchar *types, __global const double *pos,
                            __global const double *mass, const int mass_step,
                            __global const double *par, __constant double *radii,
                            __global double *out)
{
    const int j = get_global_id(0);
    if (j >= (n + BLOCK - 1) / BLOCK)
        return;
    SUM s[MAX_SETS * NR];
    for (int k = 0; k < S * NR; k++)
        s[k] = 0.0;
    for (int i = 0; i < BLOCK; i++) {
        const size_t p = (size_t)j * BLOCK + i;
        if (p >= (size_t)n)
            break;
        const double mp = M(p);
        for (int q = 0; q < S; q++) {
            if (!IN_SET(types, p, SET_TYPE(sel, q)))
                continue;
            const double rp = radius(pos, p, par[3 * q], par[3 * q + 1], par[3 * q + 2]);
            for (int k = 0; k < NR; k++)
                s[q * NR + k] = s[q * NR + k] + (rp <= radii[q * NR + k] ? mp : 0.0);
        }
    }
    for (int k = 0; k < S * NR; k++)
        out[(size_t)j * S * NR + k] = s[k];
}

/* enclosed_sets with a work-item per block and set (LEVEL1_SETS: the terms of
   enclosed_terms, +0.0 outside the set; NR sums each, in registers): on GPUs, where
   S times the work-items of one set's pass fill the device. */
__kernel void enclosed_sets_each(const int n, const int S, const ulong sel,
                                 __global const uchar *types, __global const double *pos,
                                 __global const double *mass, const int mass_step,
                                 __global const double *par, __constant double *radii,
                                 __global double *out)
{
    LEVEL1_SETS(NR, n, S, out, if (IN_SET(types, p, want)) {
        const double rp = radius(pos, p, par[3 * set], par[3 * set + 1], par[3 * set + 2]);
        for (int k = 0; k < NR; k++)
            t[k] = rp <= radii[set * NR + k] ? M(p) : 0.0;
    });
}

/* Level 1 of the largest radius of every particle about each of S centres par[3 s ..]
   (max_radius of each). */
__kernel void max_radius_sets(const int n, const int S, __global const double *pos,
                              __global const double *par, __global double *out)
{
    const int g = get_global_id(0);
    if (g >= (n + BLOCK - 1) / BLOCK * S)
        return;
    const int j = g / S, set = g - j * S;
    out[g] = block_max_radius(n, j, pos, par[3 * set], par[3 * set + 1], par[3 * set + 2]);
}

/* radii_start of S sets of F fractions each at once: work-item g = s F + f of the S F
   "fractions" that radii_narrow then narrows (st as radii_start's with F' = S F; its
   [0, 2 + F') unused), set s's total mass par[3 S + s], its largest radius rmax[s],
   fraction f par[4 S + f]. */
__kernel void radii_start_sets(const int S, const int F, const int T,
                               __global const double *par, __global const double *rmax,
                               __global long *st, __global double *radii)
{
    const int g = get_global_id(0), FS = F * S;
    if (g >= FS)
        return;
    const int set = g / F, f = g - set * F;
    start_bracket(g, FS, T, par[3 * S + set], rmax[set], par[4 * S + f], st, radii);
}

/* acc[i][k] = acc[i][k] - shift[k]: numpy's acc -= shift */
__kernel void subtract3(const int n, const double sx, const double sy, const double sz,
                        __global double *acc)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const size_t k = 3 * (size_t)i;
    acc[k] = acc[k] - sx;
    acc[k + 1] = acc[k + 1] - sy;
    acc[k + 2] = acc[k + 2] - sz;
}

/* acc -= (s[0], s[1], s[2]) / s[3] (s: net_terms's sums; nothing where s[3] = 0): the
   net acceleration removed without a trip to the host.  Double division rounds
   correctly, so these are the bits of the host's s[:3] / s[3] and subtract3. */
__kernel void subtract_net(const int n, __global const double *s, __global double *acc)
{
    const int i = get_global_id(0);
    if (i >= n || s[3] == 0.0)
        return;
    const size_t k = 3 * (size_t)i;
    acc[k] = acc[k] - s[0] / s[3];
    acc[k + 1] = acc[k + 1] - s[1] / s[3];
    acc[k + 2] = acc[k + 2] - s[2] / s[3];
}

/* The masses of the particles of GADGET type t (types: one byte each), 0 for the
   others: every sum of the diagnostics is mass-weighted, so a type's sums are the whole
   set's with these masses. */
__kernel void type_mass(const int n, __global const uchar *types, const ulong t,
                        __global const double *mass, const int mass_step,
                        __global double *out)
{
    const int i = get_global_id(0);
    if (i < n)
        out[i] = (ulong)types[i] == t ? M(i) : 0.0;
}

/* flag = 1 if any of the count values is NaN or infinite (writers race, all write 1). */
__kernel void nonfinite(const long count, __global const double *x, __global int *flag)
{
    const size_t i = get_global_id(0);      /* count: 3 n passes 2^31 at 2^30 particles */
    if (i < (size_t)count && !isfinite(x[i]))
        *flag = 1;
}

/* The work-group's sums of a and b (64-bit) into out[2 g], out[2 g + 1]: the tail of
   count_sum and group_count_sum.  Barriers stay outside every branch (PoCL 3.0 lost
   partial sums with a barrier inside a work-group-uniform if). */
static inline void pair_sum_out(__local long (*l)[WG], const long a, const long b,
                                __global long *out)
{
    const int lid = get_local_id(0);
    l[0][lid] = a;
    l[1][lid] = b;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = WG / 2; h > 0; h >>= 1) {
        if (lid < h) {
            l[0][lid] += l[0][lid + h];
            l[1][lid] += l[1][lid + h];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        out[2 * get_group_id(0)] = l[0][0];
        out[2 * get_group_id(0) + 1] = l[1][0];
    }
}

/* Per work-group sums (64-bit) of both components of n int2 counts over a strided share:
   out[2 g], out[2 g + 1] (pair_sum_out). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void count_sum(const int n, __global const int2 *counts, __global long *out)
{
    __local long l[2][WG];
    long a = 0, b = 0;
    for (int i = get_global_id(0); i < n; i += get_global_size(0)) {
        const int2 c = counts[i];
        a += c.x;
        b += c.y;
    }
    pair_sum_out(l, a, b, out);
}

/* count_sum of a walk's counts kept per sink group (cl/walkcommon.cl SINK_COUNTS 0):
   group g holds the sinks ranges[g] = (first, count), which met info[g] = (entries, cells)
   list entries each, and their own particle among them where own = 1; only the sinks of
   caller index caller[i] < keep are counted (a tree of local particles and LET entries:
   the local ones).  The same 64-bit integer sums as count_sum over those sinks' int2
   counts (entries - cells - own, cells): out[2 g], out[2 g + 1] per work-group. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void group_count_sum(const int n_groups, __global const int2 *ranges,
                     __global const int2 *info, __global const uint *caller, const uint keep,
                     const int own, __global long *out)
{
    __local long l[2][WG];
    long a = 0, b = 0;
    for (int g = get_global_id(0); g < n_groups; g += get_global_size(0)) {
        const int2 r = ranges[g], c = info[g];
        long k = 0;
        for (int i = r.x; i < r.x + r.y; i++)
            k += caller[i] < keep;
        a += k * (long)(c.x - c.y - own);
        b += k * (long)c.y;
    }
    pair_sum_out(l, a, b, out);
}

/* total[0..1] += the sums of count_sum's per-group pairs (one work-item: a few hundred
   groups), so that a run's interaction counts add up on the device between reads. */
__kernel void count_add(const int groups, __global const long *part, __global long *total)
{
    if (get_global_id(0) != 0)
        return;
    long a = 0, b = 0;
    for (int g = 0; g < groups; ++g) {
        a += part[2 * g];
        b += part[2 * g + 1];
    }
    total[0] += a;
    total[1] += b;
}
