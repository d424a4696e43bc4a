"""This process's particles as a simulation hands them out: read-only float64 host copies
in the order the caller gave them (arrays on one process) or sorted by ID, downloaded in
that order on the device where it can be, cached until the next step
(:class:`CallerOrder`, a part of :class:`hybridtree.run.simulation.Simulation`); and the
array properties ``pos``, ``vel``, ``mass``, ``ids``, ``acc``, ``pot`` of anything with a
``particles()`` method (:class:`ParticleViews`).  Units internal (G = 1)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..config.quantities import QuantityView
from ..particles import Particles

__all__ = ["CallerOrder", "ParticleViews"]


class CallerOrder:
    """The caller's order of this process's particles: ``caller_ids`` (the IDs as the
    caller gave them; None: ID order), ``id_lo`` (the IDs are the range id_lo ..
    id_lo + N - 1 on one process; None: not, or several processes, whose IDs move)."""

    def __init__(self, rt: Any, caller_ids: np.ndarray | None, id_lo: int | None):
        self._rt = rt
        self._caller_ids, self._id_lo = caller_ids, id_lo
        self._slots: np.ndarray | None = None      # caller position by ID - lo
        self._order: Any = None                    # _device_order's (lo, table)
        self._cache: Particles | None = None

    def forget(self) -> None:
        """The state changed: the next call downloads again."""
        self._cache = None

    def particles(self, stepper: Any) -> Particles:
        """This process's particles (float64 host copies, internal units) in the order
        they were given (arrays on one process), else sorted by ID; ``acc`` and ``pot``
        are those of the current positions.  Read-only (the same arrays until the next
        step): ``.copy()`` them to change them."""
        if self._cache is None:
            order = self._device_order(stepper)
            if order is not None:           # in the caller's order already
                self._cache = _read_only(stepper.particles(order))
                return self._cache
            p = stepper.particles()
            order = self._host_order(p.ids)
            self._cache = _read_only(Particles(
                p.pos[order], p.vel[order], p.mass[order], p.ids[order],
                None if p.acc is None else p.acc[order], None if p.pot is None else p.pot[order],
                p.types[order]))
        return self._cache

    def _device_order(self, stepper: Any) -> tuple[int, Any] | None:
        """(lo, table) for a download in the caller's order on the device (one process,
        a device state, IDs a range lo .. lo + N - 1); None: order on the host."""
        if self._id_lo is None or getattr(stepper, "backend", "host") != "device":
            return None
        if self._order is None:
            table = None
            if self._caller_ids is not None:
                table = self._rt.to_device(self._caller_table().astype(np.int32))
            self._order = (self._id_lo, table)
        return self._order

    def _caller_table(self) -> np.ndarray:
        """table[id - lo] = the caller's position of ID id (caller IDs a range; cached)."""
        if self._slots is None:
            key = self._caller_ids
            self._slots = np.empty(len(key), np.int64)
            self._slots[(key - np.uint64(self._id_lo)).astype(np.int64)] = np.arange(len(key))
        return self._slots

    def _host_order(self, ids: np.ndarray) -> np.ndarray:
        """Indices that put particles with these ``ids`` (in the state's order) in the
        caller's order: O(N) for IDs that are a range (the usual 1..N), else by sorting."""
        if self._id_lo is None:
            sorter = np.argsort(ids, kind="stable")
            if self._caller_ids is None:
                return sorter
            return sorter[np.searchsorted(ids[sorter], self._caller_ids)]
        slot = (ids - np.uint64(self._id_lo)).astype(np.int64)
        if self._caller_ids is not None:
            slot = self._caller_table()[slot]
        order = np.empty(len(ids), np.int64)
        order[slot] = np.arange(len(ids))
        return order

class ParticleViews:
    """The particle arrays of an object with a ``particles()`` method (a
    :class:`hybridtree.particles.Particles`), as read-only properties."""

    @property
    def pos(self) -> np.ndarray:
        """Positions (N, 3), internal length units."""
        return self.particles().pos

    @property
    def vel(self) -> np.ndarray:
        """Velocities (N, 3), internal velocity units sqrt(G M / L)."""
        return self.particles().vel

    @property
    def mass(self) -> np.ndarray:
        """Masses (N,), internal mass units."""
        return self.particles().mass

    @property
    def ids(self) -> np.ndarray:
        """Particle IDs (N,), uint64."""
        return self.particles().ids

    @property
    def types(self) -> np.ndarray:
        """GADGET particle types (N,), uint8 0..5: each particle's ``PartTypeN`` as read
        from its file (1 for generated and given particles)."""
        return self.particles().types

    @property
    def acc(self) -> np.ndarray:
        """Accelerations (N, 3) of the current positions (a hybrid run: soft + hard)."""
        return self.particles().acc

    @property
    def pot(self) -> np.ndarray:
        """Potentials (N,) of the current positions, internal units G M / L."""
        return self.particles().pot

    @property
    def quantities(self) -> Any:
        """``pos``, ``vel``, ``mass``, ``acc``, ``pot``, ``t``, ``dt`` as astropy quantities in
        the run's units (``sim.quantities.pos.to("kpc")``; needs astropy)."""
        return QuantityView(self, self.units)

    @property
    def memory(self) -> dict[str, Any]:
        """This process's device buffers (:class:`hybridtree.device.memory.Ledger`), in
        bytes: ``peak`` (since the device was first used by this process), ``live`` (now),
        ``at_peak`` and ``owner_peak`` ({owner: bytes}: state, tree, sort, lists, walk,
        mesh, let, reductions ...).  The OpenCL context and programs are not counted."""
        return self._rt.memory.report()


def _read_only(p: Particles) -> Particles:
    for a in (p.pos, p.vel, p.mass, p.ids, p.acc, p.pot, p.types):
        if a is not None:
            a.flags.writeable = False
    return p
