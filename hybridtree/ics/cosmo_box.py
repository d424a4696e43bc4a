"""Cosmological initial conditions in a periodic box: every point of the n_grid³ grid of
:mod:`hybridtree.ics.cosmological` (the same Gaussian field, the same seeds, the same
Zel'dovich or 2LPT displacements), the cube itself being the box.

Conventions (internal units, G = 1): point (i, j, l) sits at the Lagrangian position
q = ((i, j, l) + 1/2) d, d = box / n, so the box is [0, box)³ (the sphere's grid is the
same one moved by box/2); its ID is 1 + (i n + j) n + l.  Positions are comoving,
x = q + D ψ1 + D2 ψ2 wrapped into [0, box); velocities are the canonical momentum per
unit mass of the comoving integration (:mod:`hybridtree.integrate.comoving`),
p = a² dx/dt = a² H (f D ψ1 + f2 D2 ψ2), which GADGET writes as p / a^(3/2).

Determinism: as the sphere's, any split [lo, hi) of [0, n³) gives the bits of the whole
(:func:`cosmo_box_share`): every process computes the field, keeps its rows.
"""

from __future__ import annotations

import numpy as np

from ..cosmo.background import Cosmology
from ..particles import wrap
from .cosmological import displaced_grid, linear_density_k, lpt_displacements

__all__ = ["cosmo_box_share"]


def cosmo_box_share(n_grid: int, box: float, a_start: float, cosmo: Cosmology, seed: int,
                    lo: int, hi: int, order: int = 1, workers: int = -1
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Grid points lo .. hi - 1 (linear index order) of a periodic box of side ``box``
    (comoving, internal length) at scale factor ``a_start``: (x (m, 3) comoving in
    [0, box), p (m, 3) canonical momentum a² dx/dt, mass (m,) = Ω_m ρ_crit,0 d³,
    ids (m,) uint64).  ``order``: 1 Zel'dovich, 2 2LPT."""
    n, box, a, lo, hi = int(n_grid), float(box), float(a_start), int(lo), int(hi)
    if not (n >= 2 and 0 < box < np.inf and 0 < a < np.inf):
        raise ValueError(f"need n_grid >= 2, box > 0 and a_start > 0, got {n_grid!r}, "
                         f"{box!r}, {a_start!r}")
    if order not in (1, 2):
        raise ValueError(f"order must be 1 or 2, got {order!r}")
    if not 0 <= lo <= hi <= n ** 3:
        raise ValueError(f"need 0 <= lo <= hi <= n_grid^3 = {n ** 3}, got {lo}, {hi}")
    idx = np.arange(lo, hi, dtype=np.int64)
    psi1, psi2 = lpt_displacements(linear_density_k(n, box, cosmo, seed, workers), box,
                                   order, take=idx, workers=workers)
    x, u = displaced_grid(idx, psi1, psi2, n, box, a, cosmo)    # q about the centre
    mass = np.full(len(idx), cosmo.particle_mass(box / n))
    return wrap(x + 0.5 * box, box), a * u, mass, (idx + 1).astype(np.uint64)
