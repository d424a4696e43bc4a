"""Cosmological initial conditions: a sphere cut from a cold-dark-matter realization.

* :mod:`hybridtree.cosmo.background`: :class:`Cosmology` (expansion, age, linear growth,
  power spectrum; colossus underneath) in hybridtree's internal units (G = 1).
* :mod:`hybridtree.cosmo.ics`: :func:`cosmo_sphere` and :func:`cosmo_sphere_share`, a
  Gaussian random field on a grid, Zel'dovich or 2LPT displacements, the particles whose
  Lagrangian position lies in a sphere, in physical coordinates r = a x.

colossus and scipy are imported when this package is, not by ``import hybridtree``.
"""

from .background import Cosmology
from .ics import (cosmo_sphere, cosmo_sphere_share, lagrangian_positions, linear_density_k,
                  lpt_displacements, sphere_count, white_noise)

__all__ = ["Cosmology", "cosmo_sphere", "cosmo_sphere_share", "lagrangian_positions",
           "linear_density_k", "lpt_displacements", "sphere_count", "white_noise"]
