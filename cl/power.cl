/* The shell sums of the matter power spectrum on the device
 * (hybridtree/analysis/power_device.py; the host's reference is the slab loop of
 * hybridtree/analysis/power.py's power_spectrum, which this follows operation for
 * operation).
 *
 * z: the complex mesh Z = F1 + i F2 of n^3 points in C order (reikna's FFT of the two
 * real mass meshes, the unshifted one as the real part and the one shifted by half a
 * cell as the imaginary part; F2 = 0 without interlacing).  One work-item per (x-slab i,
 * shell b) sums, over the modes of the rfft half (kz = 0 .. n_half - 1) of slab i whose
 * integer |k|^2 = q lies in the shell's range [qlo, qhi] (bins are monotone in q), the
 * modes' count (k and -k of the full grid), count |k| and count P, in the host's order
 * (y row after y row, kz ascending): the host adds the slabs in order.
 *
 * All tables (windows per axis, phases, |k| per q, each shell's q range) come from the
 * host, computed as the host's own path computes them, so that a mode's |k| and shell are
 * the same bits.  Needs cl_khr_fp64.
 */

#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#else
#error "power.cl needs double precision (cl_khr_fp64)"
#endif

/* products round one at a time, as numpy's */
#pragma OPENCL FP_CONTRACT OFF

static inline double2 cmul(double2 a, double2 b)
{
    return (double2)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

/* numpy's fftfreq(n, 1/n): 0, 1, ..., then the negative frequencies */
static inline long freq_of(uint j, uint n)
{
    return j < (n + 1) / 2 ? (long)j : (long)j - (long)n;
}

/* the smallest k >= 0 with k^2 >= v (v >= 0) and the largest with k^2 <= v */
static inline long isqrt_ceil(long v)
{
    long k = (long)sqrt((double)v);
    while (k > 0 && (k - 1) * (k - 1) >= v) k--;
    while (k * k < v) k++;
    return k;
}

static inline long isqrt_floor(long v)
{
    long k = (long)sqrt((double)v);
    while (k * k > v) k--;
    while ((k + 1) * (k + 1) <= v) k++;
    return k;
}

/* out[(i n_bins2 + b) 3 + 0, 1, 2] := modes, sum count |k|, sum count P of slab i in
 * shell b, for b = 1 .. n_bins2 - 2 (bins 0 and n_bins2 - 1, k = 0 and beyond k_max, are
 * not wanted: left 0).  c: Z to mass per mesh point ((box / n)^3); scale: n^3 / total
 * mass; win: the window per index (sinc(freq / n)^order, n values), winz: per kz (n_half);
 * ph, phz: exp(i pi freq / n) per index and per kz; kmag: kf sqrt(q) per q; qrange: each
 * shell's (qlo, qhi), qlo > qhi for an empty one. */
__kernel void pk_shells(__global const double2 *z, uint n, uint n_half, uint interlace,
                        double c, double scale,
                        __global const double *win, __global const double *winz,
                        __global const double2 *ph, __global const double2 *phz,
                        __global const double *kmag, __global const long2 *qrange,
                        uint n_bins2, __global double *out)
{
    size_t gid = get_global_id(0);
    if (gid >= (size_t)n * n_bins2) return;
    uint i = (uint)(gid / n_bins2), b = (uint)(gid % n_bins2);
    double modes = 0.0, sum_k = 0.0, sum_p = 0.0;
    long2 range = qrange[b];
    if (b > 0 && b + 1 < n_bins2 && range.x <= range.y) {
        long fx = freq_of(i, n);
        uint ni = (n - i) % n;
        for (uint j = 0; j < n; j++) {
            long fy = freq_of(j, n);
            long qxy = fx * fx + fy * fy;
            if (qxy > range.y) continue;
            long lo = range.x > qxy ? isqrt_ceil(range.x - qxy) : 0;
            long hi = isqrt_floor(range.y - qxy);
            if (hi > (long)n_half - 1) hi = (long)n_half - 1;
            uint nj = (n - j) % n;
            size_t row = ((size_t)i * n + j) * n, mirror_row = ((size_t)ni * n + nj) * n;
            double2 pxy = cmul(ph[i], ph[j]);
            double wxy = win[i] * win[j];
            for (long kz = lo; kz <= hi; kz++) {
                double2 zk = z[row + kz] * c;
                double2 d;
                if (interlace) {
                    double2 m = z[mirror_row + (n - kz) % n] * c;
                    m.y = -m.y;                                  /* Z(-k)* */
                    double2 f1 = (zk + m) * 0.5;
                    double2 diff = zk - m;
                    double2 f2 = (double2)(diff.y * 0.5, diff.x * -0.5);   /* -0.5i diff */
                    d = (f1 + cmul(f2, cmul(pxy, phz[kz]))) * 0.5;
                } else {
                    d = zk;
                }
                double s = scale / (wxy * winz[kz]);
                double re = d.x * s, im = d.y * s;
                double p = re * re + im * im;
                double count = (kz == 0 || ((n & 1) == 0 && kz == n / 2)) ? 1.0 : 2.0;
                modes += count;
                sum_k += count * kmag[fx * fx + fy * fy + kz * kz];
                sum_p += count * p;
            }
        }
    }
    size_t o = ((size_t)i * n_bins2 + b) * 3;
    out[o] = modes;
    out[o + 1] = sum_k;
    out[o + 2] = sum_p;
}
