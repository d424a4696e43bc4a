"""One run state: the particles of this process and the forces on them.

Fields, the same for both backends (internal units, G = 1, float64 unless stated):
positions ``pos`` (n, 3), velocities ``vel`` (n, 3; float32 where the run keeps them so,
``vel32``: memory.velocities), masses ``mass`` (n,), IDs ``ids``
(n,) (uint64 on the host; on the device uint32 where every ID fits, else uint64), GADGET
types ``types`` (n,) uint8, one acceleration (n, 3) per force part in ``acc`` (``"full"`` for the plain
leapfrog; ``"hard"`` and ``"soft"`` for the hybrid tree) and the potential ``pot`` (n,).

- :class:`DeviceState` keeps them in device buffers from the first force to the end of
  the run; the host sees them only when a snapshot is written (:meth:`download`).
  Needs double precision on the device (cl_khr_fp64).  Where a walk alone writes every
  part (``pot_part``, :mod:`.parts4`) each part is the walk's float32 float4 (ax, ay,
  az, pot) with its net force apart, widened wherever it is used: the same bits.
- :class:`HostState` keeps numpy arrays (devices without double precision, the direct
  method, the numpy tree build).  Under MPI the device state grows and shrinks as
  particles change domain (:meth:`DeviceState.reserve`,
  :func:`hybridtree.parallel.migrate.migrate`).

Both do the same float64 operations in the same order (kicks and drifts: one rounded
multiply, one rounded add, float32 velocities then rounded once, :mod:`.vel32`; sums in
the fixed order of :mod:`hybridtree.device.reduce`), so
the same particles stepped with either backend give the same bits (block time steps
with more than one bin excepted: the walks of the active particles form their groups
differently on the two backends).
``HYBRIDTREE_STATE=host`` forces the host backend (tests run both).

The package sits below the gravity engine and the integrators, which both use it: it
imports only the device layer and the bottom (particles, errors, faults, config).
Modules: :mod:`.host`, :mod:`.device`, :mod:`.quantities` (sums over a state's
particles: energies, Lagrangian radii).
"""

from __future__ import annotations

import os
from typing import Protocol

from ..device.clock import Clock
from ..device.runtime import Runtime
from ..errors import UserInputError
from ..particles import Particles
from .device import DeviceState
from .fill import ID32, narrow_ids
from .host import HostState

__all__ = ["DeviceState", "HostState", "Rows", "State", "make_state", "narrow_ids",
           "state_backend"]


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


State = HostState | DeviceState


class Rows(Protocol):
    """Particles not yet on the host (a generated model: :class:`hybridtree.ics.rows.
    ModelRows`): drawn into a device state's rows block by block, or whole."""

    def __len__(self) -> int: ...

    @property
    def max_id(self) -> int: ...

    def fill(self, state: DeviceState) -> None: ...

    def particles(self, vel32: bool = False) -> Particles: ...

    @property
    def uniform_mass(self) -> float | None: ...


def make_state(p: Particles | Rows, parts: tuple[str, ...], backend: str, rt: Runtime | None,
               clock: Clock | None = None, narrow: bool | None = None,
               pot_part: str | None = None, uniform: bool = False,
               vel32: bool = False) -> State:
    """A state of ``backend`` ("host" or "device") holding copies of ``p`` (``narrow``:
    a device state's uint32 IDs; ``pot_part``: its float32 parts, :class:`DeviceState`;
    a host state keeps float64 parts); ``p`` :class:`Rows` go into a device state's rows
    block by block (:meth:`DeviceState.for_rows`), so that the host never holds them all,
    or are made whole for a host state.  ``uniform``: a device state may keep one mass
    for all (:class:`DeviceState`; rows: their ``uniform_mass``); ``vel32``: float32
    velocities (memory.velocities = "float32"; either backend, the same bits: rows made
    whole for a host state round their drawn velocities to float32 before the
    centre-of-mass shift, as the device's rows are uploaded)."""
    if not isinstance(p, Particles):
        if backend == "device":
            assert rt is not None
            state = DeviceState.for_rows(rt, len(p), parts, clock,
                                         p.max_id < ID32 if narrow is None else narrow,
                                         pot_part, p.uniform_mass if uniform else None,
                                         vel32=vel32)
            p.fill(state)
            return state
        p = p.particles(vel32=True) if vel32 else p.particles()
    if backend == "device":
        assert rt is not None
        return DeviceState(rt, p, parts, clock, narrow, pot_part, uniform, vel32=vel32)
    return HostState(p, parts, clock, vel32=vel32)
