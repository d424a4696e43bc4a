"""Comoving integration of a periodic cosmological box, as GADGET-2/4 do it (Springel
2005, section 3): comoving positions x and canonical momenta p = a² dx/dt per unit mass,
with the Hamiltonian H = Σ p²/(2 m a²) + Σ m φ(x)/(2a):

    dx/dt = p / a²,        dp/dt = g(x) / a,

g the peculiar comoving acceleration of the periodic forces (TreePM, the mean density
subtracted: :mod:`hybridtree.gravity.periodic`) with the comoving softening.  A step
from a0 to a1 is the KDK leapfrog with the time factors as integrals over a:

    kick  K(a, b) = ∫ dt / a  = ∫_a^b da' / (a'² H(a')),
    drift D(a, b) = ∫ dt / a² = ∫_a^b da' / (a'³ H(a')),

    p += K(a0, am) g;  x += D(a0, a1) p, wrapped into [0, L);  g = g(x);  p += K(am, a1) g

with am the step's middle (the geometric mean of a0 and a1: the middle in ln a, as
GADGET's integer time line is).  Every particle takes every step and both force parts
(the mesh and the tree) are computed at each (GADGET's TREEPM_NOTIMESPLIT).  The
factors come from the schedule's a of each step, so a restart takes the same steps.
Units: internal (G = 1); H(a) in 1/internal time.
"""

from __future__ import annotations

import math

from scipy.integrate import quad

from .schemes import first_forces

__all__ = ["ComovingLeapfrog", "drift_factor", "kick_factor"]


def _integral(cosmo, a0: float, a1: float, power: int) -> float:
    """∫_a0^a1 da / (a^power H(a)) in ln a (a smooth integrand over many decades)."""
    if a1 == a0:
        return 0.0
    val, _ = quad(lambda s: 1.0 / (math.exp((power - 1) * s) * float(cosmo.H(math.exp(s)))),
                  math.log(a0), math.log(a1), epsabs=0.0, epsrel=1e-12, limit=200)
    return val


def kick_factor(cosmo, a0: float, a1: float) -> float:
    """∫ dt / a from a0 to a1 (internal time)."""
    return _integral(cosmo, a0, a1, 2)


def drift_factor(cosmo, a0: float, a1: float) -> float:
    """∫ dt / a² from a0 to a1 (internal time)."""
    return _integral(cosmo, a0, a1, 3)


class ComovingLeapfrog:
    """The KDK leapfrog in comoving coordinates (module docstring).  ``sched``: the run's
    :class:`hybridtree.integrate.schedule.Cosmic` (its ``a(step)``), ``step``: the
    schedule's step the state is at, ``box``: the comoving side L (internal length)."""

    parts = ("full",)

    def __init__(self, engine, cosmo, sched, step: int, box: float):
        self.engine, self.cosmo, self.sched = engine, cosmo, sched
        self.k, self.box = int(step), float(box)

    def start(self, state, reuse: bool = False) -> None:
        """Forces at the starting positions (``reuse``: the state holds them)."""
        if reuse:
            self.engine.forces_known()
        else:
            first_forces(self.engine, state, self.parts)

    def factors(self, k: int) -> tuple[float, float, float]:
        """(first half kick, drift, second half kick) of step k -> k + 1."""
        a0, a1 = float(self.sched.a(k)), float(self.sched.a(k + 1))
        am = math.sqrt(a0 * a1)
        c = self.cosmo
        return kick_factor(c, a0, am), drift_factor(c, a0, a1), kick_factor(c, am, a1)

    def step(self, state, dt: float) -> None:
        """The schedule's next step (``dt``, its length in time, is implied by it)."""
        k1, d, k2 = self.factors(self.k)
        state.kick("full", k1)
        state.drift(d)
        state.wrap(self.box)
        self.engine.compute(state, self.parts)
        state.kick("full", k2)
        self.k += 1
