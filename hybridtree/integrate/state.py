"""One run state: the particles of this process and the forces on them.

Fields, the same for both backends (internal units, G = 1, float64 unless stated):
positions ``pos`` (n, 3), velocities ``vel`` (n, 3), masses ``mass`` (n,), IDs ``ids``
(n,) uint64, GADGET types ``types`` (n,) (uint8 on the host, uint64 words on the device,
where they only travel), one acceleration (n, 3) per force part in ``acc`` (``"full"`` for the plain
leapfrog; ``"hard"`` and ``"soft"`` for the hybrid tree) and the potential ``pot`` (n,).

- :class:`DeviceState` keeps them in device buffers from the first force to the end of
  the run; the host sees them only when a snapshot is written (:meth:`download`).
  Needs double precision on the device (cl_khr_fp64).
- :class:`HostState` keeps numpy arrays (devices without double precision, the direct
  method, the numpy tree build).  Under MPI the device state grows and shrinks as
  particles change domain (:meth:`DeviceState.reserve`,
  :func:`hybridtree.parallel.migrate.migrate`).

Both do the same float64 operations in the same order (kicks and drifts: one rounded
multiply, one rounded add; sums in the fixed order of :mod:`hybridtree.device.reduce`), so
the same particles stepped with either backend give the same bits (block time steps
with more than one bin excepted: the walks of the active particles form their groups
differently on the two backends).
``HYBRIDTREE_STATE=host`` forces the host backend (tests run both).
"""

from __future__ import annotations

import os

import numpy as np
import pyopencl as cl

from ..errors import UserInputError
from ..device import reduce
from ..device.clock import Clock
from .quantities import lagrangian_radii
from ..particles import N_TYPES, Particles, wrap
from ..device.kernels import kernel, launch
from ..device.runtime import Runtime
from ..device.transfer import download, upload

__all__ = ["DeviceState", "HostState", "State", "make_state", "state_backend"]


def state_backend(rt: Runtime, method: str = "tree", build: str = "device") -> str:
    """"device" where the state can live on ``rt``'s device, else "host";
    the environment variable ``HYBRIDTREE_STATE`` (``host``/``device``) overrides it."""
    forced = os.environ.get("HYBRIDTREE_STATE", "")
    if forced not in ("", "host", "device"):
        raise UserInputError(f"HYBRIDTREE_STATE must be host or device, got {forced!r}")
    can = rt.has_fp64 and method == "tree" and build == "device"
    if forced == "device" and not can:
        raise UserInputError("HYBRIDTREE_STATE=device needs the tree method, the device build "
                         "and a device with double precision (cl_khr_fp64)")
    return forced or ("device" if can else "host")


class HostState:
    """The state in numpy arrays."""

    backend = "host"

    def __init__(self, p: Particles, parts: tuple[str, ...], clock: Clock | None = None):
        self.pos = np.array(p.pos, np.float64)
        self.vel = np.array(p.vel, np.float64)
        self.mass = np.array(p.mass, np.float64)
        self.ids = np.array(p.ids, np.uint64)
        self.types = np.array(p.types, np.uint8)
        self.parts = parts
        self.acc = {part: np.zeros((self.n, 3)) for part in parts}
        self.pot = np.zeros(self.n)
        self.clock = clock or Clock()
        if p.acc is not None and parts == ("full",):
            self.acc["full"][:] = p.acc
        if p.pot is not None:
            self.pot[:] = p.pot

    @property
    def n(self) -> int:
        return len(self.mass)

    def kick(self, part: str, dt: float) -> None:
        """vel += dt acc[part]"""
        with self.clock.host("integrate"):
            self.vel += dt * self.acc[part]

    def drift(self, dt: float) -> None:
        """pos += dt vel"""
        with self.clock.host("integrate"):
            self.pos += dt * self.vel

    def wrap(self, box: float) -> None:
        """Positions moved into [0, box) by whole box lengths (a periodic box)."""
        with self.clock.host("integrate"):
            self.pos[:] = wrap(self.pos, box)

    def kick_linear(self, coef: float, dt: float) -> None:
        """vel += (dt coef) pos: the kick of an acceleration coef · x (the Λ term of an
        expanding sphere in physical coordinates, coef = Ω_Λ H0²)."""
        with self.clock.host("integrate"):
            self.vel += (dt * coef) * self.pos

    def total_acc(self) -> np.ndarray:
        """The whole acceleration (the parts added)."""
        if len(self.parts) == 1:
            return self.acc[self.parts[0]]
        return self.acc[self.parts[0]] + self.acc[self.parts[1]]

    def download(self) -> Particles:
        """Copies of the particles (acc: the sum of the parts)."""
        return Particles(self.pos.copy(), self.vel.copy(), self.mass.copy(), self.ids.copy(),
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
            return reduce.host_moments(self.pos, self.vel, self.mass if mass is None else mass,
                                       self.pot)

    def lagrangian_radii(self, centre: np.ndarray, fractions=(0.1, 0.5, 0.9),
                         total_mass: float | None = None,
                         mass: np.ndarray | None = None) -> list[float]:
        with self.clock.host("reduce"):
            return lagrangian_radii(self.pos, self.mass if mass is None else mass, fractions,
                                    centre=centre)

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
        self.vel[0, 0] = np.nan


class DeviceState:
    """The state in device buffers (float64; IDs uint64), allocated once."""

    backend = "device"

    def __init__(self, rt: Runtime, p: Particles, parts: tuple[str, ...],
                 clock: Clock | None = None):
        if not rt.has_fp64:
            raise ValueError("a device state needs double precision (cl_khr_fp64)")
        self.rt = rt
        self.n = len(p.mass)
        self.parts = parts
        self.clock = clock or Clock(rt)
        n = self.n
        acc = p.acc if p.acc is not None and parts == ("full",) else np.zeros((n, 3))
        pot = p.pot if p.pot is not None else np.zeros(n)
        with self.clock.device("transfer"):
            arrays = [np.asarray(a, t) for a, t in ((p.pos, np.float64), (p.vel, np.float64),
                                                    (p.mass, np.float64), (p.ids, np.uint64),
                                                    (pot, np.float64), (p.types, np.uint64))]
            (self.pos, self.vel, self.mass, self.ids, self.pot,
             self.types) = upload(rt, arrays, [None] * 6)
            self.acc = {parts[0]: upload(rt, [np.asarray(acc, np.float64)], [None])[0]}
            for part in parts[1:]:
                self.acc[part] = rt.empty(24 * n)
                if n:
                    cl.enqueue_fill_buffer(rt.queue, self.acc[part], np.float64(0), 0, 24 * n)
        self.capacity = n
        kernel(rt, "state.cl", "axpy")          # built now: a failed build fails here
        self._total: cl.Buffer | None = None

    @property
    def nbytes(self) -> int:
        """Device memory of the state (bytes)."""
        return self.n * (24 * (2 + len(self.parts)) + 8 + 8 + 8 + 8)

    def _axpy(self, n: int, a: float, x: cl.Buffer, y: cl.Buffer) -> None:
        """y += a x over n float64 values (cl/state.cl)."""
        launch(self.rt, "state.cl", "axpy", n, np.int32(n), np.float64(a), x, y)

    def kick(self, part: str, dt: float) -> None:
        """vel += dt acc[part]"""
        if self.n == 0:
            return
        with self.clock.device("integrate"):
            self._axpy(3 * self.n, dt, self.acc[part], self.vel)

    def drift(self, dt: float) -> None:
        """pos += dt vel"""
        if self.n == 0:
            return
        with self.clock.device("integrate"):
            self._axpy(3 * self.n, dt, self.vel, self.pos)

    def wrap(self, box: float) -> None:
        """Positions moved into [0, box) (:meth:`HostState.wrap`; the same bits)."""
        if self.n == 0:
            return
        with self.clock.device("integrate"):
            launch(self.rt, "state.cl", "wrap", 3 * self.n, np.int32(3 * self.n),
                   np.float64(box), self.pos)

    def kick_linear(self, coef: float, dt: float) -> None:
        """vel += (dt coef) pos (see :meth:`HostState.kick_linear`; the same bits)."""
        if self.n == 0:
            return
        with self.clock.device("integrate"):
            self._axpy(3 * self.n, dt * coef, self.pos, self.vel)

    def total_acc(self) -> cl.Buffer:
        """The whole acceleration: the one part's buffer, or the parts added (a buffer of
        the state's, valid until the next call)."""
        if "full" in self.acc or self.n == 0:
            return self.acc[self.parts[0]]
        if self._total is None or self._total.size < 24 * self.n:
            self._total = self.rt.empty(24 * self.n)
        launch(self.rt, "state.cl", "add", 3 * self.n, np.int32(3 * self.n),
               self.acc[self.parts[0]], self.acc[self.parts[1]], self._total)
        return self._total

    def download(self, order: tuple[int, cl.Buffer | None] | None = None) -> Particles:
        """Host copies of the particles (through pinned memory on GPUs; acc: the sum of
        the parts, added on the device).  ``order = (lo, table)``: put them in the
        caller's order on the device first -- the IDs must be the range lo .. lo + n - 1;
        a particle goes to row ``table[id - lo]`` (int32 device buffer), or ``id - lo``
        without a table."""
        n = self.n
        p = Particles(np.empty((n, 3)), np.empty((n, 3)), np.empty(n), np.empty(n, np.uint64),
                      np.empty((n, 3)), np.empty(n))
        types = np.empty(n, np.uint64)
        columns = [(self.pos, p.pos), (self.vel, p.vel), (self.mass, p.mass),
                   (self.ids, p.ids), (self.total_acc(), p.acc), (self.pot, p.pot),
                   (self.types, types)]
        with self.clock.host("transfer", wait=True):
            if order is None or n == 0:
                download(self.rt, columns)
                p.types = types.astype(np.uint8)
                return p
            lo, table = order
            tmp = self.rt.empty(24 * n)       # one column at a time: 24 bytes per particle
            try:
                for buf, host in columns:
                    width = host.size // n
                    launch(self.rt, "state.cl", "to_caller", n, np.int32(n), np.int32(width),
                           np.uint64(lo), np.int32(table is not None), self.ids,
                           table if table is not None else self.ids, buf, tmp)
                    download(self.rt, [(tmp, host)])
            finally:
                tmp.release()
        p.types = types.astype(np.uint8)
        return p

    def type_counts(self) -> np.ndarray:
        """Particles of each GADGET type 0..5 (the types alone come to the host)."""
        types = np.empty(self.n, np.uint64)
        if self.n:
            with self.clock.host("transfer", wait=True):
                download(self.rt, [(self.types, types)])
        return np.bincount(types.astype(np.int64), minlength=N_TYPES)

    def type_mass(self, t: int) -> cl.Buffer:
        """The masses of the particles of GADGET type ``t``, 0 for the others (on the device:
        a scratch buffer, valid until the next call)."""
        with self.clock.device("reduce"):
            return reduce.reducer(self.rt).type_mass(self.n, self.types, t, self.mass)

    def moments(self, mass: cl.Buffer | None = None) -> dict:
        """:meth:`hybridtree.device.reduce.Reducer.moments`, weighted by ``mass`` (default
        the particles' own)."""
        with self.clock.device("reduce"):
            return reduce.reducer(self.rt).moments(self.n, self.pos, self.vel,
                                                   self.mass if mass is None else mass, self.pot)

    def lagrangian_radii(self, centre: np.ndarray, fractions=(0.1, 0.5, 0.9),
                         total_mass: float | None = None, combine=None,
                         mass: cl.Buffer | None = None) -> list[float]:
        """:meth:`hybridtree.device.reduce.Reducer.lagrangian_radii` (``combine``: over
        processes; ``mass``: as for :meth:`moments`)."""
        with self.clock.device("reduce"):
            return reduce.reducer(self.rt).lagrangian_radii(
                self.n, self.pos, self.mass if mass is None else mass, centre, fractions,
                total_mass, combine)

    def columns(self) -> list[tuple[str, int, cl.Buffer]]:
        """Every per-particle buffer as (name, 8-byte words per particle, buffer), in a
        fixed order: what a particle carries when it moves to another process."""
        return ([("pos", 3, self.pos), ("vel", 3, self.vel), ("mass", 1, self.mass),
                 ("ids", 1, self.ids)] + [(f"acc_{p}", 3, self.acc[p]) for p in self.parts]
                + [("pot", 1, self.pot), ("types", 1, self.types)])

    def reserve(self, n: int) -> None:
        """Room for ``n`` particles (the first ``self.n`` kept): buffers grow by a quarter
        more than asked, so that particles moving in and out of a domain rarely
        reallocate."""
        if n <= self.capacity:
            return
        cap = max(n, self.capacity + self.capacity // 4, 1)
        for name, width, buf in self.columns():
            new = self.rt.empty(8 * width * cap)
            if self.n:
                cl.enqueue_copy(self.rt.queue, new, buf, byte_count=8 * width * self.n)
            if name.startswith("acc_"):
                self.acc[name[4:]] = new
            else:
                setattr(self, name, new)
        self.capacity = cap
        self._total = None

    def finite(self) -> bool:
        n3 = 3 * self.n
        with self.clock.device("reduce"):
            return reduce.reducer(self.rt).all_finite(
                self.n, (self.pos, n3), (self.vel, n3), *((a, n3) for a in self.acc.values()))

    def bad_ids(self) -> np.ndarray:
        """IDs of the particles with a non-finite value (downloads the state: a run
        calls it only after :meth:`finite` said no)."""
        return HostState(self.download(), ("full",)).bad_ids()

    def poison(self) -> None:
        """NaN into the first velocity (fault injection for the tests)."""
        cl.enqueue_copy(self.rt.queue, self.vel, np.array([np.nan]))


State = HostState | DeviceState


def make_state(p: Particles, parts: tuple[str, ...], backend: str, rt: Runtime | None,
               clock: Clock | None = None) -> State:
    """A state of ``backend`` ("host" or "device") holding copies of ``p``."""
    if backend == "device":
        assert rt is not None
        return DeviceState(rt, p, parts, clock)
    return HostState(p, parts, clock)
