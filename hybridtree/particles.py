"""Particles: the arrays a run or a force call is made of, and their validation.

:class:`Particles` holds one process's particles in internal units (float64: positions,
velocities, masses, IDs; forces where known).  :func:`validate_particles` is the one check
of user-given arrays (shapes, finiteness, non-negative masses) that the public call and a
run's set-up share.  Units: G = 1, the caller's length, mass and time units.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["DM_TYPE", "N_TYPES", "Particles", "all_finite", "bounds", "shaped_particles",
           "validate_particles", "wrap"]

#: GADGET's particle types: PartType0 .. PartType5 (0 gas, 1 halo / dark matter, 2 disk,
#: 3 bulge, 4 stars, 5 black holes by convention; hybridtree treats all as collisionless)
N_TYPES = 6
#: the type of particles nobody gave one (generated models, the public call)
DM_TYPE = 1


@dataclass
class Particles:
    """Particle state in internal units (float64): positions, velocities, masses, IDs,
    and each particle's GADGET type (``types``, uint8 0..5; all :data:`DM_TYPE` when not
    given)."""

    pos: np.ndarray
    vel: np.ndarray
    mass: np.ndarray
    ids: np.ndarray
    acc: np.ndarray | None = None
    pot: np.ndarray | None = None
    types: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.types is None:
            self.types = np.full(len(self.mass), DM_TYPE, np.uint8)
        else:
            self.types = np.asarray(self.types)
            assert self.types.shape == (len(self.mass),), (self.types.shape, len(self.mass))
            if len(self.types) and (self.types.min() < 0 or self.types.max() >= N_TYPES):
                raise ValueError(f"particle types must be 0 .. {N_TYPES - 1} (GADGET's "
                                 f"PartType0 .. PartType5), got {int(self.types.min())} .. "
                                 f"{int(self.types.max())}")
            self.types = self.types.astype(np.uint8, copy=False)

    def __len__(self) -> int:
        return len(self.mass)



def bounds(pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) corners (3,) of the (N, 3) positions (N >= 1): each column's min and
    max, the same values as ``pos.min(axis=0)`` and ``pos.max(axis=0)`` (NaN where a
    column holds one).  A column at a time: numpy's axis-0 reduction of an (N, 3) array
    runs an inner loop of 3 per row, 5-7 times slower (0.58 against 0.08 s at 2^22 on a
    2-core machine; a set-up's check of a 2^22 run spent 0.2-0.28 s in it on the H200's
    host, issue 57's short runs)."""
    cols = [pos[:, k] for k in range(pos.shape[1])]
    return np.array([c.min() for c in cols]), np.array([c.max() for c in cols])


def all_finite(a: np.ndarray) -> bool:
    """Whether every value of the float array ``a`` is finite: its sum first (one pass,
    no temporary; a NaN or an infinity makes it non-finite, so a finite sum answers),
    the element-wise test only where the sum is not finite (a sum of finite values may
    overflow)."""
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(a.sum()):
            return True
    return bool(np.isfinite(a).all())


def shaped_particles(pos, mass, name: str = "positions") -> tuple[np.ndarray, np.ndarray]:
    """float64 positions (N, 3) and masses (N,) (no copy where they are already), or
    ValueError for wrong shapes or complex values; the values are checked elsewhere."""
    for what, value in ((name, pos), ("masses", mass)):
        if np.iscomplexobj(value):      # float64 would silently drop the imaginary part
            raise ValueError(f"{what} must be real numbers, got complex values")
    pos = np.asarray(pos, dtype=np.float64)
    mass = np.asarray(mass, dtype=np.float64)
    if pos.ndim != 2 or pos.shape[1] != 3:
        raise ValueError(f"{name} must have shape (N, 3), got {pos.shape}")
    if mass.ndim == 0:
        mass = np.full(len(pos), float(mass))
    if mass.shape != (len(pos),):
        raise ValueError(f"masses have shape {mass.shape} but there are {len(pos)} {name} "
                         f"(rows): give one mass per particle, shape ({len(pos)},), or one "
                         f"number")
    return pos, mass


def validate_particles(pos, mass, name: str = "positions") -> tuple[np.ndarray, np.ndarray]:
    """Return float64 copies of positions (N, 3) and masses (N,), or raise ValueError.

    Rejected: wrong shapes, complex values, NaN/inf positions or masses, negative
    masses.  The message names the first offending index.
    """
    pos, mass = shaped_particles(pos, mass, name)
    # the fast whole-array tests first (10x faster than the per-particle ones at N = 1e6);
    # the index of the culprit is only looked for when there is one
    if not all_finite(pos):
        bad = np.flatnonzero(~np.isfinite(pos).all(axis=1))
        raise ValueError(f"{name}[{bad[0]}] is not finite: {pos[bad[0]].tolist()} "
                         f"({len(bad)} bad particle(s))")
    if not (all_finite(mass) and (mass >= 0).all()):
        bad = np.flatnonzero(~np.isfinite(mass) | (mass < 0))
        raise ValueError(f"mass[{bad[0]}] = {float(mass[bad[0]])!r} is negative or not finite "
                         f"({len(bad)} bad particle(s))")
    return pos, mass


def wrap(pos: np.ndarray, box: float) -> np.ndarray:
    """Positions (float64) moved into [0, L) by whole box lengths."""
    out = np.mod(np.asarray(pos, np.float64), box)
    out[out >= box] -= box          # np.mod(-1e-20, L) rounds to L itself
    return out
