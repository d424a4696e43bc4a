"""Cosmological initial conditions: a sphere cut from a Gaussian cold-dark-matter field.

The set-up of the oct-tree cosmology runs: particles on a cubic grid of comoving side
``box`` (internal length) and n_grid³ points, displaced by Lagrangian perturbation theory
(Zel'dovich, or 2LPT) from one realization of the linear power spectrum; the particles
whose *Lagrangian* position q lies within comoving radius R of the cube's centre are kept,
with vacuum outside, and given in physical coordinates r = a x, to be integrated with
Newtonian gravity plus the Λ term Ω_Λ H0² r.

Conventions (all internal units, G = 1; see :class:`~hybridtree.cosmo.background.Cosmology`):

* Grid: point (i, j, l), 0 <= i, j, l < n, sits at the comoving Lagrangian position
  q = ((i, j, l) + 1/2) d - box/2, d = box / n, so the cube's centre is the origin (and
  no grid point lies on it).  Its linear index is (i n + j) n + l and its particle ID is
  1 + that index, so IDs name grid points whatever the cut keeps.
* Fourier: numpy's unnormalized forward DFT, δ_k = Σ_q δ(q) e^{-i k·q}, k = (2π/box) ×
  integers.  The field has ⟨|δ_k|²⟩ = N² P(k) / V (N = n³, V = box³), which gives the
  real-space variance ⟨δ²⟩ = Σ_k P(k) / V = ∫ d³k/(2π)³ P(k) of the continuous field.
  It is made by Fourier transforming real white noise w (unit variance, ⟨|w_k|²⟩ = N)
  and multiplying by √(P(k) N / V); the transform of a real field is Hermitian, so
  rfftn/irfftn keep the symmetry without any bookkeeping.  The k = 0 mode (the box's
  mean density) and the Nyquist planes (|k_i| = π n/box for some i, whose gradients are
  ill-defined on the grid) are set to zero, as 2LPTic does.
* Displacements, for the linear field δ at a = 1: ψ1 = -∇φ1 with ∇²φ1 = δ
  (ψ1_k = i k δ_k / k², so ∇·ψ1 = -δ); second order ψ2 = ∇φ2 with
  ∇²φ2 = Σ_{a<b} (ψ1_{a,a} ψ1_{b,b} - ψ1_{a,b}²) (Scoccimarro 1998; Crocce, Pueblas &
  Scoccimarro 2006).  Comoving positions x = q + D ψ1 + D2 ψ2 with D = D(a) (D(1) = 1)
  and D2 ≈ -(3/7) D² Ω_m(a)^{-1/143} (Bouchet et al. 1995); D2 < 0 makes overdense
  regions collapse faster than Zel'dovich.
* Velocities: physical v = dr/dt = H r + a (f H D ψ1 + f2 H D2 ψ2), f = d ln D / d ln a
  (exact, from the background), f2 ≈ 2 Ω_m(a)^{6/11}.
* Masses: all equal, Ω_m ρ_crit,0 d³ (the comoving mean matter density times a cell; Ω_m
  includes the baryons, which move with the dark matter here).  The cut is on q, so the
  sphere holds exactly its Lagrangian grid points: mass = m × (number of points with
  |q| < R) ≈ Ω_m ρ_crit,0 (4π/3) R³ up to the grid's surface term.

Determinism: the white noise is drawn plane by plane, plane i (all q with first index i)
from its own stream ``default_rng(SeedSequence(seed, spawn_key=(i,)))``, and every
process computes the whole field with the same FFTs (pocketfft computes each 1-D
transform the same way whichever thread does it, so ``workers`` does not change the
bits either; the promise is for one installation: other numpy/scipy builds or CPUs may
round differently).  :func:`cosmo_sphere_share` then keeps the particles with sphere ordinals
[lo, hi) (their rank, in grid-index order, among the grid points in the sphere), and every
per-particle quantity is computed element by element: the shares of any split of
[0, :func:`sphere_count`) are, concatenated, the bits of :func:`cosmo_sphere`.

Cost (each process computes the whole grid, keeps its share): the fields are held lean
(:mod:`hybridtree.ics.lpt_fields`: 24 bytes per grid point at their peak for order 1, 48
for order 2, in float64; half in float32, ``fields``); with the particles kept, peak
resident memory ≈ 75 bytes per grid point for order 1 and ≈ 90 for order 2, measured for
the whole sphere of radius box/2 (52 % of the points kept, ~100 bytes per kept particle
included; 92 B at 128³ for order 2, 2026-11-30): 256³ 1.3 / 1.5 GB, so 512³ ≈ 10 / 12 GB.
A periodic box's run of one process makes its particles into the state a few planes at
a time (:class:`hybridtree.ics.cosmo_box.BoxRows`): ~50 B per grid point.  Time on the 2-core development
machine (scipy.fft, workers = -1, whole sphere of radius box/2, 2026-11):
n_grid 128: 0.4 s (order 1), 0.6 s (order 2); n_grid 256: 3.2 s, 6.2 s
(12 inverse FFTs of the 14 for order 2 dominate; drawing the noise is ~0.4 s at 256³).
"""

from __future__ import annotations

import numbers
import numpy as np

from ..config.quantities import accepts_quantities
from ..cosmo.background import Cosmology
from .lpt_fields import (FIELDS, check_seed as _check_seed, fields_of, lpt_fields, noise_k,
                         scale_by_power, zero_unwanted)

__all__ = ["sphere_count", "lagrangian_positions", "white_noise", "linear_density_k",
           "lpt_displacements", "displaced_grid", "cosmo_sphere", "cosmo_sphere_share"]

Particles = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


# --- the grid and the sphere ----------------------------------------------------------

def sphere_count(n_grid: int, box: float, radius: float) -> int:
    """Number of grid points with |q| < ``radius`` (comoving, internal length) on the
    n_grid³ grid of side ``box``: the particles :func:`cosmo_sphere` returns.  Cheap (no
    field), so that processes can split [0, count) among themselves first."""
    n, box, radius = _check_grid(n_grid, box, radius)
    return sum(int(np.count_nonzero(m)) for _, m in _sphere_planes(n, box, radius))


def lagrangian_positions(ids, n_grid: int, box: float) -> np.ndarray:
    """Comoving Lagrangian positions q (m, 3) (internal length, cube centre at the origin)
    of the grid points with particle IDs ``ids`` (1 + linear index (i n + j) n + l)."""
    n = _check_n(n_grid)
    idx = np.asarray(ids, dtype=np.int64) - 1
    if idx.size and (idx.min() < 0 or idx.max() >= n ** 3):
        raise ValueError(f"IDs must lie in 1 .. {n ** 3}")
    ijk = np.stack([idx // (n * n), (idx // n) % n, idx % n], axis=-1)
    return _grid_coord(ijk, n, float(box))


def white_noise(n_grid: int, seed: int) -> np.ndarray:
    """Unit-variance Gaussian white noise (n, n, n) (float64): plane i from the stream
    ``default_rng(SeedSequence(seed, spawn_key=(i,)))``, a fixed part of what a seed means."""
    n, seed = _check_n(n_grid), _check_seed(seed)
    w = np.empty((n, n, n))
    for i in range(n):
        w[i] = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(i,))
                                     ).standard_normal((n, n))
    return w


def linear_density_k(n_grid: int, box: float, cosmo: Cosmology, seed: int,
                     workers: int = -1) -> np.ndarray:
    """Fourier modes δ_k (n, n, n//2 + 1) (complex128, rfftn layout) of the linear density
    contrast at a = 1 on the n_grid³ grid of comoving side ``box`` (internal length):
    ⟨|δ_k|²⟩ = N² P(k)/V with numpy's unnormalized DFT (module docstring), k = 0 and the
    Nyquist planes zero.  ``irfftn(δ_k, s=(n, n, n))`` is the real field on the grid.
    ``workers``: FFT threads (-1: all cores).  The noise is transformed plane by plane
    (:func:`hybridtree.ics.lpt_fields.noise_k`: the bits of ``rfftn(white_noise(n, seed))``)."""
    n = _check_n(n_grid)
    box = _check_positive("box", box)
    delta_k = noise_k(n, _check_seed(seed), workers)
    scale_by_power(delta_k, box, cosmo.power)
    zero_unwanted(delta_k)
    return delta_k


def lpt_displacements(delta_k: np.ndarray, box: float, order: int = 1,
                      take: np.ndarray | None = None, workers: int = -1
                      ) -> tuple[np.ndarray, np.ndarray | None]:
    """First- and second-order Lagrangian displacement fields of the linear field
    ``delta_k`` (rfftn layout, at D = 1; not changed) on a grid of comoving side ``box``.

    Returns (ψ1, ψ2) in internal length, ψ2 None for ``order`` 1: whole fields (3, n, n, n),
    or, with ``take`` (ascending linear grid indices), only those points (3, len(take)).
    ψ1_k = i k δ_k / k² (∇·ψ1 = -δ); ψ2_k = -i k μ2_k / k², μ2 = Σ_{a<b} (ψ1_{a,a} ψ1_{b,b}
    - ψ1_{a,b}²), its mean and Nyquist planes dropped.  Positions are q + D ψ1 + D2 ψ2.
    The bits of ``irfftn`` of each spectrum (:mod:`hybridtree.ics.lpt_fields`, which a run
    uses without the copy of ``delta_k`` made here)."""
    n = delta_k.shape[0]
    if delta_k.shape != (n, n, n // 2 + 1):
        raise ValueError(f"delta_k must have the rfftn shape (n, n, n//2 + 1), got {delta_k.shape}")
    if order not in (1, 2):
        raise ValueError(f"order must be 1 or 2, got {order!r}")
    box = _check_positive("box", box)
    fields = fields_of(np.array(delta_k, np.complex128), box, order, workers)
    if take is None:
        take = np.arange(n ** 3, dtype=np.int64)
    psi1, psi2 = fields.take(np.asarray(take, np.int64))
    if take.size == n ** 3:
        psi1 = psi1.reshape(3, n, n, n)
        psi2 = None if psi2 is None else psi2.reshape(3, n, n, n)
    return psi1, psi2


# --- the sphere of particles ------------------------------------------------------------

@accepts_quantities(box="length", radius="length")
def cosmo_sphere(n_grid: int, box: float, radius: float, a_start: float, cosmo: Cosmology,
                 seed: int, order: int = 1, workers: int = -1) -> Particles:
    """The particles of a sphere cut from a cold-dark-matter realization, at ``a_start``.

    ``n_grid``³ grid points on a comoving cube of side ``box``; the linear field is drawn
    from ``cosmo.power`` (P(k) at a = 1, times D(a_start)²) with the seed ``seed``;
    Zel'dovich (``order`` 1) or 2LPT (``order`` 2) displacements.  The particles kept are
    the grid points whose Lagrangian position q has |q| < ``radius`` (the cut is on q, not
    on the displaced x, so the sphere's mass is exactly its grid points' and does not
    depend on the realization); ``radius`` <= box/2.  Lengths comoving, internal units
    (``box``, ``radius`` may be quantities with units: converted in ``cosmo.units``).

    Returns (pos (m, 3), vel (m, 3), mass (m,), ids (m,) uint64): PHYSICAL positions
    r = a x and velocities v = H r + a ẋ (Hubble flow plus peculiar), internal units,
    centred on the cube's centre; equal masses Ω_m ρ_crit,0 (box/n)³; IDs 1 + linear grid
    index, ascending.  See the module docstring for conventions, memory and time.
    """
    count = sphere_count(n_grid, box, radius)
    return cosmo_sphere_share(n_grid, box, radius, a_start, cosmo, seed, 0, count,
                              order=order, workers=workers)


@accepts_quantities(box="length", radius="length")
def cosmo_sphere_share(n_grid: int, box: float, radius: float, a_start: float,
                       cosmo: Cosmology, seed: int, lo: int, hi: int, order: int = 1,
                       workers: int = -1, fields: str = "float64") -> Particles:
    """The particles with sphere ordinals lo .. hi - 1 of :func:`cosmo_sphere` (the same
    arguments), the same bits as its rows lo .. hi - 1, for 0 <= lo <= hi <=
    :func:`sphere_count`.  Every call computes the whole field (see the module docstring
    for the memory) and keeps its share.  ``fields``: the fields' precision, "float64" or
    "float32" (memory.ics_fields: half the memory, other bits)."""
    n, box, radius = _check_grid(n_grid, box, radius)
    a_start = _check_positive("a_start", a_start)
    if order not in (1, 2):
        raise ValueError(f"order must be 1 or 2, got {order!r}")
    if not isinstance(cosmo, Cosmology):
        raise TypeError(f"cosmo must be a hybridtree.cosmo.Cosmology, got {type(cosmo).__name__}")
    lo, hi = _check_range(lo, hi)
    if fields not in FIELDS:
        raise ValueError(f"fields must be one of {', '.join(FIELDS)}, got {fields!r}")
    idx = _sphere_indices(n, box, radius, lo, hi)
    if len(idx) != hi - lo:
        raise ValueError(f"hi = {hi} is beyond the sphere's {lo + len(idx)} particles")
    f = lpt_fields(n, box, cosmo.power, _check_seed(seed), order, workers, fields)
    psi1, psi2 = f.take(idx)
    f.release()
    return _particles(idx, psi1, psi2, n, box, a_start, cosmo)


def displaced_grid(idx: np.ndarray, psi1: np.ndarray, psi2: np.ndarray | None, n: int,
                   box: float, a: float, cosmo: Cosmology) -> tuple[np.ndarray, np.ndarray]:
    """Comoving positions x = q + D ψ1 + D2 ψ2 of the grid points ``idx`` (q about the
    cube's centre, :func:`_grid_coord`) and a dx/dt, both (m, 3) internal units, from
    their displacements (3, m) at scale factor ``a``; element by element, one axis at a
    time: a particle's bits do not depend on which others are computed with it."""
    d, f, h = cosmo.growth(a), cosmo.growth_rate(a), cosmo.H(a)
    c1 = a * f * h * d                              # a ẋ = a (f H D ψ1 + f2 H D2 ψ2)
    if psi2 is not None:
        om = cosmo.omega_m_of_a(a)
        d2 = -3.0 / 7.0 * d * d * om ** (-1.0 / 143.0)
        c2 = a * 2.0 * om ** (6.0 / 11.0) * h * d2   # f2 = 2 Ω_m(a)^{6/11}
    ijk = (idx // (n * n), (idx // n) % n, idx % n)
    x, u = np.empty((len(idx), 3)), np.empty((len(idx), 3))
    for ax in range(3):
        x[:, ax] = _grid_coord(ijk[ax], n, box) + d * psi1[ax]
        u[:, ax] = c1 * psi1[ax]
        if psi2 is not None:
            x[:, ax] += d2 * psi2[ax]
            u[:, ax] += c2 * psi2[ax]
    return x, u


def _particles(idx: np.ndarray, psi1: np.ndarray, psi2: np.ndarray | None, n: int,
               box: float, a: float, cosmo: Cosmology) -> Particles:
    """Physical positions r = a x and velocities v = H r + a dx/dt of the grid points
    ``idx`` from their displacements (:func:`displaced_grid`)."""
    x, u = displaced_grid(idx, psi1, psi2, n, box, a, cosmo)
    pos = a * x
    vel = cosmo.H(a) * pos + u
    mass = np.full(len(idx), cosmo.particle_mass(box / n))
    return pos, vel, mass, (idx + 1).astype(np.uint64)


# --- the sphere's grid points ----------------------------------------------------------------

def _grid_coord(ijk: np.ndarray, n: int, box: float) -> np.ndarray:
    """q = (index + 1/2) d - box/2 (the one formula every q comes from)."""
    return (ijk + 0.5) * (box / n) - 0.5 * box


def _sphere_planes(n: int, box: float, radius: float):
    """(i, mask (n, n)) for each plane i: which (j, l) have |q|² < radius²."""
    q = _grid_coord(np.arange(n), n, box)
    q2 = q * q
    yz = q2[:, None] + q2[None, :]
    r2 = radius * radius
    for i in range(n):
        yield i, (q2[i] + yz) < r2


def _sphere_indices(n: int, box: float, radius: float, lo: int, hi: int) -> np.ndarray:
    """Linear grid indices of the sphere's points with ordinals lo .. hi - 1."""
    parts, seen = [], 0
    for i, mask in _sphere_planes(n, box, radius):
        if seen >= hi:
            break
        c = int(np.count_nonzero(mask))
        if seen + c > lo:
            flat = np.flatnonzero(mask) + i * n * n
            parts.append(flat[max(lo - seen, 0):hi - seen])
        seen += c
    return np.concatenate(parts).astype(np.int64) if parts else np.empty(0, np.int64)


# --- checks -------------------------------------------------------------------------------

def _check_n(n_grid) -> int:
    if isinstance(n_grid, bool) or not isinstance(n_grid, numbers.Integral) or n_grid < 2:
        raise ValueError(f"n_grid must be an integer >= 2, got {n_grid!r}")
    return int(n_grid)


def _check_positive(name: str, x) -> float:
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or not 0.0 < float(x) < np.inf:
        raise ValueError(f"{name} must be a finite number > 0, got {x!r}")
    return float(x)


def _check_grid(n_grid, box, radius) -> tuple[int, float, float]:
    n, box, radius = _check_n(n_grid), _check_positive("box", box), _check_positive("radius", radius)
    if radius > 0.5 * box:
        raise ValueError(f"radius {radius} must be <= box/2 = {0.5 * box} (the sphere must fit in the cube)")
    return n, box, radius


def _check_range(lo, hi) -> tuple[int, int]:
    for name, v in (("lo", lo), ("hi", hi)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise ValueError(f"{name} must be an integer, got {v!r}")
    if not 0 <= lo <= hi:
        raise ValueError(f"need 0 <= lo <= hi, got lo = {lo}, hi = {hi}")
    return int(lo), int(hi)
