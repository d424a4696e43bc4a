"""The long-range part of a periodic box's forces (:mod:`.periodic`), added to the short
range the walk left in a run's state or in a public call's arrays, with the potential
put in Ewald's convention (the walk's missing volume integral and a particle's own
images).

The mesh is :mod:`.pm_device` on a device with double precision (everything stays on
the device: a run's state is never copied for it), else :mod:`.pm` on the host (float64
numpy, also the tests' reference; the two agree to rounding, tests/gravity/
test_pm_device.py).  A run of many processes shares one mesh in slabs
(:mod:`.pm_slabs`).  Units: G = 1, the caller's.
"""

from __future__ import annotations

import time

import numpy as np

from ..device.kernels import launch
from ..device.runtime import Runtime
from ..device.transfer import download
from .periodic import Periodic
from .pm import pm_forces

__all__ = ["LongRange"]


class LongRange:
    """The mesh forces of periodic cube ``p`` for runtime ``rt``'s states and calls; the
    device mesh (its buffers and FFT plan) is made on first use and kept.  ``comm``: the
    sources are shared by the processes of this communicator
    (:class:`hybridtree.parallel.comm.Comm`, more than one): the mesh is then in slabs
    over them and :meth:`add_device` is collective (device mesh only)."""

    def __init__(self, p: Periodic, rt: Runtime | None = None, comm=None):
        self.p, self.rt = p, rt
        self.comm = comm if comm is not None and comm.size > 1 else None
        self._mesh = None
        self._mass_total: float | None = None

    def _device_mesh(self):
        if self._mesh is None:
            if self.comm is None:
                from .pm_device import DeviceMesh       # imports reikna
                self._mesh = DeviceMesh(self.rt, self.p)
            else:
                from .pm_slabs import SlabMesh
                self._mesh = SlabMesh(self.rt, self.p, self.comm)
        return self._mesh

    def add(self, pos: np.ndarray, mass: np.ndarray, acc: np.ndarray, pot: np.ndarray,
            sinks: np.ndarray | None = None) -> None:
        """acc (n, 3) and pot (n,) of the sinks (default: the sources ``pos``, which then
        meet their own images) += the long range and the potential's offsets."""
        p = self.p
        if self.rt is not None and self.rt.has_fp64 and len(pos):
            a, phi = self._device_mesh().forces(pos, mass, sinks)
        else:
            a, phi = pm_forces(pos, mass, p, sinks)
        acc += a
        pot += phi + p.potential_offset(float(np.sum(mass)))
        if sinks is None:
            pot += p.self_potential(mass)

    def add_timed(self, pos: np.ndarray, mass: np.ndarray, acc: np.ndarray, pot: np.ndarray,
                  timings: dict[str, float], sinks: np.ndarray | None = None) -> None:
        """:meth:`add`, its seconds as ``timings["pm"]`` and added to ``timings["total"]``."""
        t0 = time.perf_counter()
        self.add(pos, mass, acc, pot, sinks)
        timings["pm"] = time.perf_counter() - t0
        timings["total"] = timings.get("total", 0.0) + timings["pm"]

    def add_device(self, n: int, pos, mass, acc, pot) -> None:
        """The same for float64 device buffers of n particles (pos and acc n x 3) that are
        the sources and the sinks; the total mass must not change between calls."""
        many = self.comm is not None
        if n == 0 and not many:
            return
        rt, p = self.rt, self.p
        if self._mass_total is None:
            host_mass = np.empty(n)
            if n:
                download(rt, [(mass, host_mass)])
            total = float(host_mass.sum())
            self._mass_total = float(self.comm.allreduce(total)[0]) if many else total
        self._device_mesh().add_forces(pos, mass, n, acc, pot)
        if n == 0:
            return
        launch(rt, "state.cl", "axpy", n, np.int64(n), np.float64(p.self_potential_per_mass),
               mass, pot)
        launch(rt, "state.cl", "shift", n, np.int64(n),
               np.float64(p.potential_offset(self._mass_total)), pot)
