"""Periodic gravity by TreePM (Springel 2005, as GADGET-2 and GADGET-4 do it): the
geometry of the split and the short-range kernel.

In a cube of side L with copies of itself on every side (and a uniform background of
the mean density subtracted, so that the potential of an infinite box is finite), a
source of mass m at separation r (nearest image) is split with a Gaussian of scale
r_s = a_s L / N_mesh (``asmth`` = GADGET's ASMTH, 1.25 by default):

- short range, by the tree walk on the nearest image, cut at r_cut = ``rcut`` r_s
  (GADGET's RCUT; cells wholly beyond r_cut are skipped):
  a = m r_vec / r^3 [erfc(u) + (2 u / sqrt(pi)) exp(-u^2)], phi = -m erfc(u) / r,
  u = r / (2 r_s), times the Plummer-softened 1 / r^3 and 1 / r where eps > 0;
- long range, on a mesh of N_mesh^3 points (:mod:`hybridtree.gravity.pm`): the
  Fourier transform of the density times -4 pi exp(-k^2 r_s^2) / k^2.

The potential follows Ewald's convention: every source's potential has zero mean over
the box, and a particle feels its own periodic images (phi_self = +2.837297 m / L for a
lone particle at eps = 0: the background outweighs the images).  Units: G = 1, the caller's lengths and masses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..particles import wrap

__all__ = ["ASMTH", "RCUT", "Periodic", "default_mesh", "wrap"]

#: GADGET's defaults: the split scale in mesh cells (ASMTH) and the short-range cut in
#: units of r_s (RCUT: GADGET-4's 7.0; GADGET-2 took 4.5).  Against Ewald on 4096 random
#: particles (32^3 mesh, the walk exact) the median force error is 1.6e-4 with 7.0 and
#: 1.3e-3 with 4.5: the pair force jumps by 1.8 % of m / r^2 at 4.5 r_s (0.01 % at 7).
ASMTH = 1.25
RCUT = 7.0

def default_mesh(n: int) -> int:
    """GADGET's usual choice, one mesh point per particle or more: the smallest power of
    two at least N^(1/3), and at least 32 (so that r_cut = 7 r_s stays below L / 2)."""
    side = max(int(round(n ** (1.0 / 3.0))), 1)
    while side ** 3 < n:
        side += 1
    return max(32, 1 << (side - 1).bit_length())


@dataclass(frozen=True)
class Periodic:
    """A periodic cube of side ``box`` with a mesh of ``n_mesh``^3 points for the long
    range, split scale ``asmth`` mesh cells and short-range cut ``rcut`` r_s."""

    box: float
    n_mesh: int
    asmth: float = ASMTH
    rcut: float = RCUT
    order: int = 3                  # mass assignment: 2 CIC, 3 TSC (:mod:`.pm`)
    interlace: bool = True          # average a second mesh offset by half a cell
    #: the mesh in float32 (:mod:`.pm_compact`: two float32 meshes, nothing per particle;
    #: memory.mesh = "float32"), else float64 (:mod:`.pm_device`)
    single: bool = False

    def __post_init__(self):
        if not (np.isfinite(self.box) and self.box > 0):
            raise ValueError(f"box must be a finite length > 0, got {self.box!r}")
        if not (isinstance(self.n_mesh, (int, np.integer)) and 8 <= self.n_mesh <= 4096):
            raise ValueError(f"pm_grid must be an integer in [8, 4096], got {self.n_mesh!r}")
        if not (0.5 <= self.asmth <= 8.0):
            raise ValueError(f"asmth must be in [0.5, 8] mesh cells, got {self.asmth!r}")
        if not (2.0 <= self.rcut <= 10.0):
            raise ValueError(f"rcut must be in [2, 10] r_s, got {self.rcut!r}")
        if self.single and self.n_mesh & (self.n_mesh - 1):
            raise ValueError(f"memory.mesh = 'float32' needs a power-of-two pm_grid, got "
                             f"{self.n_mesh}: take pm_grid = {1 << (self.n_mesh.bit_length() - 1)} "
                             f"or {1 << self.n_mesh.bit_length()}, or memory.mesh = 'float64'")
        if self.order not in (2, 3):
            raise ValueError(f"order must be 2 (CIC) or 3 (TSC), got {self.order!r}")
        if self.r_cut >= 0.5 * self.box:
            raise ValueError(f"the short-range cut rcut * asmth * L / pm_grid = "
                             f"{self.r_cut:.4g} reaches half the box ({0.5 * self.box:.4g}): "
                             f"take a finer mesh (pm_grid > "
                             f"{int(2 * self.rcut * self.asmth)}) or a smaller asmth or rcut")

    @property
    def rs(self) -> float:
        """The split scale r_s = asmth L / n_mesh (length)."""
        return self.asmth * self.box / self.n_mesh

    @property
    def r_cut(self) -> float:
        """The short-range cut r_cut = rcut r_s (length)."""
        return self.rcut * self.rs

    def defines(self) -> dict[str, str]:
        """The short-range walk's kernel defines (cl/walkcommon.cl, PERIODIC): L as a float
        pair (so that a wrap keeps the hi/lo precision of close pairs), 1 / L, 1 / (2 r_s)
        and r_cut (float32 literals)."""
        hi = np.float32(self.box)
        lo = np.float32(self.box - float(hi))

        def lit(v) -> str:
            return f"{float(np.float32(v))!r}f"

        return {"PERIODIC": 1, "BOX_HI": lit(hi), "BOX_LO": lit(lo),
                "INV_BOX": lit(1.0 / self.box), "INV_2RS": lit(0.5 / self.rs),
                "RCUT": lit(self.r_cut)}

    def potential_offset(self, mass_total: float) -> float:
        """What the split's potential lacks of Ewald's zero-mean convention at every point:
        the volume integral of the short-range kernel as the walk applies it (cut at
        r_cut), times the mean density: 4 pi M / L^3 int_0^r_cut r erfc(r / 2 r_s) dr."""
        from scipy.special import erfc
        x = self.r_cut / (2.0 * self.rs)
        # int_0^x t erfc(t) dt = 1/4 + (x^2/2 - 1/4) erfc(x) - x exp(-x^2) / (2 sqrt(pi))
        inner = 0.25 + (0.5 * x * x - 0.25) * erfc(x) - x * math.exp(-x * x) / (2 * math.sqrt(math.pi))
        return 4.0 * math.pi * (2.0 * self.rs) ** 2 * inner * mass_total / self.box ** 3

    def self_potential(self, mass: np.ndarray) -> np.ndarray:
        """The part of a particle's potential from its own images that neither the walk
        (which skips the particle itself) nor the mesh (whose own long-range term at r = 0
        is -m / (sqrt(pi) r_s) short of Ewald's) gives: + m / (sqrt(pi) r_s)."""
        return np.asarray(mass, np.float64) * self.self_potential_per_mass

    @property
    def self_potential_per_mass(self) -> float:
        """1 / (sqrt(pi) r_s): :meth:`self_potential` per unit mass (1 / length)."""
        return 1.0 / (math.sqrt(math.pi) * self.rs)
