"""Sums over a state's particles that a run measures as it goes: energies and the
Lagrangian radii (this process's particles, or all processes' without gathering them),
and the Λ term's share of a cosmological sphere's potential energy.

They sit with the integrator so that the states and steppers can measure themselves;
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


def lagrangian_radii(pos: np.ndarray, mass: np.ndarray, fractions=(0.1, 0.5, 0.9),
                     centre: np.ndarray | None = None) -> list[float]:
    """Radii around ``centre`` (default: the centre of mass) that enclose the given mass
    fractions: the radius of the particle at which the cumulative mass, in order of
    radius, first reaches the fraction."""
    m_tot = mass.sum()
    if len(mass) == 0 or m_tot <= 0:
        return [float("nan")] * len(fractions)
    com = mass @ pos / m_tot if centre is None else np.asarray(centre)
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


def type_sums(comm, types: np.ndarray, pos: np.ndarray, vel: np.ndarray, mass: np.ndarray,
              pot: np.ndarray, wanted: list[int]) -> list[dict]:
    """Collective: per GADGET type in ``wanted`` (every process passes the same list), over
    all processes' particles: ``particles``, ``mass``, ``kinetic`` ½ Σ m v², ``potential``
    ½ Σ m φ (φ: the whole system's potential at the particle, so the types' potentials add
    up to the system's), angular momentum ``lx``, ``ly``, ``lz`` Σ m r × v about the origin,
    and the 10/50/90 % Lagrangian radii ``r10``, ``r50``, ``r90`` about the type's own
    centre of mass.  Internal units."""
    out = []
    for t in wanted:
        rows = types == t
        m, x, v = mass[rows], pos[rows], vel[rows]
        local = np.concatenate([[rows.sum(), m.sum(), 0.5 * m @ (v * v).sum(axis=1),
                                 0.5 * m @ pot[rows]], m @ np.cross(x, v) if len(m) else np.zeros(3)])
        tot = comm.allreduce(local)
        radii = lagrangian_radii_across(comm, x, m)
        out.append({"type": t, "particles": int(round(tot[0])), "mass": tot[1],
                    "kinetic": tot[2], "potential": tot[3], "lx": tot[4], "ly": tot[5],
                    "lz": tot[6], "r10": radii[0], "r50": radii[1], "r90": radii[2]})
    return out


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
