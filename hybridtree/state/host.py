"""The run state in numpy arrays (:mod:`hybridtree.state`): devices without double
precision, the direct method, the numpy tree build.  Internal units (G = 1), float64
(the velocities float32 where the run asks: ``vel32``)."""

from __future__ import annotations

import numpy as np

from ..device import reduce
from ..device.clock import Clock
from ..particles import N_TYPES, Particles, wrap
from .quantities import lagrangian_radii
from .sets import each_set_sums

__all__ = ["HostState"]


class HostState:
    """The state in numpy arrays.  ``vel32``: the velocities kept as float32
    (memory.velocities = "float32"); a kick computes in float64 and rounds once, a drift
    widens them, in cl/state.cl's order (:class:`.device.DeviceState`'s bits)."""

    backend = "host"
    #: float64 parts (:class:`hybridtree.state.DeviceState`'s ``pot_part`` None)
    float4 = False

    def __init__(self, p: Particles, parts: tuple[str, ...], clock: Clock | None = None,
                 vel32: bool = False):
        self.pos = np.array(p.pos, np.float64)
        self.vel = np.array(p.vel, np.float32 if vel32 else np.float64)
        self.vel32 = bool(vel32)
        self.mass = np.array(p.mass, np.float64)
        self.ids = np.array(p.ids, np.uint64)
        self.types = np.array(p.types, np.uint8)
        self.parts = parts
        self.acc = {part: np.zeros((self.n, 3)) for part in parts}
        self.pot = np.zeros(self.n)
        self.clock = clock or Clock()
        if p.acc is not None and len(parts) == 1:     # the whole force in one column
            self.acc[parts[0]][:] = p.acc
        if p.pot is not None:
            self.pot[:] = p.pot

    @property
    def n(self) -> int:
        return len(self.mass)

    def add_velocity(self, dv: np.ndarray, rows: np.ndarray | None = None) -> None:
        """vel[rows] += dv (float64; every row where ``rows`` is None): float32 velocities
        widened, added to, rounded once (cl/state.cl kick_vel, cl/blocks.cl's kicks)."""
        at = slice(None) if rows is None else rows
        if self.vel32:
            self.vel[at] = (self.vel[at].astype(np.float64) + dv).astype(np.float32)
        else:
            self.vel[at] += dv

    def kick(self, part: str, dt: float) -> None:
        """vel += dt acc[part]"""
        with self.clock.host("integrate"):
            self.add_velocity(dt * self.acc[part])

    def drift(self, dt: float) -> None:
        """pos += dt vel"""
        with self.clock.host("integrate"):
            self.pos += dt * self.vel64()

    def vel64(self) -> np.ndarray:
        """The velocities as float64 (float32 ones widened: a copy; else the array)."""
        return self.vel.astype(np.float64) if self.vel32 else self.vel

    def wrap(self, box: float) -> None:
        """Positions moved into [0, box) by whole box lengths (a periodic box)."""
        with self.clock.host("integrate"):
            self.pos[:] = wrap(self.pos, box)

    def kick_linear(self, coef: float, dt: float) -> None:
        """vel += (dt coef) pos: the kick of an acceleration coef · x (the Λ term of an
        expanding sphere in physical coordinates, coef = Ω_Λ H0²)."""
        with self.clock.host("integrate"):
            self.add_velocity((dt * coef) * self.pos)

    def total_acc(self) -> np.ndarray:
        """The whole acceleration (the parts added)."""
        if len(self.parts) == 1:
            return self.acc[self.parts[0]]
        return self.acc[self.parts[0]] + self.acc[self.parts[1]]

    def download(self) -> Particles:
        """Copies of the particles (acc: the sum of the parts)."""
        return Particles(self.pos.copy(), np.array(self.vel, np.float64), self.mass.copy(),
                         self.ids.copy(),
                         np.array(self.total_acc()), self.pot.copy(), self.types.copy())

    def type_counts(self) -> np.ndarray:
        """Particles of each GADGET type 0..5 (int64)."""
        return np.bincount(self.types, minlength=N_TYPES)

    def type_mass(self, t: int) -> np.ndarray:
        """The masses of the particles of GADGET type ``t``, 0 for the others."""
        return np.where(self.types == t, self.mass, 0.0)

    def moments(self, mass: np.ndarray | None = None) -> dict:
        """Sums over the particles (:func:`hybridtree.device.reduce.host_moments`), weighted
        by ``mass`` (default the particles' own)."""
        with self.clock.host("reduce"):
            return reduce.host_moments(self.pos, self.vel64(),
                                       self.mass if mass is None else mass, self.pot)

    def lagrangian_radii(self, centre: np.ndarray, fractions=(0.1, 0.5, 0.9),
                         total_mass: float | None = None,
                         mass: np.ndarray | None = None) -> list[float]:
        with self.clock.host("reduce"):
            return lagrangian_radii(self.pos, self.mass if mass is None else mass, fractions,
                                    centre=centre)

    def set_sums(self, wanted: list[int], whole: tuple[np.ndarray, float] | None
                 ) -> tuple[list[dict], list[list[float]]]:
        """:func:`.sets.set_sums`'s (moments, radii) of this state, one set at a time."""
        return each_set_sums(wanted, whole, self.type_mass, self.moments,
                             lambda c, m, w: self.lagrangian_radii(c, total_mass=m, mass=w))

    def finite(self) -> bool:
        with self.clock.host("reduce"):
            return bool(np.isfinite(self.pos).all() and np.isfinite(self.vel).all()
                        and all(np.isfinite(a).all() for a in self.acc.values()))

    def bad_ids(self) -> np.ndarray:
        """IDs of the particles with a non-finite position, velocity or acceleration."""
        rows = ~(np.isfinite(self.pos).all(axis=1) & np.isfinite(self.vel).all(axis=1))
        for a in self.acc.values():
            rows |= ~np.isfinite(a).all(axis=1)
        return self.ids[rows]

    def poison(self) -> None:
        """NaN into the first velocity (fault injection for the tests)."""
        self.vel[0, 0] = np.nan          # float32 too
