"""The AMUSE worker's side of hybridtree (:class:`HybridtreeImplementation`): the object
AMUSE's Python worker process calls, one method per call of the code's interface
(:mod:`hybridtree.amuse.interface`).  It keeps the particles on the host until
``commit_particles`` and then in one :class:`hybridtree.run.simulation.Simulation`, which
owns the OpenCL device; any change after that (a particle added, removed or set, a
parameter set) is taken in by ``recommit_*``, which makes the simulation again from the
current state and time.  The field calls go to :func:`hybridtree.gravity.accelerations`.

Nothing here imports AMUSE.  Units: N-body (G = 1) throughout, as AMUSE's
``nbody_system``.  Every method returns AMUSE's error code: 0 for success, -1 for an
unknown particle index.  A mistake (a parameter out of its range, a NaN position) raises
hybridtree's error, whose one line AMUSE's worker sends back: the script gets an AMUSE
``CodeException`` that says it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["HybridtreeImplementation"]

from ..config.settings import settings_from_flat
from ..errors import UserInputError

OK, NO_PARTICLE = 0, -1


def _numbers(values: Any) -> np.ndarray:
    """float64 values of a call's argument: numbers as AMUSE sends them, or an AMUSE
    quantity in N-body units (the field calls' specification carries units)."""
    if hasattr(values, "value_in"):
        values = values.value_in(values.unit)
    return np.atleast_1d(np.asarray(values, dtype=float))


def _checked(key: str, value: Any) -> Any:
    """``value`` if it is a valid ``key`` of a run's settings, else the ConfigError a
    config file would get (``gravity.theta must be 0 < theta <= 1.2, got 5.0``)."""
    settings_from_flat({key: value}, "Hybridtree parameters")
    return value


class HybridtreeImplementation:
    """The state behind one AMUSE ``Hybridtree`` code: particles by AMUSE index (1, 2,
    ...), the parameters, the time, and the simulation once the particles are committed."""

    def __init__(self) -> None:
        self.initialize_code()

    # -- code and parameters ---------------------------------------------------------------

    def initialize_code(self) -> int:
        self._index = np.zeros(0, dtype=np.int64)      # AMUSE indices, increasing
        self._mass = np.zeros(0)
        self._pos = np.zeros((0, 3))
        self._vel = np.zeros((0, 3))
        self._radius = np.zeros(0)
        self._next = 1
        self._eps2, self._theta, self._dt = 0.01 ** 2, 0.5, 1.0 / 128
        # geometric by default, unlike a run's "auto" (relative): opening_angle is then the
        # criterion, as AMUSE's tree codes mean it
        self._opening, self._alpha = "geometric", 0.003
        self._device = ""
        self._begin_time = self._time = 0.0
        self._sim: Any = None
        self._synced = True         # the host arrays hold the simulation's state
        return OK

    def cleanup_code(self) -> int:
        self._sim = None
        return OK

    def commit_parameters(self) -> int:
        self._time = self._begin_time
        return OK

    def recommit_parameters(self) -> int:
        return self.recommit_particles() if self._sim is not None else OK

    def get_eps2(self, epsilon_squared: Any) -> int:
        epsilon_squared.value = self._eps2
        return OK

    def set_eps2(self, epsilon_squared: float) -> int:
        eps2 = float(epsilon_squared)
        _checked("gravity.eps", math.sqrt(eps2) if eps2 >= 0 else eps2)
        self._eps2 = eps2
        return OK

    def get_theta(self, opening_angle: Any) -> int:
        opening_angle.value = self._theta
        return OK

    def set_theta(self, opening_angle: float) -> int:
        self._theta = _checked("gravity.theta", float(opening_angle))
        return OK

    def get_opening(self, opening: Any) -> int:
        opening.value = self._opening
        return OK

    def set_opening(self, opening: str) -> int:
        self._opening = _checked("gravity.opening", str(opening))
        return OK

    def get_alpha(self, alpha: Any) -> int:
        alpha.value = self._alpha
        return OK

    def set_alpha(self, alpha: float) -> int:
        self._alpha = _checked("gravity.alpha", float(alpha))
        return OK

    def get_time_step(self, time_step: Any) -> int:
        time_step.value = self._dt
        return OK

    def set_time_step(self, time_step: float) -> int:
        self._dt = _checked("time.dt", float(time_step))
        return OK

    def get_device(self, device: Any) -> int:
        device.value = self._device
        return OK

    def set_device(self, device: str) -> int:
        self._device = _checked("gravity.device", str(device))
        return OK

    def get_begin_time(self, time: Any) -> int:
        time.value = self._begin_time
        return OK

    def set_begin_time(self, time: float) -> int:
        self._begin_time = float(time)
        return OK

    def get_time(self, time: Any) -> int:
        time.value = self._time
        return OK

    # -- particles --------------------------------------------------------------------------

    def _rows(self, index: Any) -> np.ndarray | None:
        """Rows of the particles ``index`` (AMUSE indices); None if one is unknown."""
        index = np.atleast_1d(np.asarray(index, dtype=np.int64))
        rows = np.searchsorted(self._index, index)
        rows = np.minimum(rows, max(len(self._index) - 1, 0))
        if len(self._index) == 0 or np.any(self._index[rows] != index):
            return None
        return rows

    def _pull(self) -> None:
        """The simulation's positions and velocities into the host arrays (after a step)."""
        if self._sim is not None and not self._synced:
            self._pos = np.array(self._sim.pos, dtype=float)
            self._vel = np.array(self._sim.vel, dtype=float)
            self._synced = True

    def new_particle(self, index_of_the_particle: Any, mass: Any, x: Any, y: Any, z: Any,
                     vx: Any, vy: Any, vz: Any, radius: Any = 0.0) -> int:
        self._pull()
        mass = np.atleast_1d(np.asarray(mass, dtype=float))
        n = len(mass)
        new = np.arange(self._next, self._next + n, dtype=np.int64)
        self._next += n
        self._index = np.concatenate([self._index, new])
        self._mass = np.concatenate([self._mass, mass])
        self._pos = np.concatenate([self._pos, np.column_stack(
            [np.broadcast_to(np.asarray(c, dtype=float), (n,)) for c in (x, y, z)])])
        self._vel = np.concatenate([self._vel, np.column_stack(
            [np.broadcast_to(np.asarray(c, dtype=float), (n,)) for c in (vx, vy, vz)])])
        self._radius = np.concatenate(
            [self._radius, np.broadcast_to(np.asarray(radius, dtype=float), (n,))])
        index_of_the_particle.value = new
        return OK

    def delete_particle(self, index_of_the_particle: Any) -> int:
        self._pull()
        rows = self._rows(index_of_the_particle)
        if rows is None:
            return NO_PARTICLE
        keep = np.ones(len(self._index), dtype=bool)
        keep[rows] = False
        self._index, self._mass, self._radius = (self._index[keep], self._mass[keep],
                                                 self._radius[keep])
        self._pos, self._vel = self._pos[keep], self._vel[keep]
        return OK

    def _get(self, index: Any, **out: Any) -> int:
        self._pull()
        rows = self._rows(index)
        if rows is None:
            return NO_PARTICLE
        columns = {"mass": self._mass, "radius": self._radius,
                   "x": self._pos[:, 0], "y": self._pos[:, 1], "z": self._pos[:, 2],
                   "vx": self._vel[:, 0], "vy": self._vel[:, 1], "vz": self._vel[:, 2]}
        if "ax" in out or "phi" in out:
            if self._sim is None:
                raise UserInputError("accelerations and potentials: commit the particles first")
            acc, pot = self._sim.acc, self._sim.pot
            columns.update(ax=acc[:, 0], ay=acc[:, 1], az=acc[:, 2], phi=pot)
        for name, holder in out.items():
            holder.value = columns[name][rows].copy()
        return OK

    def _set(self, index: Any, **values: Any) -> int:
        self._pull()
        rows = self._rows(index)
        if rows is None:
            return NO_PARTICLE
        columns = {"mass": (self._mass, None), "radius": (self._radius, None),
                   "x": (self._pos, 0), "y": (self._pos, 1), "z": (self._pos, 2),
                   "vx": (self._vel, 0), "vy": (self._vel, 1), "vz": (self._vel, 2)}
        for name, value in values.items():
            array, col = columns[name]
            if col is None:
                array[rows] = value
            else:
                array[rows, col] = value
        return OK

    def get_state(self, index_of_the_particle, mass, x, y, z, vx, vy, vz, radius) -> int:
        return self._get(index_of_the_particle, mass=mass, x=x, y=y, z=z, vx=vx, vy=vy,
                         vz=vz, radius=radius)

    def set_state(self, index_of_the_particle, mass, x, y, z, vx, vy, vz, radius=0.0) -> int:
        return self._set(index_of_the_particle, mass=mass, x=x, y=y, z=z, vx=vx, vy=vy,
                         vz=vz, radius=radius)

    def get_mass(self, index_of_the_particle, mass) -> int:
        return self._get(index_of_the_particle, mass=mass)

    def set_mass(self, index_of_the_particle, mass) -> int:
        return self._set(index_of_the_particle, mass=mass)

    def get_radius(self, index_of_the_particle, radius) -> int:
        return self._get(index_of_the_particle, radius=radius)

    def set_radius(self, index_of_the_particle, radius) -> int:
        return self._set(index_of_the_particle, radius=radius)

    def get_position(self, index_of_the_particle, x, y, z) -> int:
        return self._get(index_of_the_particle, x=x, y=y, z=z)

    def set_position(self, index_of_the_particle, x, y, z) -> int:
        return self._set(index_of_the_particle, x=x, y=y, z=z)

    def get_velocity(self, index_of_the_particle, vx, vy, vz) -> int:
        return self._get(index_of_the_particle, vx=vx, vy=vy, vz=vz)

    def set_velocity(self, index_of_the_particle, vx, vy, vz) -> int:
        return self._set(index_of_the_particle, vx=vx, vy=vy, vz=vz)

    def get_acceleration(self, index_of_the_particle, ax, ay, az) -> int:
        return self._get(index_of_the_particle, ax=ax, ay=ay, az=az)

    def get_potential(self, index_of_the_particle, phi) -> int:
        return self._get(index_of_the_particle, phi=phi)

    def get_number_of_particles(self, number_of_particles: Any) -> int:
        number_of_particles.value = len(self._index)
        return OK

    def get_index_of_first_particle(self, index_of_the_particle: Any) -> int:
        if len(self._index) == 0:
            return 1
        index_of_the_particle.value = int(self._index[0])
        return OK

    def get_index_of_next_particle(self, index_of_the_particle: int,
                                   index_of_the_next_particle: Any) -> int:
        rows = self._rows(index_of_the_particle)
        if rows is None:
            return NO_PARTICLE
        if rows[0] + 1 >= len(self._index):
            return 1
        index_of_the_next_particle.value = int(self._index[rows[0] + 1])
        return OK

    # -- the run ------------------------------------------------------------------------------

    def commit_particles(self) -> int:
        return self.recommit_particles()

    def recommit_particles(self) -> int:
        """A new simulation of the particles as they are now, at the current time."""
        self._pull()
        self._sim = None
        if len(self._index) == 0:
            return OK
        from ..run.simulation import Simulation
        options = {"device": self._device} if self._device else {}
        self._sim = Simulation(self._pos, self._vel, self._mass, self._index.copy(),
                               time=self._time, dt=self._dt, eps=math.sqrt(self._eps2),
                               theta=self._theta, opening=self._opening, alpha=self._alpha,
                               quiet=True, **options)
        self._synced = True
        return OK

    def synchronize_model(self) -> int:
        return OK

    def evolve_model(self, time: float) -> int:
        """Whole steps of ``timestep`` up to the first step's end at or after ``time``
        (a leapfrog of fixed steps cannot stop between them): model_time says where."""
        if self._sim is None:
            self._no_simulation("evolve_model")
            self._time = max(self._time, float(time))       # no particles: time alone
            return OK
        n = math.ceil((float(time) - self._sim.t) / self._dt - 1e-9)
        if n > 0:
            self._sim.step(n)
        self._time = self._sim.t
        self._synced = False
        return OK

    def _no_simulation(self, what: str) -> None:
        """Particles but no simulation: the last commit failed (AMUSE said why)."""
        if len(self._index):
            raise UserInputError(f"{what}: the particles are not committed (the last "
                                 f"commit failed): correct them, then commit again")

    def _energy(self, kind: str, holder: Any) -> int:
        if self._sim is None:
            self._no_simulation(f"get_{kind}_energy")
            holder.value = 0.0
            return OK
        holder.value = self._sim.energy()[kind]
        return OK

    def get_kinetic_energy(self, kinetic_energy: Any) -> int:
        return self._energy("kinetic", kinetic_energy)

    def get_potential_energy(self, potential_energy: Any) -> int:
        return self._energy("potential", potential_energy)

    def get_total_mass(self, mass: Any) -> int:
        mass.value = float(self._mass.sum())
        return OK

    def _centre(self, of: str) -> np.ndarray:
        self._pull()
        m = self._mass.sum()
        if m <= 0:
            return np.zeros(3)
        return (self._mass[:, None] * (self._pos if of == "pos" else self._vel)).sum(0) / m

    def get_center_of_mass_position(self, x: Any, y: Any, z: Any) -> int:
        x.value, y.value, z.value = self._centre("pos")
        return OK

    def get_center_of_mass_velocity(self, vx: Any, vy: Any, vz: Any) -> int:
        vx.value, vy.value, vz.value = self._centre("vel")
        return OK

    def get_total_radius(self, radius: Any) -> int:
        self._pull()
        d = self._pos - self._centre("pos")
        radius.value = float(np.sqrt((d * d).sum(1)).max()) if len(d) else 0.0
        return OK

    # -- the gravity field ------------------------------------------------------------------

    def _field(self, eps: Any, x: Any, y: Any, z: Any) -> Any:
        """The particles' field at points (x, y, z) with the code's softening (the
        points' own ``eps`` is not used: hybridtree softens a pair by one length)."""
        self._pull()
        points = np.column_stack([_numbers(c) for c in (x, y, z)])
        if len(self._index) == 0:
            return None, len(points)
        from ..gravity.api import accelerations
        return accelerations(self._pos, self._mass, eps=math.sqrt(self._eps2),
                             method="tree", theta=self._theta, sinks=points,
                             opening="relative" if self._opening == "relative" else "geometric",
                             alpha=self._alpha,
                             device=self._device or None), len(points)

    def get_gravity_at_point(self, eps, x, y, z, ax, ay, az, npoints=None) -> int:
        f, n = self._field(eps, x, y, z)
        acc = np.zeros((n, 3)) if f is None else f.acc
        for holder, col in ((ax, 0), (ay, 1), (az, 2)):
            holder.value = acc[:, col].copy()
        return OK

    def get_potential_at_point(self, eps, x, y, z, phi, npoints=None) -> int:
        f, n = self._field(eps, x, y, z)
        phi.value = np.zeros(n) if f is None else f.pot.copy()
        return OK

