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
GADGET's integer time line is).  Every particle takes every step.  With one short step
per step both force parts (the mesh and the tree) are computed at each (GADGET's
TREEPM_NOTIMESPLIT); with ``n_short`` > 1, GADGET's long/short time split: the mesh's
part kicks over the whole step around ``n_short`` nested KDK steps of the tree's part,
uniform in ln a,

    p += K(a0, am) g_long;  n_short × [short KDK over its part of [a0, a1]];
    g_long = g_long(x);  p += K(am, a1) g_long,

the last short step computing both parts.  The factors come from the schedule's a of
each step, so a restart takes the same steps.  ``wrap`` false: positions are left where
the drift takes them (by a step's motion outside [0, L) at most) and wrapped by the
caller between steps: on many processes, where a particle wrapped across a face before
it changes domain would stretch its process's bounding box over the whole box (and the
LET with it).
Units: internal (G = 1); H(a) in 1/internal time.
"""

from __future__ import annotations

import math


from .schemes import first_forces

__all__ = ["ComovingLeapfrog", "box_side", "drift_factor", "kick_factor"]


def _integral(cosmo, a0: float, a1: float, power: int) -> float:
    """∫_a0^a1 da / (a^power H(a)) in ln a (a smooth integrand over many decades)."""
    if a1 == a0:
        return 0.0
    # here, not at the top: scipy.integrate's import (0.4-0.65 s) would be paid by every
    # run and MPI rank that imports the scheme chooser, cosmological or not
    from scipy.integrate import quad
    val, _ = quad(lambda s: 1.0 / (math.exp((power - 1) * s) * float(cosmo.H(math.exp(s)))),
                  math.log(a0), math.log(a1), epsabs=0.0, epsrel=1e-12, limit=200)
    return val


def box_side(engine) -> float:
    """The comoving side L of ``engine``'s periodic box (internal length): the comoving
    schemes wrap into the box the forces are periodic in."""
    if engine.g.periodic is None:
        raise ValueError("comoving steps need a periodic box (the engine's g.periodic)")
    return float(engine.g.periodic.box)


def kick_factor(cosmo, a0: float, a1: float) -> float:
    """∫ dt / a from a0 to a1 (internal time)."""
    return _integral(cosmo, a0, a1, 2)


def drift_factor(cosmo, a0: float, a1: float) -> float:
    """∫ dt / a² from a0 to a1 (internal time)."""
    return _integral(cosmo, a0, a1, 3)


class ComovingLeapfrog:
    """The KDK leapfrog in comoving coordinates (module docstring).  ``sched``: the run's
    :class:`hybridtree.integrate.schedule.Cosmic` (its ``a(step)``), ``step``: the
    schedule's step the state is at.  The box is the engine's (``engine.g.periodic``:
    its comoving side L, internal length).  Chosen by
    :func:`hybridtree.integrate.choose.scheme_for`."""

    def __init__(self, engine, cosmo, sched, step: int, n_short: int = 1,
                 wrap: bool = True):
        if n_short < 1:
            raise ValueError(f"n_short must be >= 1, got {n_short}")
        self.engine, self.cosmo, self.sched = engine, cosmo, sched
        self.k, self.box, self.n_short = int(step), box_side(engine), int(n_short)
        self.wrap = wrap
        self.parts = engine.g.parts
        assert self.parts == (("short", "long") if n_short > 1 else ("full",)), self.parts

    def start(self, state, reuse: bool = False) -> None:
        """Forces at the starting positions (``reuse``: the state holds them, the whole
        force: a restart without the time split; with it, the parts are recomputed, the
        same bits as the last step computed)."""
        if reuse and self.n_short == 1:
            self.engine.forces_known()
        else:
            first_forces(self.engine, state, self.parts)

    def factors(self, a0: float, a1: float) -> tuple[float, float, float]:
        """(first half kick, drift, second half kick) of a KDK step from a0 to a1."""
        am = math.sqrt(a0 * a1)
        c = self.cosmo
        return kick_factor(c, a0, am), drift_factor(c, a0, a1), kick_factor(c, am, a1)

    def step(self, state, dt: float) -> None:
        """The schedule's next step (``dt``, its length in time, is implied by it)."""
        a0, a1 = float(self.sched.a(self.k)), float(self.sched.a(self.k + 1))
        n, inner = self.n_short, self.parts[0]
        if n > 1:
            long1, _, long2 = self.factors(a0, a1)
            state.kick("long", long1)
        for j in range(n):
            b0 = a0 if j == 0 else a0 * (a1 / a0) ** (j / n)
            b1 = a1 if j == n - 1 else a0 * (a1 / a0) ** ((j + 1) / n)
            k1, d, k2 = self.factors(b0, b1)
            state.kick(inner, k1)
            state.drift(d)
            if self.wrap:
                state.wrap(self.box)
            self.engine.compute(state, self.parts if j == n - 1 else (inner,))
            state.kick(inner, k2)
        if n > 1:
            state.kick("long", long2)
        self.k += 1
