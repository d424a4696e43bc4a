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
import pyopencl as cl

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
            if self.p.single and self.comm is None:
                from .pm_compact import CompactMesh
                self._mesh = CompactMesh(self.rt, self.p)
            elif self.comm is None:
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
        if self.rt is not None and self.rt.has_fp64 and len(pos) and not self.p.single:
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
        rt = self.rt
        shift, coef = self._offsets(n, mass)
        self._device_mesh().add_forces(pos, mass, n, acc, pot)
        if n == 0:
            return
        if coef:
            launch(rt, "state.cl", "axpy", n, np.int64(n), np.float64(coef), mass, pot)
        launch(rt, "state.cl", "shift", n, np.int64(n), np.float64(shift), pot)

    def _offsets(self, n: int, mass) -> tuple[float, float]:
        """(c, coef): each potential gains c + coef m_i, the split's missing volume
        integral and a particle's own images m / (sqrt(pi) r_s); for one mass for all (a
        float ``mass``: the float32 mesh) both in c and coef 0.  The total mass is found
        at the first call (collective on many processes) and kept."""
        if self._mass_total is None:
            self._mass_total = self._total(n, mass)
        p = self.p
        shift = p.potential_offset(self._mass_total)
        if not isinstance(mass, cl.Buffer):
            return shift + p.self_potential_per_mass * float(mass), 0.0
        return shift, p.self_potential_per_mass

    def _total(self, n: int, mass) -> float:
        """The total mass of the n sources (of every process sharing the mesh): ``mass``
        a float64 device buffer, or one mass (a float) for all."""
        if not isinstance(mass, cl.Buffer):
            total = float(mass) * n
        else:
            host_mass = np.empty(n)
            if n:
                download(self.rt, [(mass, host_mass)])
            total = float(host_mass.sum())
        return float(self.comm.allreduce(total)[0]) if self.comm is not None else total

    def add_device4(self, n: int, pos, mass, part4) -> None:
        """The float32 mesh's (:mod:`.pm_compact`) long range and the potential's offsets
        added to ``part4``, a float4 (ax, ay, az, pot) per particle (a device state's
        float32 part) of the n particles at ``pos`` (float64 n x 3), sources and sinks;
        ``mass``: a float64 buffer of n masses, or one mass (a float) for all.  The total
        mass must not change between calls."""
        if n == 0:
            return
        shift, coef = self._offsets(n, mass)
        self._device_mesh().add_forces4(pos, mass, n, part4)
        per_mass = isinstance(mass, cl.Buffer)
        launch(self.rt, "state.cl", "offset4", n, np.int32(n), np.float64(shift),
               np.float64(coef), np.int32(per_mass), mass if per_mass else part4, part4)
