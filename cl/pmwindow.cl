/* The mesh's cloud window and Green's function, shared by cl/pm.cl (the float64 mesh) and cl/pm32.cl (the
 * float32 one), so that both put a particle in the same cells with the same weights as
 * the host (hybridtree/gravity/pm.py).  Needs PM_N and PM_ORDER; the includer keeps
 * FP_CONTRACT OFF (a fused multiply-add could move a particle across a cell face). */

/* The cell of a coordinate in mesh units: its lower mesh point for CIC, its nearest
 * (ties to even, as numpy's rint) for TSC; f = u - cell. */
inline double cell_of(double u)
{
#if PM_ORDER == 2
    return floor(u);
#else
    return rint(u);
#endif
}

inline ulong wrap_index(double c)
{
    long i = (long)c % PM_N;
    return (ulong)(i < 0 ? i + PM_N : i);
}

/* The weight of the mesh point at offset o (cell + o) of a particle at f = u - cell:
 * CIC o = 0, 1; TSC o = -1, 0, 1 (the host's expressions, so the same bits). */
inline double weight(int o, double f)
{
#if PM_ORDER == 2
    return o == 0 ? 1.0 - f : f;
#else
    if (o < 0) return 0.5 * ((0.5 - f) * (0.5 - f));
    if (o == 0) return 0.75 - f * f;
    return 0.5 * ((0.5 + f) * (0.5 + f));
#endif
}

/* Particle i's cloud: per axis its cell (wrapped) and offset f = u - cell, u = x scale +
 * shift in mesh units */
inline void cloud(__global const double *pos, const size_t i, const double scale,
                  const double shift, double *f, ulong *c)
{
    for (int a = 0; a < 3; a++) {
        const double u = pos[3 * i + a] * scale + shift;
        const double cu = cell_of(u);
        f[a] = u - cu;
        c[a] = wrap_index(cu);
    }
}

#if PM_ORDER == 2
#define O_LO 0
#else
#define O_LO (-1)
#endif
#define O_HI 1

/* The long range's Green's function at mesh wave vector (ix, iy, iz), deconvolved by the
 * window twice (assignment and interpolation): -4 pi exp(-k^2 r_s^2) / (k^2 W^2), W the
 * window's transform (sinc^PM_ORDER per axis); 0 at k = 0 (the neutral background).
 * kvec, sinc: per axis, as gravity/pm.py makes them; rs2 = r_s^2. */
inline double green_of(__global const double *kvec, __global const double *sinc,
                       const uint ix, const uint iy, const uint iz, const double rs2)
{
    const double kx = kvec[ix], ky = kvec[iy], kz = kvec[iz];
    const double k2 = kx * kx + ky * ky + kz * kz;
    double w = sinc[ix] * sinc[iy] * sinc[iz];
#if PM_ORDER == 3
    w = w * w * w;
#else
    w = w * w;
#endif
    const bool zero = ix == 0 && iy == 0 && iz == 0;
    return zero ? 0.0 : -4.0 * M_PI * exp(-k2 * rs2) / (k2 * w * w);
}
