/* Batched 1-D complex FFTs (complex64) of power-of-two length in local memory, in place in
 * global memory: the compact float32 mesh's transforms (hybridtree/gravity/pm_compact.py).
 *
 * Build-time defines: FFT_L (line length, a power of two, 2 .. 2048), FFT_LOG (log2
 * FFT_L), FFT_B (lines per work-group, a power of two), FFT_N (the length the twiddle
 * table was made for: tw[m] = exp(-2 pi i m / FFT_N), m = 0 .. FFT_N / 2, computed in
 * float64 on the host; FFT_N / FFT_L a power of two), FFT_CONTIG (1: lines are
 * contiguous, element stride 1; 0: strided, adjacent lines adjacent in memory).
 *
 * Line l starts at (l / inner) outer + l % inner, its element j at start + j stride.
 * A work-group of any size takes lines l0 .. l0 + FFT_B - 1: loads them (each element
 * to its bit-reversed place), runs the FFT_LOG radix-2 stages of the iterative
 * Cooley-Tukey transform, one barrier each, and stores them back.  Loads and stores
 * read whole lines in a row (contiguous lines) or the FFT_B lines' j-th elements side
 * by side (strided lines: neighbouring work-items then touch neighbouring words).
 * dir = 1: forward (exp(-i ...)), -1: inverse, unnormalised.  rev: the bit reversal
 * of FFT_LOG bits (a table from the host: a loop here compiles to llvm.bitreverse,
 * which Oclgrind cannot run).
 */

#pragma OPENCL FP_CONTRACT OFF

inline float2 cmul(const float2 a, const float2 b)
{
    return (float2)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

/* item t of a work-group's FFT_B lines of FFT_L: its line and element (contiguous
 * lines a line after another, strided ones their j-th elements side by side) */
#if FFT_CONTIG
#define LINE_OF(t) ((t) / FFT_L)
#define ELEM_OF(t) ((t) % FFT_L)
#else
#define LINE_OF(t) ((t) % FFT_B)
#define ELEM_OF(t) ((t) / FFT_B)
#endif

inline ulong line_start(ulong l, ulong inner, ulong outer)
{
    return (l / inner) * outer + l % inner;
}

__kernel void fft_lines(__global float2 *data, __global const float2 *tw,
                        __global const ushort *rev, const ulong lines,
                        const ulong stride, const ulong inner, const ulong outer,
                        const int dir)
{
    __local float2 s[FFT_B * FFT_L];
    const uint lid = get_local_id(0), g = get_local_size(0);
    const ulong l0 = (ulong)get_group_id(0) * FFT_B;
    for (uint t = lid; t < FFT_B * FFT_L; t += g) {
        const uint b = LINE_OF(t), j = ELEM_OF(t);
        const ulong l = l0 + b;
        if (l < lines)
            s[b * FFT_L + rev[j]] = data[line_start(l, inner, outer) + j * stride];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint len = 2; len <= FFT_L; len <<= 1) {
        const uint hl = len >> 1, twstep = FFT_N / len;
        for (uint u = lid; u < FFT_B * (FFT_L / 2); u += g) {
            const uint b = u / (FFT_L / 2), p = u % (FFT_L / 2);
            const uint k = p % hl;
            const uint i0 = b * FFT_L + (p / hl) * len + k, i1 = i0 + hl;
            float2 w = tw[k * twstep];
            if (dir < 0)
                w.y = -w.y;
            const float2 x = s[i0], y = cmul(s[i1], w);
            s[i0] = x + y;
            s[i1] = x - y;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (uint t = lid; t < FFT_B * FFT_L; t += g) {
        const uint b = LINE_OF(t), j = ELEM_OF(t);
        const ulong l = l0 + b;
        if (l < lines)
            data[line_start(l, inner, outer) + j * stride] = s[b * FFT_L + j];
    }
}
