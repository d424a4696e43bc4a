/* The long-range (PM) part of periodic TreePM gravity on the device
 * (hybridtree/gravity/pm_device.py; the float64 host reference is gravity/pm.py).
 *
 * Build-time defines: PM_N (mesh points per side), PM_ORDER (2 CIC, 3 TSC), PM_ZB (mesh
 * points along z per work-item of the assignment).
 * Mesh arrays are complex (double2) in C order, point j = (ix PM_N + iy) PM_N + iz, as
 * reikna's FFT of shape (PM_N, PM_N, PM_N) sees them.
 *
 * Windows (many processes, hybridtree/gravity/pm_slabs.py): the assignment and the
 * interpolation may work on a window of nx x-planes starting at plane wx (mod PM_N)
 * instead of the whole mesh; then ix is the plane's index in the window and nothing
 * wraps in x (the window holds every plane the particles' clouds reach).  wrapx = 1,
 * wx = 0, nx = PM_N is the whole periodic mesh.
 *
 * The mass assignment gathers instead of scattering: every mesh point sums the particles
 * of its neighbouring cells (particles sorted by cell, pm_keys and pm_cell_start) in a
 * fixed order, so the density is the same bits on every run without atomics.  Positions
 * enter in mesh units u = x N / L + shift, the weights as the host computes them.
 */

#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#else
#error "pm.cl needs double precision (cl_khr_fp64)"
#endif

/* a * b + c must round twice, as numpy does, so that a particle's cell and weights are
 * the host's (a fused multiply-add could move a particle across a cell face) */
#pragma OPENCL FP_CONTRACT OFF

#define N3 ((ulong)PM_N * PM_N * PM_N)

#include "pmwindow.cl"

/* x-plane ix of the mesh as a plane of the window starting at wx */
inline ulong in_window(ulong ix, uint wx)
{
    return (ix + PM_N - wx) % PM_N;
}

/* Sort key of every particle: its flattened cell (in the window starting at plane wx). */
__kernel void pm_keys(__global const double *pos, const uint n, const double scale,
                      const double shift, const uint wx, __global ulong *keys)
{
    const uint i = get_global_id(0);
    if (i >= n) return;
    ulong c[3];
    for (int a = 0; a < 3; a++)
        c[a] = wrap_index(cell_of(pos[3 * (size_t)i + a] * scale + shift));
    keys[i] = (in_window(c[0], wx) * PM_N + c[1]) * PM_N + c[2];
}

/* The particles in cell order as (f_x, f_y, f_z, mass), f = u - cell the offsets from
 * their cells: the gather then reads them contiguously and recomputes nothing. */
__kernel void pm_sorted(__global const uint *order, __global const double *pos,
                        __global const double *mass, const uint n, const double scale,
                        const double shift, __global double4 *out)
{
    const uint p = get_global_id(0);
    if (p >= n) return;
    const size_t i = order[p];
    double f[3];
    for (int a = 0; a < 3; a++) {
        const double u = pos[3 * i + a] * scale + shift;
        f[a] = u - cell_of(u);
    }
    out[p] = (double4)(f[0], f[1], f[2], mass[i]);
}

/* start[c] = the first sorted particle of cell c (start[cells] = n; cells: those of the
 * window).  Work-item i in [0, n] writes the cells between the previous particle's key
 * and its own, so every entry is written exactly once. */
__kernel void pm_cell_start(__global const ulong *keys, const uint n, const ulong cells,
                            __global uint *start)
{
    const uint i = get_global_id(0);
    if (i > n) return;
    const ulong lo = i == 0 ? 0 : keys[i - 1] + 1;
    const ulong hi = i == n ? cells : keys[i];
    for (ulong c = lo; c <= hi; c++)
        start[c] = i;
}

/* Mass assignment by gather: mesh[2 j + comp] = (N / L)^3 sum of weight * mass over the
 * particles whose cloud reaches point j (a particle of cell c reaches c + o).  A
 * work-item fills PM_ZB points j_z = z0 .. z0 + PM_ZB - 1 of one (x, y) column: from each
 * of the 8 or 9 neighbouring columns it reads the cells z0 - O_HI .. z0 + PM_ZB - 1 - O_LO
 * once, in ascending z, and each particle adds to the points it reaches (every particle
 * is read about 9 times, not 27).  Each point's sum runs over the columns in a fixed
 * order, then the cells by ascending z, then the particles in sorted order: the same
 * bits on every run.  nx planes of a window (wrapx 0) or the whole mesh (wrapx 1). */
__kernel void pm_assign(__global const double4 *part, __global const uint *start,
                        const uint comp, const double norm, const uint nx, const uint wrapx,
                        __global double *mesh)
{
    const ulong blocks = (PM_N + PM_ZB - 1) / PM_ZB;
    const ulong g = get_global_id(0);
    if (g >= (ulong)nx * PM_N * blocks) return;
    const long ix = g / (PM_N * blocks), iy = (g / blocks) % PM_N;
    const long z0 = (g % blocks) * PM_ZB;
    double sum[PM_ZB];
    for (int t = 0; t < PM_ZB; t++)
        sum[t] = 0.0;
    for (int ox = O_LO; ox <= O_HI; ox++) {
        if (!wrapx && (ix - ox < 0 || ix - ox >= (long)nx))
            continue;                     /* outside the window: no particles there */
        const ulong cx = wrapx ? (ix - ox + PM_N) % PM_N : (ulong)(ix - ox);
        for (int oy = O_LO; oy <= O_HI; oy++) {
            const ulong col = (cx * PM_N + (iy - oy + PM_N) % PM_N) * PM_N;
            for (long cz = z0 - O_HI; cz < z0 + PM_ZB - O_LO; cz++) {
                const ulong c = col + (cz + PM_N) % PM_N;
                const uint end = start[c + 1];
                for (uint p = start[c]; p < end; p++) {
                    const double4 q = part[p];
                    const double wxy = weight(ox, q.x) * weight(oy, q.y);
                    for (int oz = O_LO; oz <= O_HI; oz++) {
                        const long t = cz + oz - z0;
                        if (t >= 0 && t < PM_ZB)
                            sum[t] += wxy * weight(oz, q.z) * q.w;
                    }
                }
            }
        }
    }
    for (int t = 0; t < PM_ZB && z0 + t < PM_N; t++)
        mesh[2 * (((ulong)ix * PM_N + iy) * PM_N + z0 + t) + comp] = sum[t] * norm;
}

/* What the host's irfftn does with the gradient -i k phi on a self-conjugate plane
 * (index i == -i mod N: 0 and, for even N, N / 2): the factor k_a that reproduces it.
 * On the Nyquist plane of axis a the host's half spectrum carries k = -k_N; irfftn
 * mirrors it to kz < 0 by conjugation (+k_N there) and keeps only the Hermitian part
 * on the kz = 0 and kz = N/2 planes (0 there); the z gradient vanishes on its own
 * Nyquist plane (rfftfreq gives +k_N to both halves of the pair). */
inline double grad_factor(__global const double *kvec, uint i, uint iz)
{
    const bool zself = iz == (PM_N - iz) % PM_N;
    if (i != (PM_N - i) % PM_N) return kvec[i];
    if (i == 0 || zself) return 0.0;
    return 2 * iz < PM_N ? kvec[i] : -kvec[i];
}

/* Spectra of one mesh's fields from the transformed density Z (mesh 0 in the real part,
 * mesh 1 in the imaginary part: R_0 = (Z(k) + Z*(-k)) / 2, R_1 = (Z(k) - Z*(-k)) / 2i),
 * phi = G R with G = -4 pi exp(-k^2 r_s^2) / (k^2 W^2), W the window (sinc^order per
 * axis), G(0) = 0.  Two real fields ride in one complex inverse FFT:
 * f1 = phi + i (-i k_x phi) (-> pot, a_x), f2 = -i k_y phi + i (-i k_z phi) (-> a_y, a_z).
 * a = Z(k), b = Z(-k) at the wave vector of indices (ix, iy, iz). */
inline void green_point(const double2 a, const double2 b, const uint mesh, const double rs2,
                        __global const double *kvec, __global const double *sinc,
                        const uint ix, const uint iy, const uint iz,
                        double2 *f1, double2 *f2)
{
    const double2 r = mesh == 0 ? (double2)(0.5 * (a.x + b.x), 0.5 * (a.y - b.y))
                                : (double2)(0.5 * (a.y + b.y), -0.5 * (a.x - b.x));
    const double kx = kvec[ix], ky = kvec[iy], kz = kvec[iz];
    const double g = green_of(kvec, sinc, ix, iy, iz, rs2);
    const double2 phi = g * r;
    const double dx = grad_factor(kvec, ix, iz), dy = grad_factor(kvec, iy, iz);
    const double dz = iz == (PM_N - iz) % PM_N ? 0.0 : kz;
    *f1 = (double2)(phi.x + dx * phi.x, phi.y + dx * phi.y);
    *f2 = (double2)(dz * phi.x + dy * phi.y, dz * phi.y - dy * phi.x);
}

/* green_point over the whole mesh. */
__kernel void pm_green(__global const double2 *z, const uint mesh, const double rs2,
                       __global const double *kvec, __global const double *sinc,
                       __global double2 *f1, __global double2 *f2)
{
    const ulong j = get_global_id(0);
    if (j >= N3) return;
    const uint ix = j / ((ulong)PM_N * PM_N), iy = (j / PM_N) % PM_N, iz = j % PM_N;
    const ulong jm = ((ulong)((PM_N - ix) % PM_N) * PM_N + (PM_N - iy) % PM_N) * PM_N
                     + (PM_N - iz) % PM_N;
    double2 a1, a2;
    green_point(z[j], z[jm], mesh, rs2, kvec, sinc, ix, iy, iz, &a1, &a2);
    f1[j] = a1;
    f2[j] = a2;
}

/* green_point over one process's part of the transposed mesh (pm_slabs.py): all kx, the
 * ny y-planes ky[0 .. ny) (mesh indices; each with its mirror -ky, whose place among them
 * is mirror[.]), all kz; point j = (ix ny + jy) PM_N + iz. */
__kernel void pm_green_part(__global const double2 *z, const uint ny,
                            __global const uint *ky, __global const uint *mirror,
                            const uint mesh, const double rs2,
                            __global const double *kvec, __global const double *sinc,
                            __global double2 *f1, __global double2 *f2)
{
    const ulong j = get_global_id(0);
    if (j >= (ulong)PM_N * ny * PM_N) return;
    const uint ix = j / ((ulong)ny * PM_N), jy = (j / PM_N) % ny, iz = j % PM_N;
    const ulong jm = ((ulong)((PM_N - ix) % PM_N) * ny + mirror[jy]) * PM_N
                     + (PM_N - iz) % PM_N;
    double2 a1, a2;
    green_point(z[j], z[jm], mesh, rs2, kvec, sinc, ix, ky[jy], iz, &a1, &a2);
    f1[j] = a1;
    f2[j] = a2;
}

/* Interpolation at the sinks with the assignment window: (pot, a_x, a_y, a_z) from the
 * fields f1 = (pot, a_x), f2 = (a_y, a_z).  mode 0: add to acc and pot; 1: keep in tmp
 * (the first of two interlaced meshes); 2: add the mean of tmp and this mesh.  The fields
 * cover the window starting at plane w0 (0: the whole mesh).  Work-item
 * p takes sink order[p] (sinks sorted by cell): neighbouring work-items then read the
 * same mesh points, which random sinks would fetch from memory one by one. */
__kernel void pm_interp(__global const uint *order, __global const double *sinks,
                        const uint m, const double scale,
                        const double shift, const uint w0, __global const double2 *f1,
                        __global const double2 *f2, const uint mode,
                        __global double4 *tmp, __global double *acc, __global double *pot)
{
    const uint p = get_global_id(0);
    if (p >= m) return;
    const uint i = order[p];
    double u[3], c[3];
    for (int a = 0; a < 3; a++) {
        u[a] = sinks[3 * (size_t)i + a] * scale + shift;
        c[a] = cell_of(u[a]);
    }
    double4 out = (double4)(0.0);
    for (int ox = O_LO; ox <= O_HI; ox++) {
        const double wx = weight(ox, u[0] - c[0]);
        const ulong jx = in_window(wrap_index(c[0] + ox), w0);
        for (int oy = O_LO; oy <= O_HI; oy++) {
            const double wxy = wx * weight(oy, u[1] - c[1]);
            const ulong jy = wrap_index(c[1] + oy);
            for (int oz = O_LO; oz <= O_HI; oz++) {
                const double w = wxy * weight(oz, u[2] - c[2]);
                const ulong j = (jx * PM_N + jy) * PM_N + wrap_index(c[2] + oz);
                const double2 a = f1[j], b = f2[j];
                out += (double4)(w * a.x, w * a.y, w * b.x, w * b.y);
            }
        }
    }
    if (mode == 1) {
        tmp[i] = out;
        return;
    }
    if (mode == 2)
        out = 0.5 * (tmp[i] + out);
    pot[i] += out.x;
    acc[3 * (size_t)i] += out.y;
    acc[3 * (size_t)i + 1] += out.z;
    acc[3 * (size_t)i + 2] += out.w;
}
