/* Operations on a run state kept on the device (hybridtree/state.py): kicks, drifts and
 * the sum of two force parts, on float64 arrays of n x 3 values (or any flat length); a
 * float32 part (float4: ax, ay, az, pot) kicked and widened with its net force.
 *
 * The arithmetic is the host's: one multiply rounded, then one add rounded, as numpy's
 * `vel += dt * acc` does.  Contraction into fused multiply-adds is switched off, so a
 * run with its state on the device and one with its state on the host step the same
 * particles to the same bits (tests/test_state.py).
 */
/* double needs cl_khr_fp64: the host builds this file only where the device reports it
   (Runtime.has_fp64); elsewhere a clear error instead of one per double. */
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#else
#error "state.cl needs double precision (cl_khr_fp64), which this device lacks"
#endif
#pragma OPENCL FP_CONTRACT OFF

/* VEL_T: the type the state keeps its velocities in: double, or float where the run
   asks for single-precision velocities (memory.velocities = "float32", built with
   VEL_T=float).  Each kick then computes in double and rounds the velocity once,
   (float)((double)v + dt * a); each drift widens it exactly, x += dt * (double)v: the
   host's numpy order of operations (hybridtree/state/host.py), the same bits.  With
   VEL_T double every such kernel is axpy's arithmetic. */
#ifndef VEL_T
#define VEL_T double
#endif

/* v[i] += dt * a[i]: a kick (v: velocities, a: accelerations) or a drift (v: positions,
   a: velocities) */
__kernel void axpy(const long n, const double dt, __global const double *a, __global double *v)
{
    const size_t i = get_global_id(0);
    if (i < (size_t)n)
        v[i] += dt * a[i];
}

/* v[i] := (VEL_T)((double)v[i] + dt * a[i]): a kick of velocities of VEL_T (a: the
   accelerations, or the positions for the Lambda term's kick), rounded once */
__kernel void kick_vel(const long n, const double dt, __global const double *a,
                       __global VEL_T *v)
{
    const size_t i = get_global_id(0);
    if (i < (size_t)n)
        v[i] = (VEL_T)((double)v[i] + dt * a[i]);
}

/* x[i] += dt * (double)v[i]: a drift by velocities of VEL_T (widened exactly) */
__kernel void drift_vel(const long n, const double dt, __global const VEL_T *v,
                        __global double *x)
{
    const size_t i = get_global_id(0);
    if (i < (size_t)n)
        x[i] += dt * (double)v[i];
}

/* flag := 1 where a velocity of VEL_T is not finite (flag zeroed before; every writer
   writes the same value) */
__kernel void nonfinite_vel(const long n, __global const VEL_T *v, __global int *flag)
{
    const size_t i = get_global_id(0);
    if (i < (size_t)n && !isfinite(v[i]))
        *flag = 1;
}

/* out[i] = a[i] + b[i]: the whole acceleration of a hybrid state (hard + soft) */
__kernel void add(const long n, __global const double *a, __global const double *b,
                  __global double *out)
{
    const size_t i = get_global_id(0);
    if (i < (size_t)n)
        out[i] = a[i] + b[i];
}

#include "wide4.cl"

/* v += dt a of a float32 part (wide4): axpy's bits on the float64 part (kick_vel's on
   velocities of VEL_T: computed in double, rounded once) */
__kernel void kick4(const int n, const double dt, __global const float4 *a,
                    __global const double *s, __global VEL_T *v)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const float4 r = a[i];
    const size_t k = 3 * (size_t)i;
    v[k] = (VEL_T)((double)v[k] + dt * wide4(r.x, s, 0));
    v[k + 1] = (VEL_T)((double)v[k + 1] + dt * wide4(r.y, s, 1));
    v[k + 2] = (VEL_T)((double)v[k + 2] + dt * wide4(r.z, s, 2));
}

/* out (n x 3 float64) := the accelerations of rows lo .. lo + n - 1 of a float32 part
   (wide4), plus those of a second part where two is set (add's one rounded sum) */
__kernel void widen4(const int n, const ulong lo, const int two, __global const float4 *a,
                     __global const double *sa, __global const float4 *b,
                     __global const double *sb, __global double *out)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const float4 r = a[lo + i];
    double x = wide4(r.x, sa, 0), y = wide4(r.y, sa, 1), z = wide4(r.z, sa, 2);
    if (two) {
        const float4 q = b[lo + i];
        x = x + wide4(q.x, sb, 0);
        y = y + wide4(q.y, sb, 1);
        z = z + wide4(q.z, sb, 2);
    }
    const size_t k = 3 * (size_t)i;
    out[k] = x;
    out[k + 1] = y;
    out[k + 2] = z;
}

/* flag := 1 where an acceleration of a float32 part (wide4) is not finite (flag zeroed
   before; every writer writes the same value) */
__kernel void nonfinite4(const int n, __global const float4 *a, __global const double *s,
                         __global int *flag)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const float4 r = a[i];
    if (!isfinite(wide4(r.x, s, 0)) || !isfinite(wide4(r.y, s, 1))
        || !isfinite(wide4(r.z, s, 2)))
        *flag = 1;
}

/* out (n float64) := the potentials (w) of rows lo .. lo + n - 1 of a float32 part */
__kernel void pot4(const int n, const ulong lo, __global const float4 *a, __global double *out)
{
    const int i = get_global_id(0);
    if (i < n)
        out[i] = (double)a[lo + i].w;
}

/* the potential (w) of a float32 part += c + coef m_i (use_mass; else c alone: one mass
   for all folds its term into c), in float64 and rounded once: a periodic box's offsets
   (gravity/long_range.py add_device4) */
__kernel void offset4(const int n, const double c, const double coef, const int use_mass,
                      __global const double *mass, __global float4 *a)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const double add = use_mass ? c + coef * mass[i] : c;
    a[i].w = (float)((double)a[i].w + add);
}

/* Rows of one column (w elements of type T each: float64 values, IDs, types, copied as
   bits) into the caller's order: row i goes to row ids[i] - lo, or to table[ids[i] - lo]
   when use_table is set (the caller's position of each ID of a range lo .. lo + n - 1).
   On the device, because on the host this is a random scatter bound by memory latency
   (about 1 s for 2^22 particles on the H100 machine's CPU).  One kernel per element width
   (8, 4, 1 bytes) and width of the state's IDs (uint64, or uint32 where every ID fits). */
#define TO_CALLER(NAME, ID_T, T)                                                         \
__kernel void NAME(const int n, const int w, const ulong lo, const int use_table,        \
                   __global const ID_T *ids, __global const int *table,                   \
                   __global const T *src, __global T *dst)                                \
{                                                                                         \
    const int i = get_global_id(0);                                                       \
    if (i >= n)                                                                           \
        return;                                                                           \
    const ulong k = (ulong)ids[i] - lo;                                                   \
    const size_t j = use_table ? (size_t)table[k] : (size_t)k;                            \
    for (int c = 0; c < w; c++)                                                           \
        dst[j * w + c] = src[(size_t)i * w + c];                                          \
}
TO_CALLER(to_caller_w8_i64, ulong, ulong)
TO_CALLER(to_caller_w4_i64, ulong, uint)
TO_CALLER(to_caller_w1_i64, ulong, uchar)
TO_CALLER(to_caller_w8_i32, uint, ulong)
TO_CALLER(to_caller_w4_i32, uint, uint)
TO_CALLER(to_caller_w1_i32, uint, uchar)

/* x[i] moved into [0, box) by whole box lengths: the positions of a periodic box after a
   drift.  fmod is exact in OpenCL C as in C, so this gives numpy's np.mod bits
   (hybridtree.gravity.periodic.wrap) and a state on the device wraps as one on the host. */
__kernel void wrap(const long n, const double box, __global double *x)
{
    const size_t i = get_global_id(0);
    if (i >= (size_t)n)
        return;
    double r = fmod(x[i], box);
    if (r < 0.0)
        r += box;
    if (r >= box)
        r -= box;
    x[i] = r;
}

/* x[i] += c: a constant added to every value (a periodic box's potential offset) */
__kernel void shift(const long n, const double c, __global double *x)
{
    const size_t i = get_global_id(0);
    if (i < (size_t)n)
        x[i] += c;
}

/* x[3i + k] += c_k for particles i < n (k = 0, 1, 2): a constant vector added to every
   row of an n x 3 column (a drawn model moved to its centre-of-mass frame with c = -x_cm,
   which gives the host's pos - x_cm bits: negation is exact).  n as a long and indices
   as size_t: 3 n passes 2^31 at 2^30 particles. */
__kernel void shift3(const long n, const double cx, const double cy, const double cz,
                     __global double *x)
{
    const size_t i = get_global_id(0);
    if (i >= (size_t)n)
        return;
    x[3 * i] += cx;
    x[3 * i + 1] += cy;
    x[3 * i + 2] += cz;
}

/* shift3 on velocities of VEL_T: v := (VEL_T)((double)v + c), rounded once (a drawn
   model's velocities moved to its centre-of-mass frame) */
__kernel void shift3_vel(const long n, const double cx, const double cy, const double cz,
                         __global VEL_T *v)
{
    const size_t i = get_global_id(0);
    if (i >= (size_t)n)
        return;
    v[3 * i] = (VEL_T)((double)v[3 * i] + cx);
    v[3 * i + 1] = (VEL_T)((double)v[3 * i + 1] + cy);
    v[3 * i + 2] = (VEL_T)((double)v[3 * i + 2] + cz);
}

/* The softening of every particle from its GADGET type (types: uchar, 0 .. 5; table:
   eps per type, float32): the tree build's eps (PER_EPS, cl/prepare.cl). */
__kernel void eps_of_types(const int n, __global const uchar *types,
                           __global const float *table, __global float *eps)
{
    const int i = get_global_id(0);
    if (i < n)
        eps[i] = table[types[i]];
}
