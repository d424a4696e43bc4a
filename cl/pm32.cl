/* The compact float32 long-range mesh (hybridtree/gravity/pm_compact.py): two float32
 * arrays of PM_N^3 words (A, B) and side buffers of PM_N^2; nothing per particle.
 *
 * Build-time defines: PM_N (mesh side, a power of two >= 8), PM_ORDER (2 CIC, 3 TSC).
 * Real fields: point (x, y, z) at word (x PM_N + y) PM_N + z.  Complex view: the same
 * words as complex64 c[x][y][h], h = PM_N / 2 pairs along z (c = f(2h) + i f(2h + 1)).
 *
 * Deposit: a 64-bit fixed-point sum per point, lo words in A and hi words in B, added
 * with 32-bit integer atomics (the carry of the lo word detected from its old value):
 * integer sums are exact, so the density is the same bits in any order.  The fixed-point
 * unit is 2^-s of a mass, s = 30 - e with 2^e <= largest mass < 2^(e+1): one particle's
 * whole weight is below 2^31 units, and 2^32 of them cannot overflow 64 bits.
 *
 * Positions enter in mesh units u = x N / L + shift, cells and weights as cl/pm.cl's.
 */

#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#else
#error "pm32.cl needs double precision (cl_khr_fp64) for the float64 positions"
#endif

#pragma OPENCL FP_CONTRACT OFF

#define N3 ((ulong)PM_N * PM_N * PM_N)
#define NH (PM_N / 2)

#include "pmwindow.cl"

/* the fixed-point exponent s from the high word of the largest mass's float64 bits */
inline int unit_shift(__global const uint *mhi)
{
    const int e = (int)((mhi[0] >> 20) & 0x7ffu) - 1023;
    return 30 - clamp(e, -900, 900);
}

/* mhi[0] := the largest high word of the masses' bits (positive doubles order as
 * their bits do) */
__kernel void c_mass_max(__global const double *mass, const uint n, __global uint *mhi)
{
    const uint i = get_global_id(0);
    if (i >= n) return;
    atomic_max(mhi, (uint)(as_ulong(mass[i]) >> 32));
}

/* every particle adds its cloud's weights x mass in fixed point; the mass is mass[i]
 * where has_mass, else mass1 */
__kernel void c_deposit(__global const double *pos, __global const double *mass,
                        const double mass1, const uint has_mass, const uint n,
                        const double scale, const double shift,
                        __global const uint *mhi, __global uint *lo, __global uint *hi)
{
    const uint i = get_global_id(0);
    if (i >= n) return;
    double f[3];
    ulong c[3];
    cloud(pos, i, scale, shift, f, c);
    const double m = ldexp(has_mass ? mass[i] : mass1, unit_shift(mhi));
    for (int ox = O_LO; ox <= O_HI; ox++) {
        const double wx = weight(ox, f[0]) * m;
        const ulong jx = (c[0] + PM_N + ox) % PM_N;
        for (int oy = O_LO; oy <= O_HI; oy++) {
            const double wxy = wx * weight(oy, f[1]);
            const ulong jy = (c[1] + PM_N + oy) % PM_N;
            for (int oz = O_LO; oz <= O_HI; oz++) {
                const uint v = (uint)rint(wxy * weight(oz, f[2]));
                if (v == 0) continue;
                const ulong j = (jx * PM_N + jy) * PM_N + (c[2] + PM_N + oz) % PM_N;
                const uint old = atomic_add(&lo[j], v);
                if (old > 0xffffffffu - v)
                    atomic_inc(&hi[j]);
            }
        }
    }
}

/* rows[r] := the fixed-point sum of mesh row r (PM_N points along z) */
__kernel void c_rowsum(__global const uint *lo, __global const uint *hi, __global ulong *rows)
{
    const ulong r = get_global_id(0);
    if (r >= (ulong)PM_N * PM_N) return;
    ulong s = 0;
    for (ulong j = r * PM_N; j < (r + 1) * PM_N; j++)
        s += ((ulong)hi[j] << 32) | lo[j];
    rows[r] = s;
}

/* out[i] := in[i len] + ... + in[i len + len - 1], i < count */
__kernel void c_sum(__global const ulong *in, const uint len, const uint count,
                    __global ulong *out)
{
    const uint i = get_global_id(0);
    if (i >= count) return;
    ulong s = 0;
    for (uint j = 0; j < len; j++)
        s += in[(size_t)i * len + j];
    out[i] = s;
}

/* A (in place of the lo words) := the float32 density contrast rho - mean (mass /
 * length^3): the fixed-point value less the mean (total / N^3, exact integers) times
 * 2^-s norm, norm = (N / L)^3 */
__kernel void c_contrast(__global uint *lo, __global const uint *hi,
                         __global const ulong *total, __global const uint *mhi,
                         const double norm)
{
    const ulong j = get_global_id(0);
    if (j >= N3) return;
    const ulong v = ((ulong)hi[j] << 32) | lo[j];
    const long d = (long)(v - total[0] / N3);
    lo[j] = as_uint((float)(ldexp((double)d, -unit_shift(mhi)) * norm));
}

inline float2 conj2(const float2 a)
{
    return (float2)(a.x, -a.y);
}

inline float2 cmul(const float2 a, const float2 b)
{
    return (float2)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

/* The real transform's value at kz from C(k, kz) = a and C(-k, h - kz) = b of the
 * packed complex transform: (a + b*) / 2 - i W^kz (a - b*) / 2, W = exp(-2 pi i / N) */
inline float2 r2c_point(const float2 a, const float2 b, const float2 w)
{
    const float2 e = 0.5f * (a + conj2(b)), d = 0.5f * (a - conj2(b));
    const float2 o = (float2)(d.y, -d.x);                       /* -i d */
    return e + cmul(w, o);
}

/* The half spectrum from the packed transform, in place (z = 0 .. h - 1 in a, z = h in
 * nyq[x N + y]).  Work-item (kx, ky, kz <= h / 2) takes the closed set of k = (kx, ky)
 * and -k at kz and h - kz, once per pair {k, -k}. */
__kernel void c_r2c(__global float2 *a, __global float2 *nyq, __global const float2 *tw)
{
    const ulong g = get_global_id(0);
    if (g >= (ulong)PM_N * PM_N * (NH / 2 + 1)) return;
    const uint kz = g % (NH / 2 + 1);
    const uint row = g / (NH / 2 + 1), kx = row / PM_N, ky = row % PM_N;
    const uint mrow = ((PM_N - kx) % PM_N) * PM_N + (PM_N - ky) % PM_N;
    if (row > mrow) return;
    const uint z2 = NH - kz, zc = z2 % NH;
    const float2 a1 = a[(ulong)row * NH + kz], a2 = a[(ulong)mrow * NH + zc];
    const float2 a3 = a[(ulong)row * NH + zc], a4 = a[(ulong)mrow * NH + kz];
    const float2 w1 = tw[kz], w2 = tw[z2];
    const float2 f1 = r2c_point(a1, a2, w1), f2 = r2c_point(a2, a1, w2);
    const float2 f3 = r2c_point(a3, a4, w2), f4 = r2c_point(a4, a3, w1);
    a[(ulong)row * NH + kz] = f1;
    a[(ulong)mrow * NH + kz] = f4;
    if (z2 == NH) {
        nyq[mrow] = f2;
        nyq[row] = f3;
    } else {
        a[(ulong)mrow * NH + z2] = f2;
        a[(ulong)row * NH + z2] = f3;
    }
}

/* The factor k_a of the gradient on the half spectrum that reproduces numpy's irfftn
 * (cl/pm.cl grad_factor, iz in 0 .. h): 0 on self-conjugate planes of the Nyquist */
inline double grad_factor(__global const double *kvec, uint i, uint iz)
{
    if (i != (PM_N - i) % PM_N) return kvec[i];
    if (i == 0 || iz == 0 || iz == NH) return 0.0;
    return kvec[i];
}

/* field (0 phi, 1 a_x, 2 a_y, 3 a_z) at half-spectrum point (ix, iy, iz) from the
 * density's transform f: G f or -i k_a G f, G = -4 pi exp(-k^2 r_s^2) / (k^2 W^2) / N^3
 * (the inverse transform's 1 / N^3 folded in), as cl/pm.cl's green_point; field 4: f /
 * N^3 (the plain inverse transform) */
inline float2 field_at(const float2 f, const uint field, const double rs2,
                       __global const double *kvec, __global const double *sinc,
                       const uint ix, const uint iy, const uint iz)
{
    if (field == 4)
        return (float2)((float)(f.x / (double)N3), (float)(f.y / (double)N3));
    const double kx = kvec[ix], ky = kvec[iy], kz = kvec[iz];
    const double g = green_of(kvec, sinc, ix, iy, iz, rs2) / (double)N3;
    if (field == 0)
        return (float2)((float)(g * f.x), (float)(g * f.y));
    double d;
    if (field == 1) d = grad_factor(kvec, ix, iz);
    else if (field == 2) d = grad_factor(kvec, iy, iz);
    else d = (iz == 0 || iz == NH) ? 0.0 : kz;
    const double dg = d * g;
    return (float2)((float)(dg * f.y), (float)(-dg * f.x));    /* -i d g f */
}

/* The packed spectrum whose inverse transform is the real field with half spectrum F at
 * kz and F(-k, h - kz) = m: (F + m*) + i W^-kz (F - m*) (the 1 / 2's go with the 1 / N^3
 * of G: the unnormalised inverse of N^3 / 2 points gives the field) */
inline float2 c2r_point(const float2 f, const float2 m, const float2 w)
{
    const float2 s = f + conj2(m), d = f - conj2(m);
    const float2 t = cmul(conj2(w), d);
    return (float2)(s.x - t.y, s.y + t.x);                       /* s + i t */
}

/* B := the packed spectrum of field ``field`` (see field_at) from the density's half
 * spectrum in A and nyq; the same closed sets as c_r2c (A is only read) */
__kernel void c_green_c2r(__global const float2 *a, __global const float2 *nyq,
                          __global const float2 *tw, const uint field, const double rs2,
                          __global const double *kvec, __global const double *sinc,
                          __global float2 *b)
{
    const ulong g = get_global_id(0);
    if (g >= (ulong)PM_N * PM_N * (NH / 2 + 1)) return;
    const uint kz = g % (NH / 2 + 1);
    const uint row = g / (NH / 2 + 1), kx = row / PM_N, ky = row % PM_N;
    const uint mx = (PM_N - kx) % PM_N, my = (PM_N - ky) % PM_N, mrow = mx * PM_N + my;
    if (row > mrow) return;
    const uint z2 = NH - kz;
    const float2 p1 = field_at(a[(ulong)row * NH + kz], field, rs2, kvec, sinc, kx, ky, kz);
    const float2 p4 = field_at(a[(ulong)mrow * NH + kz], field, rs2, kvec, sinc, mx, my, kz);
    const float2 s2 = z2 == NH ? nyq[mrow] : a[(ulong)mrow * NH + z2];
    const float2 s3 = z2 == NH ? nyq[row] : a[(ulong)row * NH + z2];
    const float2 p2 = field_at(s2, field, rs2, kvec, sinc, mx, my, z2);
    const float2 p3 = field_at(s3, field, rs2, kvec, sinc, kx, ky, z2);
    const float2 w1 = tw[kz], w2 = tw[z2];
    b[(ulong)row * NH + kz] = c2r_point(p1, p2, w1);
    b[(ulong)mrow * NH + kz] = c2r_point(p4, p3, w1);
    if (z2 < NH) {
        b[(ulong)row * NH + z2] = c2r_point(p3, p4, w2);
        b[(ulong)mrow * NH + z2] = c2r_point(p2, p1, w2);
    }
}

/* Interpolation of the real field f (a component: 0 the potential, 1-3 a_x .. a_z) at
 * the particles with the deposit's window, times factor, added: mode 0 to acc (float64,
 * n x 3) or pot (float64, n); mode 1 to part4 (float32 (a_x, a_y, a_z, pot) per
 * particle) */
__kernel void c_interp(__global const double *pos, const uint n, const double scale,
                       const double shift, __global const float *f, const uint comp,
                       const double factor, const uint mode, __global double *acc,
                       __global double *pot, __global float *part4)
{
    const uint i = get_global_id(0);
    if (i >= n) return;
    double fr[3];
    ulong c[3];
    cloud(pos, i, scale, shift, fr, c);
    double out = 0.0;
    for (int ox = O_LO; ox <= O_HI; ox++) {
        const double wx = weight(ox, fr[0]);
        const ulong jx = (c[0] + PM_N + ox) % PM_N;
        for (int oy = O_LO; oy <= O_HI; oy++) {
            const double wxy = wx * weight(oy, fr[1]);
            const ulong jy = (c[1] + PM_N + oy) % PM_N;
            for (int oz = O_LO; oz <= O_HI; oz++) {
                const ulong j = (jx * PM_N + jy) * PM_N + (c[2] + PM_N + oz) % PM_N;
                out += wxy * weight(oz, fr[2]) * (double)f[j];
            }
        }
    }
    out *= factor;
    if (mode == 1)
        part4[4 * (size_t)i + (comp == 0 ? 3 : comp - 1)] += (float)out;
    else if (comp == 0)
        pot[i] += out;
    else
        acc[3 * (size_t)i + comp - 1] += out;
}
