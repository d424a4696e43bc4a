"""What the run driver advances: this process's state, its scheme and its forces.

:class:`SerialStepper` is a one-process run; :class:`hybridtree.parallel.stepping.
ParallelStepper` has the same interface for runs on many processes.  The driver
(:mod:`hybridtree.run.simulation`) only calls these methods: it decides when to step,
report and write, and does no array arithmetic.  Units: internal (G = 1).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..device.clock import Clock
from ..gravity.engine import ForceEngine, GravitySettings, float4_part
from ..particles import Particles
from ..device.runtime import Runtime
from .choose import Comoving, scheme_for
from .schemes import BlockLeapfrog, BlockSettings, NestedLeapfrog
from ..state import State, make_state, state_backend
from ..state.sets import each_set_sums

if TYPE_CHECKING:
    from .comoving import ComovingLeapfrog
    from .comoving_block import ComovingBlock

__all__ = ["Stepper", "SerialStepper"]


class Stepper:
    """This process's particles (``state``) with the forces of their positions, stepped by
    ``scheme`` with ``engine``'s forces, timed by ``clock``.  Subclasses make them."""

    #: a restart's stored forces are computed again instead of kept (SerialStepper: a
    #: box's float32 mesh, whose float32 sum the stored float64 force is not)
    _recompute = False

    state: State
    scheme: NestedLeapfrog | BlockLeapfrog | ComovingLeapfrog | ComovingBlock   # scheme_for's
    engine: ForceEngine
    clock: Clock

    @property
    def backend(self) -> str:
        return self.state.backend

    def start(self, reuse: bool) -> None:
        """Forces at the start (``reuse``: keep a restart snapshot's accelerations)."""
        self.scheme.start(self.state, reuse and not self._recompute)

    def step(self, dt: float) -> None:
        """One (soft) step of ``dt``."""
        self.scheme.step(self.state, dt)

    def set_softening(self, eps: float) -> None:
        """The Plummer softening of the forces from now on (length units): a
        cosmological run's physical ε = a × its comoving one."""
        self.engine.g = replace(self.engine.g, eps=float(eps))

    def particles(self, order: tuple[int, Any] | None = None) -> Particles:
        """Host copies of this process's particles (for a snapshot); ``order``: see
        :meth:`hybridtree.state.DeviceState.download` (device states only)."""
        if order is None:
            return self.state.download()
        return self.state.download(order)

    def type_counts(self) -> np.ndarray:
        """This process's particles of each GADGET type 0..5."""
        return self.state.type_counts()

    def moments(self, mass: Any = None) -> dict:
        """Sums over all processes' particles (:func:`hybridtree.device.reduce.host_moments`),
        weighted by ``mass`` (the state's :meth:`type_mass`; default the particles' own)."""
        return self.state.moments(mass)

    def lagrangian_radii(self, centre: np.ndarray, total_mass: float,
                         mass: Any = None) -> list[float]:
        """10/50/90 % Lagrangian radii of all processes' particles around ``centre``
        (``mass`` as for :meth:`moments`)."""
        return self.state.lagrangian_radii(centre, total_mass=total_mass, mass=mass)

    def type_sums(self, wanted: list[int], counts: np.ndarray) -> list[dict]:
        """Collective: per GADGET type in ``wanted`` (every process passes the same list),
        over all processes' particles: ``particles`` (``counts[t]``: a run keeps its
        particles), ``mass``, ``kinetic`` ½ Σ m v², ``potential`` ½ Σ m φ (φ: the whole
        system's potential at the particle, so the types' potentials add up to the
        system's), angular momentum ``lx``, ``ly``, ``lz`` Σ m r × v about the origin, and
        the 10/50/90 % Lagrangian radii ``r10``, ``r50``, ``r90`` about the type's own
        centre of mass.  Each is the whole set's sum with the type's masses and 0 for the
        other particles, where the state lives (nothing is downloaded).  Internal units."""
        return self.report_sums(wanted, counts)[1]

    def report_sums(self, wanted: list[int], counts: np.ndarray,
                    whole: tuple[np.ndarray, float] | None = None
                    ) -> tuple[list[float] | None, list[dict]]:
        """Collective: (the 10/50/90 % Lagrangian radii of all particles about ``whole``'s
        centre, of its total mass, as :meth:`lagrangian_radii`; None without ``whole``)
        and :meth:`type_sums`'s rows: a report's sums, the same bits as one at a time,
        in one level chain and one multisection for all where the state can
        (:func:`hybridtree.state.sets.set_sums`)."""
        moms, radii = self._set_sums(wanted, whole)
        out = []
        for t, mom, r in zip(wanted, moms, radii):
            lx, ly, lz = (float(v) for v in mom["angular_momentum"])
            out.append({"type": t, "particles": int(counts[t]), "mass": mom["mass"],
                        "kinetic": mom["kinetic"], "potential": mom["potential"],
                        "lx": lx, "ly": ly, "lz": lz, "r10": r[0], "r50": r[1], "r90": r[2]})
        return (radii[-1] if whole is not None else None), out

    def _set_sums(self, wanted: list[int], whole: tuple[np.ndarray, float] | None
                  ) -> tuple[list[dict], list[list[float]]]:
        """:func:`hybridtree.state.sets.set_sums`'s (moments, radii), one set at a time
        (through :meth:`moments` and :meth:`lagrangian_radii`: over all processes)."""
        return each_set_sums(wanted, whole, self.state.type_mass, self.moments,
                             self.lagrangian_radii)

    def bad_ids(self) -> list[int] | None:
        """None if every value is finite, else the IDs of this process's bad particles."""
        if self.state.finite():
            return None
        return [int(i) for i in self.state.bad_ids()]

    def poison(self) -> None:
        self.state.poison()

    @property
    def counts(self) -> dict[str, int]:
        """Cumulative interactions and forces per part."""
        return self.engine.counts

    def breakdown(self) -> dict[str, float]:
        """Cumulative per-step figures of many processes (empty for one)."""
        return {}


class SerialStepper(Stepper):
    """One process: the state on the device where it can be (:mod:`hybridtree.state`)."""

    def __init__(self, g: GravitySettings, p: Particles, rt: Runtime, external: float = 0.0,
                 block: BlockSettings | None = None, comoving: Comoving | None = None,
                 vel32: bool = False):
        """``external``, ``block``, ``comoving``: the scheme's
        (:func:`hybridtree.integrate.choose.scheme_for`); ``vel32``: float32 velocities
        (memory.velocities; the state's, :func:`hybridtree.state.make_state`)."""
        self.clock = Clock(rt)
        backend = state_backend(rt, g.method, g.build)
        # float32 parts where the walk alone writes them (the same bits, 16 B a part less);
        # a restart's stored whole force is kept as it was stored (float64), bit for bit
        stored = p.acc is not None and len(g.parts) == 1
        shared = block is None and (comoving is None or comoving.n_short == 1)
        four = float4_part(g, shared)
        # but a box's float32 mesh adds to the walk's float4 in float32: its restart
        # computes the force again (the bits of the run's last step, from the same
        # positions), not the stored float64 sum
        self._recompute = stored and four is not None and g.periodic is not None
        if self._recompute:
            p = replace(p, acc=None, pot=None)
        pot_part = None if stored and not self._recompute else four
        # one mass for all where every particle has it and no mesh reads a mass per
        # particle (the float32 mesh takes one mass)
        self.state = make_state(p, g.parts, backend, rt, self.clock, pot_part=pot_part,
                                uniform=g.periodic is None or g.periodic.single, vel32=vel32)
        self.engine = ForceEngine(g, rt, self.clock)
        self.scheme = scheme_for(g, self.engine, external, block, comoving=comoving)

    def _set_sums(self, wanted: list[int], whole: tuple[np.ndarray, float] | None
                  ) -> tuple[list[dict], list[list[float]]]:
        return self.state.set_sums(wanted, whole)      # one process: the state's own
