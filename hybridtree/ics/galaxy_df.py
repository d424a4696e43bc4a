"""The deterministic tables of a disk-galaxy model (:mod:`hybridtree.ics.galaxy`): the
joint potential, the spheroids' isotropic distribution functions by Eddington's inversion
with the inverse CDFs that draw radii and speeds, and the disk's velocity moments.

Units: G = 1; lengths in kpc, masses in 1e10 Msun, velocities in sqrt(G 1e10 Msun / kpc)
= 207.4 km/s (any consistent set works).  Every table is computed in one fixed order with
numpy element-wise operations, cumulative sums and ``einsum`` (no BLAS, whose sums may
depend on the number of threads), so every process gets the same bits.

The potential the spheroids see is spherical: the spheroids' own plus the disk's
spherically averaged mass (its monopole), as in MakeNewDisk-like codes.  The disk sees
the spheroids' exact forces and its own exact (Hankel-transform) forces at every (R, z).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

__all__ = ["DiskTable", "GalaxyTables", "SpheroidTable", "build_tables", "chebyshev_nodes",
           "disk_accelerations"]

N_R = 2048              # radii of the spherical tables (about 250 per decade)
N_U = 513               # nodes of the speed inverse CDFs (Chebyshev-spaced in u)
N_RD = 160              # radii of the disk tables, log-spaced over [R_LO, DISK_RMAX] R_d
R_LO = 1e-3             # innermost disk-table radius, in R_d
DISK_RMAX = 20.0        # the disk is cut at 20 R_d (the exponential holds 4e-8 beyond)
T_MAX, N_T = 10.0, 101  # disk-table heights t = z / z_d in [0, T_MAX]
K_MAX = 60.0            # largest wavenumber of the Hankel integrals, in 1 / z_d
K_PER_WAVE = 16         # wavenumber samples per period of J(k R) at the largest radius
Z_STEP = 0.025          # vertical step of the sech² transforms, in z_d


@dataclass(frozen=True)
class SpheroidTable:
    """Draw tables of one spheroid on the log-radius grid ``ln_r``: ``ln_m`` = ln M(<r)
    of the component (inverse CDF in radius), ``psi`` the total relative potential Ψ(r)
    (> 0), ``q2[i, k]`` = w / Ψ(r_i) at the CDF value u_k = ``chebyshev_nodes()[k]`` of
    the speeds, w = v² / 2 (inverse CDF of p(w) ∝ √w f(Ψ - w)), and ``f`` the
    distribution function f(E) at E = Ψ(r_i)."""

    ln_r: np.ndarray
    ln_m: np.ndarray
    psi: np.ndarray
    q2: np.ndarray
    f: np.ndarray


@dataclass(frozen=True)
class DiskTable:
    """Velocity moments of the disk on the grid ln R (``ln_r``) x t = |z| / z_d (``t``),
    each (N_RD, N_T): ``sig_z``, ``sig_r``, ``sig_phi`` and the mean ``v_phi``; ``v_c``
    the midplane circular speed (N_RD,) in the total potential."""

    ln_r: np.ndarray
    t: np.ndarray
    sig_z: np.ndarray
    sig_r: np.ndarray
    sig_phi: np.ndarray
    v_phi: np.ndarray
    v_c: np.ndarray


@dataclass(frozen=True)
class GalaxyTables:
    """All tables of a model: one :class:`SpheroidTable` per spheroid (halo, bulge; None
    where absent), the disk's :class:`DiskTable` (None without a disk), the radii ``r`` and
    total spherical mass ``m_tot`` behind Ψ."""

    halo: SpheroidTable | None
    bulge: SpheroidTable | None
    disk: DiskTable | None
    r: np.ndarray
    m_tot: np.ndarray


def build_tables(halo: tuple | None, disk: tuple | None, bulge: tuple | None) -> GalaxyTables:
    """Tables of a galaxy: ``halo``/``bulge`` = (kind, mass, scale, r_cut, cut_width) or
    None, ``disk`` = (mass, r_d, z_d, toomre_q, sigma_ratio) or None (see
    :class:`hybridtree.ics.galaxy.Disk`)."""
    spheroids = [s for s in (halo, bulge) if s is not None]
    r = _radii(spheroids, disk)
    ln_r = np.log(r)
    shapes = [_cumulative_mass(s[0], s[2], s[3], s[4], r) for s in spheroids]
    masses = [s[1] / m[-1] * m for s, m in zip(spheroids, shapes)]
    m_sph = np.sum(masses, axis=0) if masses else np.zeros_like(r)
    m_tot = m_sph + (_disk_spherical_mass(disk, r) if disk is not None else 0.0)
    psi = _relative_potential(r, m_tot)
    tables = []
    for s, m, unit in zip(spheroids, masses, shapes):
        rho = s[1] / unit[-1] * _shape(s[0], r / s[2]) * _cut(r, s[3], s[4])
        dlnrho = _dlnshape(s[0], r / s[2]) + _dlncut(r, s[3], s[4])
        f = _eddington(ln_r, psi, rho, rho * dlnrho, m_tot / r)
        tables.append(SpheroidTable(ln_r, np.log(m), psi, _speed_table(psi, f), f))
    it = iter(tables)
    halo_t = next(it) if halo is not None else None
    bulge_t = next(it) if bulge is not None else None
    disk_t = _disk_table(disk, ln_r, m_sph) if disk is not None else None
    return GalaxyTables(halo_t, bulge_t, disk_t, r, m_tot)


# --- spheroids ------------------------------------------------------------------------


def _shape(kind: str, x: np.ndarray) -> np.ndarray:
    return 1.0 / (x * (1.0 + x) ** (2 if kind == "nfw" else 3))


def _dlnshape(kind: str, x: np.ndarray) -> np.ndarray:
    return -1.0 - (2.0 if kind == "nfw" else 3.0) * x / (1.0 + x)


def _cut(r: np.ndarray, r_cut: float, width: float) -> np.ndarray:
    return 0.5 * special.erfc((r - r_cut) / (2.0 * width))


def _dlncut(r: np.ndarray, r_cut: float, width: float) -> np.ndarray:
    # d ln(½ erfc(t)) / d ln r with erfcx, which neither under- nor overflows where it matters
    with np.errstate(over="ignore"):
        return -r / (width * math.sqrt(math.pi) * special.erfcx((r - r_cut) / (2.0 * width)))


def _cumulative_mass(kind: str, scale: float, r_cut: float, width: float,
                     r: np.ndarray) -> np.ndarray:
    """M(<r) of the unit-density shape on the log grid ``r``: trapezoids in ln r, plus
    2π r0³ ρ(r0) inside the first radius (exact for the ρ ∝ 1/r cusp)."""
    dm_du = 4.0 * np.pi * r**3 * _shape(kind, r / scale) * _cut(r, r_cut, width)
    return dm_du[0] / 2.0 + _cumtrapz(dm_du, np.log(r))


def _radii(spheroids: list, disk: tuple | None) -> np.ndarray:
    """The log grid of the spherical tables: from 1e-6 of the smallest scale to beyond
    every cut-off (and the disk's edge)."""
    lo = [s[2] for s in spheroids] + ([disk[2]] if disk is not None else [])
    hi = [s[3] + 14.0 * s[4] for s in spheroids]
    hi += [1.05 * DISK_RMAX * disk[1]] if disk is not None else []
    return np.geomspace(1e-6 * min(lo), max(hi), N_R)


def _relative_potential(r: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Ψ = -Φ of the spherical mass M(<r): G M_top / r_top + G ∫_r^r_top M / r'² dr'."""
    inward = _cumtrapz((m / r)[::-1], -np.log(r)[::-1])[::-1]
    return m[-1] / r[-1] + inward


def _eddington(ln_r: np.ndarray, psi: np.ndarray, rho: np.ndarray, drho_du: np.ndarray,
               gm_over_r: np.ndarray) -> np.ndarray:
    """f(E) at E = Ψ_j by Eddington's formula f(E) = 1/(√8 π²) ∫_0^E ρ''(Ψ) dΨ / √(E - Ψ)
    (dρ/dΨ = 0 at Ψ = 0 for a cut-off density).  ρ'' = d²ρ/dΨ² is linear between nodes and
    each piece is integrated exactly against the kernel.  Negative values (round-off
    where f is tiny) are set to 0."""
    dpsi_du = -gm_over_r
    h = drho_du / dpsi_du
    g = np.gradient(h, ln_r) / dpsi_du
    a, b = psi[1:], psi[:-1]                     # each segment [Ψ_{i+1}, Ψ_i], Ψ falls with r
    ga, slope = g[1:], (g[:-1] - g[1:]) / (b - a)
    f = np.zeros_like(psi)
    for j in range(len(psi) - 1):
        e = psi[j]
        p = np.sqrt(e - a[j:])
        q = np.sqrt(np.maximum(e - b[j:], 0.0))
        d = (b[j:] - a[j:]) / (p + q)            # p - q without cancellation
        i0 = 2.0 * d
        i1 = (2.0 / 3.0) * d * d * (2.0 * p + q)
        f[j] = np.sum(ga[j:] * i0 + slope[j:] * i1)
    return np.maximum(f / (math.sqrt(8.0) * np.pi**2), 0.0)


def _speed_table(psi: np.ndarray, f: np.ndarray) -> np.ndarray:
    """q2[i, k] = w / Ψ_i at the CDF value u_k of p(w) ∝ √w f(Ψ_i - w), w in [0, Ψ_i]:
    the energies of the table (E_j = Ψ_j, j >= i) are the abscissae, so f needs no
    interpolation, and the cusp's small w are sampled finely."""
    u = chebyshev_nodes()
    out = np.zeros((len(psi), N_U))
    for i in range(len(psi) - 2):
        w = psi[i] - psi[i:]
        cdf = _cumtrapz(np.sqrt(w) * f[i:], w)
        if not cdf[-1] > 0.0:
            continue
        out[i] = np.interp(u, cdf / cdf[-1], w) / psi[i]
    out[-2:] = out[-3]
    return out


def chebyshev_nodes() -> np.ndarray:
    """The N_U CDF values u_k = (1 - cos(π k / (N_U - 1))) / 2 of the speed tables:
    dense at both ends, where the inverse CDF bends most."""
    return 0.5 * (1.0 - np.cos(np.pi * np.arange(N_U) / (N_U - 1)))


# --- the disk -------------------------------------------------------------------------


def _disk_spherical_mass(disk: tuple, r: np.ndarray) -> np.ndarray:
    """M_d(<r) of the exponential-sech² disk cut at DISK_RMAX R_d: 2 ∫_0^r ρ̂(z) M_cyl(√(r²
    - z²)) dz, by 96-point Gauss-Legendre over |z| <= min(r, 16 z_d)."""
    mass, r_d, z_d = disk[0], disk[1], disk[2]
    x, wts = np.polynomial.legendre.leggauss(96)
    zmax = np.minimum(r, 16.0 * z_d)[:, None]
    z = 0.5 * zmax * (x + 1.0)
    rho_z = 0.5 / z_d / np.cosh(z / z_d) ** 2
    m_cyl = _exp_disk_fraction(np.sqrt(np.maximum(r[:, None] ** 2 - z * z, 0.0)) / r_d)
    return mass * np.sum(wts * rho_z * m_cyl, axis=1) * zmax[:, 0]


def _exp_disk_fraction(x: np.ndarray) -> np.ndarray:
    """Fraction of the cut exponential disk's mass inside R = x R_d."""
    x = np.minimum(x, DISK_RMAX)
    whole = -math.expm1(-DISK_RMAX) - DISK_RMAX * math.exp(-DISK_RMAX)
    return (-np.expm1(-x) - x * np.exp(-x)) / whole


def _disk_table(disk: tuple, ln_r_sph: np.ndarray, m_sph: np.ndarray) -> DiskTable:
    """The disk's velocity moments in the total potential: the disk's Hankel-transform
    forces plus the spheroids' G M_sph(<r) / r² (``m_sph`` on the grid ``ln_r_sph``)."""
    mass, r_d, z_d, toomre_q, sigma_ratio = disk
    R = r_d * np.geomspace(R_LO, DISK_RMAX, N_RD)
    t = np.linspace(0.0, T_MAX, N_T)
    a_r, a_z = disk_accelerations(mass, r_d, z_d, R, t * z_d)
    rr = np.hypot(R[:, None], t[None, :] * z_d)
    gm_r3 = np.exp(np.interp(np.log(rr), ln_r_sph, np.log(np.maximum(m_sph, 1e-300)))) / rr**3
    if not np.any(m_sph > 0.0):
        gm_r3 = np.zeros_like(rr)
    a_r = a_r - gm_r3 * R[:, None]
    a_z = a_z - gm_r3 * (t * z_d)[None, :]
    sig_z2 = _vertical_dispersion(t, z_d, a_z)
    vc2 = -R[:, None] * a_r                       # R ∂Φ/∂R at every height
    ln_R = np.log(R)
    vc2_mid = vc2[:, 0]
    kappa2 = (np.gradient(vc2_mid, ln_R) + 2.0 * vc2_mid) / R**2
    omega2 = vc2_mid / R**2
    if toomre_q is not None:
        sigma = mass / (2.0 * np.pi * r_d**2) * math.exp(-1.0)
        kappa_d = math.sqrt(np.interp(math.log(r_d), ln_R, kappa2))
        sig_rd = toomre_q * 3.36 * sigma / kappa_d
        sig_r2 = np.broadcast_to((sig_rd**2 * np.exp(-(R - r_d) / r_d))[:, None], sig_z2.shape)
    else:
        sig_r2 = sigma_ratio**2 * sig_z2
    sig_phi2 = sig_r2 * (kappa2 / (4.0 * omega2))[:, None]
    dln_sr2 = np.gradient(np.log(np.maximum(sig_r2, 1e-300)), ln_R, axis=0)
    # the Jeans equation for cylinders (σ_Rz = 0) with ρ ∝ exp(-R/R_d): asymmetric drift
    v_phi2 = vc2 + sig_r2 - sig_phi2 + sig_r2 * (dln_sr2 - (R / r_d)[:, None])
    return DiskTable(ln_R, t, np.sqrt(sig_z2), np.sqrt(sig_r2), np.sqrt(sig_phi2),
                     np.sqrt(np.maximum(v_phi2, 0.0)), np.sqrt(vc2_mid))


def _vertical_dispersion(t: np.ndarray, z_d: float, a_z: np.ndarray) -> np.ndarray:
    """σ_z²(R, z) = (1/ρ(z)) ∫_z^∞ ρ(z') (-a_z(R, z')) dz' for ρ ∝ sech²(z / z_d) (vertical
    hydrostatic equilibrium at each R); above T_MAX z_d the force is taken constant."""
    shape = 1.0 / np.cosh(t) ** 2
    integrand = shape[None, :] * (-a_z) * z_d
    above = _cumtrapz(integrand[:, ::-1], -t[::-1], axis=1)[:, ::-1]
    tail = (1.0 - math.tanh(T_MAX)) * z_d * (-a_z[:, -1:])      # z_d ∫ sech² above T_MAX
    return (above + tail) / shape[None, :]


def disk_accelerations(mass: float, r_d: float, z_d: float, R: np.ndarray,
                       z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The exponential-sech² disk's own acceleration (a_R, a_z), each (len(R), len(z)),
    at radii ``R`` and heights ``z`` >= 0 (G = 1), from its Hankel transform:

        a_R = -2πG ∫ k J1(kR) Σ̃(k) V(k, z) dk,  a_z = -2πG ∫ k J0(kR) Σ̃(k) W(k, z) dk,

    Σ̃(k) = Σ0 R_d² / (1 + k² R_d²)^(3/2) (Σ0 R_d² = M_d / 2π), V = ∫ ρ̂(z') e^(-k|z-z'|)
    dz', W the same with sign(z - z'), ρ̂ = sech²(z/z_d) / (2 z_d).  Midpoint rule in k up
    to K_MAX / z_d with K_PER_WAVE samples per period of J(k R_max); heights are rounded to
    multiples of Z_STEP z_d."""
    dk = 2.0 * np.pi / (K_PER_WAVE * R[-1])
    k = (np.arange(int(math.ceil(K_MAX / z_d / dk))) + 0.5) * dk
    sig_t = mass / (2.0 * np.pi) / (1.0 + (k * r_d) ** 2) ** 1.5
    v, w = _vertical_transforms(k, z, z_d)
    weight = (-2.0 * np.pi * dk * k * sig_t)[:, None]
    kr = np.multiply.outer(R, k)
    a_r = np.einsum("rk,kz->rz", special.j1(kr), weight * v)
    a_z = np.einsum("rk,kz->rz", special.j0(kr), weight * w)
    return a_r, a_z


def _vertical_transforms(k: np.ndarray, z: np.ndarray, z_d: float) -> tuple[np.ndarray, np.ndarray]:
    """V(k, z) and W(k, z) (len(k), len(z)) of ρ̂ = sech²(z/z_d)/(2 z_d): with L(z) =
    ∫_-∞^z ρ̂(z') e^(-k(z-z')) dz', V = L(z) + L(-z) and W = L(z) - L(-z).  L is stepped
    upward on a fine grid (ρ̂ linear in each step, integrated exactly), which never
    overflows."""
    h = Z_STEP * z_d
    n_half = int(round(20.0 / Z_STEP))
    grid = np.arange(-n_half, n_half + 1) * h
    rho = 0.5 / z_d / np.cosh(grid / z_d) ** 2
    x = k * h
    decay = np.exp(-x)
    a = np.where(x > 1e-4, -np.expm1(-x) / np.maximum(x, 1e-300), 1.0 - x / 2.0 + x * x / 6.0)
    b = np.where(x > 1e-4, (1.0 - a) / np.maximum(x, 1e-300), 0.5 - x / 6.0 + x * x / 24.0)
    want = np.rint(np.concatenate([-z[::-1], z]) / h).astype(np.int64) + n_half
    out = {}
    level = np.zeros_like(k)
    targets = set(want.tolist())
    for i in range(len(grid)):
        if i > 0:
            level = decay * level + h * (rho[i - 1] * a + (rho[i] - rho[i - 1]) * b)
        if i in targets:
            out[i] = level.copy()
    up = np.stack([out[i] for i in want[len(z):]], axis=1)
    down = np.stack([out[i] for i in want[:len(z)][::-1]], axis=1)
    return up + down, up - down


# --- helpers --------------------------------------------------------------------------


def _cumtrapz(y: np.ndarray, x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Cumulative trapezoid integral of ``y`` over ``x`` along ``axis``, starting at 0."""
    y = np.moveaxis(np.asarray(y, dtype=np.float64), axis, -1)
    dx = np.diff(x)
    out = np.zeros_like(y)
    out[..., 1:] = np.cumsum(0.5 * (y[..., 1:] + y[..., :-1]) * dx, axis=-1)
    return np.moveaxis(out, -1, axis)
