"""The run state in device buffers (:mod:`hybridtree.state`), its kernels in
``cl/state.cl``: float64 (cl_khr_fp64), the IDs uint32 where every ID fits (uint64
otherwise), the types uint8, from the first force to the end of the run; where the
caller asks (``pot_part``), each force part as the walk computes it, float32 (ax, ay, az,
pot), with its net force apart in float64; where the caller allows it (``uniform``)
and every particle has the same mass, that mass once (:mod:`.mass`); where the run asks
(``vel32``), the velocities float32 (:mod:`.vel32`).  Internal units (G = 1)."""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from ..device import reduce
from ..device.clock import Clock
from ..device.kernels import kernel, launch
from ..device.runtime import Runtime
from ..device.transfer import download, upload
from ..particles import N_TYPES, Particles
from . import downloads, fill, parts4, sets
from . import vel32 as single
from .mass import one_mass
from .host import HostState

__all__ = ["DeviceState"]

#: types counted per download in :meth:`DeviceState.type_counts` (32 MB of host memory)
TYPE_ROWS = 4 << 20


class DeviceState:
    """The state in device buffers (float64; IDs uint32 or uint64, types uint8), allocated
    once.  ``narrow``: whether the IDs are kept as uint32 (default: where every one of
    ``p.ids`` fits; processes that exchange particles must agree, so a run of several
    decides over all of them).  Downloads give uint64 IDs either way.

    ``pot_part``: None keeps each part's acceleration as float64 (n x 3) and one float64
    potential ``pot``; a part's name keeps each part as the walk wrote it, a float4 per
    particle (ax, ay, az, pot; 16 bytes instead of 32), and the part's net force as the
    sums (Σ m a, Σ m) in ``net[part]`` (4 float64), subtracted wherever the acceleration
    is used (cl/state.cl ``wide4``: the bits of the float64 part the net force was
    subtracted from); the potential is ``pot_part``'s w.  Only for parts that a walk alone
    writes (no mesh, no LET added, no forces of some particles): the engine's device
    backend keeps their net forces with :meth:`remove_net`.  Such a state does not take
    a restart's stored accelerations (``p.acc``, ``p.pot``: a run that continues with
    them keeps float64 parts).

    ``uniform``: where every mass is the same (the bits of ``p.mass[0]``), keep it once
    (``mass`` an 8-byte buffer, ``mass_step`` 0, ``mass_value`` the mass; else
    ``mass_step`` 1, a mass per particle): every kernel reading the state's masses reads
    ``mass[i * mass_step]``.  Only for one process with no mesh (the engine's device
    backend: tree build, refit, net force, diagnostics; integrate/stepper.py
    SerialStepper allows it without a box): the exchange of particles
    (:meth:`columns`), the LET and the mesh read a mass per particle.

    ``vel32``: the velocities kept as float32 (memory.velocities = "float32": 12 bytes a
    particle less), the state's kernels built with VEL_T float (cl/state.cl): a kick
    computes in double and rounds the velocity once, a drift widens it exactly, as
    :class:`.host.HostState` with ``vel32`` does (the same bits); uploads round a
    float64 velocity once, downloads give float64 copies (exact)."""

    backend = "device"

    def __init__(self, rt: Runtime, p: Particles, parts: tuple[str, ...],
                 clock: Clock | None = None, narrow: bool | None = None,
                 pot_part: str | None = None, uniform: bool = False, vel32: bool = False):
        if not rt.has_fp64:
            raise ValueError("a device state needs double precision (cl_khr_fp64)")
        self.rt = rt
        self.n = len(p.mass)
        self.parts = parts
        self.clock = clock or Clock(rt)
        self.narrow = fill.narrow_ids(p.ids) if narrow is None else bool(narrow)
        if self.narrow and not fill.narrow_ids(p.ids):
            raise ValueError("IDs of 2^32 or more in a state of uint32 IDs")
        self.id_type = np.dtype(np.uint32 if self.narrow else np.uint64)
        self.vel_type = np.dtype(np.float32 if vel32 else np.float64)
        #: the state.cl build of the velocities' kernels (None: VEL_T double, the plain build)
        self.vel_defines = dict(single.VEL32) if vel32 else None
        n = self.n
        self.pot_part = pot_part
        self._total: cl.Buffer | None = None
        self.flag: cl.Buffer | None = None     # parts4.finite's
        mass = np.asarray(p.mass, np.float64)
        self.mass_value = one_mass(mass, uniform)
        self.mass_step = int(self.mass_value is None)
        mass = mass if self.mass_step else mass[:1]
        if pot_part is not None:
            assert p.acc is None or len(parts) > 1, "stored forces need float64 parts"
            parts4.init(self, p, mass)
            return
        # a stored acceleration (a restart's) is the whole force: it seeds a state that keeps
        # the whole force in one column, not one split into parts
        acc = p.acc if p.acc is not None and len(parts) == 1 else np.zeros((n, 3))
        pot = p.pot if p.pot is not None else np.zeros(n)
        with self.clock.device("transfer"):
            arrays = [np.asarray(a, t) for a, t in ((p.pos, np.float64), (p.vel, self.vel_type),
                                                    (mass, np.float64), (p.ids, self.id_type),
                                                    (pot, np.float64), (p.types, np.uint8))]
            (self.pos, self.vel, self.mass, self.ids, self.pot,
             self.types) = upload(rt, arrays, [None] * 6)
            self.acc = {parts[0]: upload(rt, [np.asarray(acc, np.float64)], [None])[0]}
            for part in parts[1:]:
                self.acc[part] = rt.empty(24 * n)
                if n:
                    cl.enqueue_fill_buffer(rt.queue, self.acc[part], np.float64(0), 0, 24 * n)
        self.capacity = n
        kernel(rt, "state.cl", "axpy")          # built now: a failed build fails here
        if vel32:
            kernel(rt, "state.cl", "kick_vel", self.vel_defines)

    @property
    def vel32(self) -> bool:
        """Whether the velocities are kept as float32 (``vel32``)."""
        return self.vel_type == np.float32

    @property
    def vel_bytes(self) -> int:
        """Bytes per particle of the velocities' buffer (24, or 12 as float32)."""
        return 3 * self.vel_type.itemsize

    @property
    def float4(self) -> bool:
        """Whether each part is kept as the walk's float4 (``pot_part``)."""
        return self.pot_part is not None

    @property
    def acc_bytes(self) -> int:
        """Bytes per particle of one force part's buffer."""
        return 16 if self.float4 else 24

    @property
    def nbytes(self) -> int:
        """Device memory of the state (bytes): pos 24, vel 24 (12 as float32), mass 8 (or
        8 in all: one mass), IDs 4 (8 where one does not fit a uint32), types 1; each
        part's acc 24 and the pot 8 (float64), or each part's float4 16."""
        parts = len(self.parts)
        forces = 16 * parts if self.float4 else 24 * parts + 8
        one = 0 if self.mass_step else 8
        return self.n * (24 + self.vel_bytes + 8 * self.mass_step + forces
                         + self.id_type.itemsize + 1) + one

    def remove_net(self, part: str) -> None:
        """The net force of a float32 part summed on the device and kept (Σ m a_x, Σ m a_y,
        Σ m a_z, Σ m: device/reduce.py ``remove_net`` with ``keep``), not subtracted."""
        reduce.reducer(self.rt).remove_net(self.n, self.mass, self.acc[part], self.net[part],
                                           self.mass_step)

    def _axpy(self, n: int, a: float, x: cl.Buffer, y: cl.Buffer) -> None:
        """y += a x over n float64 values (cl/state.cl)."""
        launch(self.rt, "state.cl", "axpy", n, np.int64(n), np.float64(a), x, y)

    def _kick_vel(self, dt: float, a: cl.Buffer) -> None:
        """vel += dt a (a: n x 3 float64; float32 velocities: :func:`.vel32.kick`)."""
        if self.vel32:
            single.kick(self, dt, a)
        else:
            self._axpy(3 * self.n, dt, a, self.vel)

    def kick(self, part: str, dt: float) -> None:
        """vel += dt acc[part]"""
        if self.n == 0:
            return
        with self.clock.device("integrate"):
            if self.float4:
                launch(self.rt, "state.cl", "kick4", self.n, np.int32(self.n),
                       np.float64(dt), self.acc[part], self.net[part], self.vel,
                       defines=self.vel_defines)
            else:
                self._kick_vel(dt, self.acc[part])

    def drift(self, dt: float) -> None:
        """pos += dt vel"""
        if self.n == 0:
            return
        with self.clock.device("integrate"):
            if self.vel32:
                single.drift(self, dt)
            else:
                self._axpy(3 * self.n, dt, self.vel, self.pos)

    def wrap(self, box: float) -> None:
        """Positions moved into [0, box) (:meth:`HostState.wrap`; the same bits)."""
        if self.n == 0:
            return
        with self.clock.device("integrate"):
            launch(self.rt, "state.cl", "wrap", 3 * self.n, np.int64(3 * self.n),
                   np.float64(box), self.pos)

    def kick_linear(self, coef: float, dt: float) -> None:
        """vel += (dt coef) pos (see :meth:`HostState.kick_linear`; the same bits)."""
        if self.n == 0:
            return
        with self.clock.device("integrate"):
            self._kick_vel(dt * coef, self.pos)

    def total_acc(self) -> cl.Buffer:
        """The whole acceleration: the one part's buffer, or the parts added (a buffer of
        the state's, valid until the next call; float32 parts: widened, float64)."""
        if self.float4:
            if self._total is None or self._total.size < 24 * max(self.n, 1):
                self._total = self.rt.empty(24 * max(self.n, 1))
            if self.n:
                parts4.widen(self, self.n, 0, self._total, list(self.parts))
            return self._total
        if "full" in self.acc or self.n == 0:
            return self.acc[self.parts[0]]
        if self._total is None or self._total.size < 24 * self.n:
            self._total = self.rt.empty(24 * self.n)
        launch(self.rt, "state.cl", "add", 3 * self.n, np.int64(3 * self.n),
               self.acc[self.parts[0]], self.acc[self.parts[1]], self._total)
        return self._total

    def download(self, order: tuple[int, cl.Buffer | None] | None = None) -> Particles:
        """Host copies of the particles (:func:`.downloads.download`; ``order = (lo,
        table)``: in the caller's order, row ``table[id - lo]`` or ``id - lo``)."""
        return downloads.download(self, order)

    def to_caller(self, columns: list, lo: int, table: cl.Buffer | None) -> None:
        """The (buffer, host array) columns downloaded in the caller's order
        (:meth:`download`), one at a time through 24 bytes per particle of scratch."""
        n = self.n
        tmp = self.rt.empty(24 * n)
        ids = f"i{8 * self.id_type.itemsize}"
        try:
            for buf, host in columns:
                name = f"to_caller_w{host.itemsize}_{ids}"
                launch(self.rt, "state.cl", name, n, np.int32(n), np.int32(host.size // n),
                       np.uint64(lo), np.int32(table is not None), self.ids,
                       table if table is not None else self.ids, buf, tmp)
                download(self.rt, [(tmp, host)])
        finally:
            tmp.release()

    def download_rows(self, lo: int, hi: int) -> Particles:
        """Host copies of rows lo .. hi - 1 of the state's order, the bits of
        :meth:`download` without ``order`` (:func:`.downloads.download_rows`)."""
        return downloads.download_rows(self, lo, hi)

    def rows(self, buf: cl.Buffer, lo: int, host: np.ndarray, tmp: cl.Buffer) -> None:
        """``host`` (C-contiguous, k rows) := rows lo .. lo + k - 1 of the state's column
        ``buf``, through the device buffer ``tmp`` (room for them)."""
        row = host.nbytes // len(host)            # bytes per particle of the column
        cl.enqueue_copy(self.rt.queue, tmp, buf, byte_count=host.nbytes, src_offset=row * lo)
        download(self.rt, [(tmp, host)])

    def type_counts(self) -> np.ndarray:
        """Particles of each GADGET type 0..5 (the types alone come to the host, 4 Mi of
        them at a time: a snapshot of 2^30 particles counts them first)."""
        counts = np.zeros(N_TYPES, np.int64)
        rows = min(self.n, TYPE_ROWS)
        if self.n == 0:
            return counts
        types = np.empty(rows, np.uint8)
        with self.clock.host("transfer", wait=True):
            if rows == self.n:
                download(self.rt, [(self.types, types)])
                return np.bincount(types, minlength=N_TYPES)
            tmp = self.rt.empty(rows)
            try:
                for lo in range(0, self.n, rows):
                    part = types[:min(rows, self.n - lo)]
                    self.rows(self.types, lo, part, tmp)
                    counts += np.bincount(part, minlength=N_TYPES)
            finally:
                tmp.release()
        return counts

    def type_mass(self, t: int) -> cl.Buffer:
        """The masses of the particles of GADGET type ``t``, 0 for the others (on the device:
        a scratch buffer, valid until the next call)."""
        with self.clock.device("reduce"):
            return reduce.reducer(self.rt).type_mass(self.n, self.types, t, self.mass,
                                                     self.mass_step)

    def moments(self, mass: cl.Buffer | None = None) -> dict:
        """:meth:`hybridtree.device.reduce.Reducer.moments`, weighted by ``mass`` (default
        the particles' own; a given buffer has a mass per particle)."""
        step = self.mass_step if mass is None else 1
        mass = self.mass if mass is None else mass
        red = reduce.reducer(self.rt, self.vel32)
        if not self.float4 or self.n == 0:
            with self.clock.device("reduce"):
                return red.moments(self.n, self.pos, self.vel, mass, self.pot, mass_step=step)
        with self.clock.device("reduce"):           # the potential: pot_part's w
            return red.moments(self.n, self.pos, self.vel, mass, self.acc[self.pot_part],
                               pot4=True, mass_step=step)

    def set_sums(self, wanted: list[int], whole: tuple[np.ndarray, float] | None
                 ) -> tuple[list[dict], list[list[float]]]:
        """:func:`.sets.set_sums`: every set's sums at once, the bits of one at a time."""
        return sets.set_sums(self, wanted, whole)

    def lagrangian_radii(self, centre: np.ndarray, fractions=(0.1, 0.5, 0.9),
                         total_mass: float | None = None, combine=None,
                         mass: cl.Buffer | None = None) -> list[float]:
        """:meth:`hybridtree.device.reduce.Reducer.lagrangian_radii` (``combine``: over
        processes; ``mass``: as for :meth:`moments`).  One mass and no ``total_mass``: the
        masses' sum of a buffer of a mass per particle (scratch, 8 bytes a particle)."""
        step = self.mass_step if mass is None else 1
        if not step and total_mass is None and self.n:
            mass = self.rt.empty(8 * self.n)
            cl.enqueue_fill_buffer(self.rt.queue, mass, np.float64(self.mass_value), 0,
                                   8 * self.n)
            step = 1
        with self.clock.device("reduce"):
            return reduce.reducer(self.rt).lagrangian_radii(
                self.n, self.pos, self.mass if mass is None else mass, centre, fractions,
                total_mass, combine, mass_step=step)

    def columns(self) -> list[tuple[str, int, cl.Buffer]]:
        """Every per-particle buffer as (name, bytes per particle, buffer), in a fixed
        order: what a particle carries when it moves to another process (one mass for all
        is none: a state of many processes keeps a mass per particle)."""
        mass = [("mass", 8, self.mass)] if self.mass_step else []
        return ([("pos", 24, self.pos), ("vel", self.vel_bytes, self.vel)] + mass
                + [("ids", self.id_type.itemsize, self.ids)]
                + [(f"acc_{p}", self.acc_bytes, self.acc[p]) for p in self.parts]
                + ([] if self.float4 else [("pot", 8, self.pot)]) + [("types", 1, self.types)])

    def reserve(self, n: int) -> None:
        """Room for ``n`` particles (the first ``self.n`` kept): buffers grow by a quarter
        more than asked, so that particles moving in and out of a domain rarely
        reallocate."""
        if n <= self.capacity:
            return
        cap = max(n, self.capacity + self.capacity // 4, 1)
        for name, size, buf in self.columns():
            new = self.rt.empty(size * cap)
            if self.n:
                cl.enqueue_copy(self.rt.queue, new, buf, byte_count=size * self.n)
            if name.startswith("acc_"):
                self.acc[name[4:]] = new
            else:
                setattr(self, name, new)
        self.capacity = cap
        self._total = None

    def finite(self) -> bool:
        n3 = 3 * self.n
        red = reduce.reducer(self.rt)
        # float32 velocities: checked apart (their own kernel), first
        vel = [(self.vel, n3)] if not self.vel32 else []
        with self.clock.device("reduce"):
            if self.vel32 and self.n and not single.finite(self):
                return False
            if not self.float4 or self.n == 0:
                return red.all_finite(self.n, (self.pos, n3), *vel,
                                      *((a, n3) for a in self.acc.values()))
            return parts4.finite(self, red, vel=not self.vel32)

    def bad_ids(self) -> np.ndarray:
        """IDs of the particles with a non-finite value (downloads the state: a run
        calls it only after :meth:`finite` said no)."""
        return HostState(self.download(), ("full",)).bad_ids()

    def poison(self) -> None:
        """NaN into the first velocity (fault injection for the tests)."""
        cl.enqueue_copy(self.rt.queue, self.vel, np.array([np.nan], self.vel_type))

    # -- a state filled block by block (a generated model drawn on the host in blocks) --

    @classmethod
    def for_rows(cls, rt: Runtime, n: int, parts: tuple[str, ...], clock: Clock | None = None,
                 narrow: bool = True, pot_part: str | None = None,
                 mass: float | None = None, vel32: bool = False) -> "DeviceState":
        """A state of ``n`` particles whose columns are allocated, the accelerations and
        potential zero (as :meth:`__init__` makes them; ``pot_part``: float32 parts, as
        there) and the rest to be written by :meth:`upload_rows`: the host never holds
        the particles all at once.  ``mass``: every particle's (kept once; the rows'
        uploads then leave the masses out), or None: a mass per particle; ``vel32``:
        float32 velocities (:meth:`__init__`)."""
        m = np.empty(0) if mass is None else np.array([mass], np.float64)
        none = Particles(np.empty((len(m), 3)), np.empty((len(m), 3)), m,
                         np.zeros(len(m), np.uint64))
        state = cls(rt, none, parts, clock, narrow, pot_part, uniform=mass is not None,
                    vel32=vel32)
        assert state.mass_step == (mass is None), (state.mass_step, mass)
        state.n = 0
        state.reserve(n)
        state.n = n
        with state.clock.device("transfer"):
            for name, size, buf in state.columns():
                if n and (name == "pot" or name.startswith("acc_")):
                    cl.enqueue_fill_buffer(rt.queue, buf, np.uint8(0), 0, size * n)
        return state

    def upload_rows(self, lo: int, p: Particles,
                    columns: tuple[str, ...] = ("pos", "vel", "mass", "ids", "types")) -> None:
        """:func:`.fill.upload_rows` (rows lo .. lo + len(p) - 1 := ``p``'s)."""
        fill.upload_rows(self, lo, p, columns)

    def shift_rows(self, dpos: np.ndarray, dvel: np.ndarray) -> None:
        """:func:`.fill.shift_rows` (pos -= dpos, vel -= dvel on the device)."""
        fill.shift_rows(self, dpos, dvel)
