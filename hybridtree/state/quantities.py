"""Sums over a state's particles that a run measures as it goes: energies and the
Lagrangian radii (this process's particles, or all processes' without gathering them),
and the Λ term's share of a cosmological sphere's potential energy.

They sit with the run state so that the states and steppers can measure themselves;
:mod:`hybridtree.analysis.diagnostics` turns them into diagnostics rows.  All quantities
in internal units (G = 1); W = ½ Σ m φ with the potentials the gravity engine returns.
"""

from __future__ import annotations

import numpy as np

__all__ = ["energies", "lagrangian_radii", "lagrangian_radii_across", "with_lambda_potential"]


def energies(vel: np.ndarray, mass: np.ndarray, pot: np.ndarray | None = None
             ) -> tuple[float, float]:
    """(kinetic ½ Σ m v², potential ½ Σ m φ); the potential is 0.0 without ``pot``."""
    kin = 0.5 * float(mass @ np.einsum("ij,ij->i", vel, vel))
    return kin, (0.5 * float(mass @ pot) if pot is not None else 0.0)


def _massive(pos: np.ndarray, mass: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The particles of nonzero mass: a massless one never is where the enclosed mass
    first reaches a fraction (a type's sums weigh the other types with 0), so the radii
    sort only the rest."""
    if mass.all():
        return pos, mass
    keep = mass != 0
    return pos[keep], mass[keep]


def lagrangian_radii(pos: np.ndarray, mass: np.ndarray, fractions=(0.1, 0.5, 0.9),
                     centre: np.ndarray | None = None) -> list[float]:
    """Radii around ``centre`` (default: the centre of mass) that enclose the given mass
    fractions: the radius of the particle at which the cumulative mass, in order of
    radius, first reaches the fraction."""
    m_tot = mass.sum()
    if len(mass) == 0 or m_tot <= 0:
        return [float("nan")] * len(fractions)
    com = mass @ pos / m_tot if centre is None else np.asarray(centre)
    pos, mass = _massive(pos, mass)
    r = np.linalg.norm(pos - com, axis=1)
    order = np.argsort(r)
    cum = np.cumsum(mass[order]) / m_tot
    idx = np.minimum(np.searchsorted(cum, fractions), len(r) - 1)
    return [float(r[order][i]) for i in idx]


def lagrangian_radii_across(comm, pos: np.ndarray, mass: np.ndarray,
                            fractions=(0.1, 0.5, 0.9)) -> list[float]:
    """:func:`lagrangian_radii` of the particles of all processes (collective): the
    radius of each mass fraction by bisection on the enclosed mass (60 halvings, so to
    ~1e-18 of the largest radius), without gathering the particles."""
    tot = comm.allreduce(np.concatenate([[mass.sum()], mass @ pos if len(mass) else np.zeros(3)]))
    if tot[0] <= 0:
        return [float("nan")] * len(fractions)
    pos, mass = _massive(pos, mass)
    r = np.linalg.norm(pos - tot[1:] / tot[0], axis=1)
    order = np.argsort(r)
    r, below_r = r[order], np.concatenate([[0.0], np.cumsum(mass[order])])  # mass within r[:i]
    hi = np.full(len(fractions), comm.allreduce(r[-1] if len(r) else 0.0, "max")[0])
    lo = np.zeros(len(fractions))
    want = np.asarray(fractions) * tot[0]
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        inside = comm.allreduce(below_r[np.searchsorted(r, mid, side="right")])
        below = inside < want
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return [float(h) for h in hi]


def with_lambda_potential(mom: dict, lam: float) -> dict:
    """``mom`` (a stepper's sums, changed in place and returned) with the potential energy
    -½ λ Σ m r² of an external acceleration λ r (the Λ term of a cosmological sphere in
    physical coordinates, :attr:`hybridtree.cosmo.background.Cosmology.lambda_term`) added
    to the potential, so that a cosmological run's energy is conserved; ``lam`` = 0: none.
    ``gravity`` keeps the gravitational potential energy ½ Σ m φ alone (the norm of a
    cosmological run's energy error)."""
    mom["gravity"] = mom["potential"]
    if lam:
        mom["potential"] = mom["potential"] - 0.5 * lam * mom["inertia"]
    return mom
