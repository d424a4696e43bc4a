"""The force engine: a run state in, accelerations and potentials in its fields out.

One engine per run (or per call of :func:`hybridtree.gravity.accelerations`, on its
runtime's kept buffers).  For a :class:`hybridtree.state.DeviceState` it builds the tree on the device from the device
positions, walks it for each force part into the state's buffers, removes the net force and sums
the interaction counts on the device; nothing is allocated (a ``Workspace`` keeps the tree's
buffers between calls), nothing is validated (the state was checked when it was made) and the
host reads back only a few numbers; a force of some particles (block steps) may refit the last
tree instead (``refit_fraction``, :mod:`hybridtree.gravity.tree.refit`).  For a
:class:`hybridtree.state.HostState` it does the same from numpy arrays (upload, build,
walk, download).  Units: G = 1, the state's units.

One pipeline, backends chosen once: ``compute(state, parts, active)`` drives the stages of
:mod:`.pipeline` (sources, tree, exchange, the walk of each part (:mod:`.parts`), long range,
reductions) through the backend of where the state lives (:mod:`.backends`: ``device``,
``host``); how many processes is the engine's class (this one; many:
:class:`hybridtree.parallel.engine.ParallelEngine`, whose backends override the tree, the
exchange and the reductions).  The opening criterion of a force is one value
(:mod:`.criterion`, :meth:`ForceEngine.criterion`).  Sinks given as arrays (the public
:func:`hybridtree.gravity.accelerations`): :meth:`ForceEngine.sink_forces` drives the same
stages through the array backends (:mod:`.arrays`: ``resident``, the device walk on buffers
of its own, values checked on the device; ``host_arrays``; net force kept).

Net force: a tree force violates Newton's third law by the size of its error, so an isolated
system picks up a spurious net force (measured ~7e-5 at N = 1e4, θ = 0.5, monopole) and its centre
of mass drifts.  ``remove_net_force`` subtracts the mass-weighted mean acceleration of each part
(summed in the fixed order of :mod:`hybridtree.device.reduce`, so both backends subtract the same
bits)."""

from __future__ import annotations

from ..device.clock import Clock
from ..device.runtime import Runtime
from ..device.transfer import Workspace
from ..state import DeviceState, State
from . import arrays
from .arrays import ArrayHostBackend, ResidentBackend
from .backends import DeviceBackend, HostBackend
from .counts import Tally
from .criterion import Criterion, opening_criterion
from .eps_types import TypeSoftenings
from .forces import Active, Forces
from .long_range import LongRange
from .parts import Part, as_parts, whole_part
from .pipeline import drive
from .settings import GravitySettings
from .tree.refit import KeptTree
from .tuning import TUNING, WalkTuning

__all__ = ["ForceEngine", "Forces", "GravitySettings", "float4_part"]


def float4_part(g: GravitySettings, shared: bool) -> str | None:
    """Where a device state may keep each force part as the walk's float32 float4 (ax, ay,
    az, pot; :class:`hybridtree.state.DeviceState` ``pot_part``), the part whose w is the
    potential; else None.  Only where a walk alone writes every part and every particle
    at once (``shared``: one time step for all) or a float32 mesh adds to it (a periodic
    box with memory.mesh = "float32": :mod:`.pm_compact`); not the float64 mesh, not
    forces of some particles (block steps); the many-process engine adds LETs and keeps
    float64 parts."""
    if (g.periodic is not None and not g.periodic.single) or not shared:
        return None
    return next(p.name for p in as_parts(g.parts) if p.potential)


class ForceEngine:
    """Forces of a state (see the module docstring), or of sinks given as arrays
    (:meth:`sink_forces`).  ``counts``: interactions per part and the number of forces
    computed, cumulative.  ``work``: the buffers kept between calls (default: the
    engine's own).  ``tuning``: the walks' switches (:class:`.tuning.WalkTuning`; tuning
    scripts and tests give their own).  ``device``, ``host``: the pipeline's backends (:mod:`.backends`;
    ``resident``, ``host_arrays``: those of arrays, :mod:`.arrays`);
    subclasses for other ways of computing (many processes:
    :class:`hybridtree.parallel.engine.ParallelEngine`) give backends of their own and
    keep the rest (``refits``: whether they refit)."""

    refits, mesh_comm = True, None      # mesh_comm: the processes sharing a periodic mesh

    def __init__(self, g: GravitySettings, rt: Runtime, clock: Clock | None = None,
                 work: Workspace | None = None, tuning: WalkTuning = TUNING):
        # a run settles "auto" knowing what it can take (run.assemble.make_stepper); an
        # engine made any other way has not been told, so "auto" walks geometric there
        self.g = g.settled(rt.info.kind, relative_ok=False)
        self.rt, self.clock, self.work = rt, clock or Clock(rt), work or Workspace(rt)
        self.tuning = tuning
        self.tally, self.softenings = Tally(rt), TypeSoftenings(rt)
        self._known = False       # the state holds forces of its current particles
        # periodic boxes build every tree (a wrapped particle leaves its cell by a box length)
        self.kept = KeptTree(g.refit_fraction if self.refits and g.periodic is None else 0.0)
        self._long: LongRange | None = None
        self.device, self.host = self.backends()
        # sinks given as arrays (sink_forces): on the device's own buffers, or from the host
        self.resident, self.host_arrays = ResidentBackend(self), ArrayHostBackend(self)

    def backends(self) -> tuple[DeviceBackend, HostBackend]:
        """The pipeline's backends (device state, host state)."""
        return DeviceBackend(self), HostBackend(self)

    def forces_known(self, state: State | None = None) -> None:
        """The state already holds forces (a restart): the relative opening criterion may
        use them from the first computation on.  ``state`` (block steps), where forces of
        some particles refit the last tree: its tree is built as a force of all would."""
        self._known = True
        if isinstance(state, DeviceState) and self.kept.fraction > 0:
            self.device.build(state, None, opening_criterion(self.g, True))

    def compute(self, state: State, parts: tuple[str | Part, ...], active=None) -> int:
        """Forces of ``parts`` (:mod:`.parts`, or their names) at the state's positions,
        into ``state.acc[name]`` (net force removed) and ``state.pot`` (from the parts
        that write it).  One tree serves all parts.  ``active``: an
        :class:`.forces.Active` or (time bins, kmin): forces only of bins >= kmin (the
        whole force, a box's short range; no net force removed); None: all.  Returns the
        number of particles whose force was computed."""
        active = None if active is None else Active(*active)
        parts = as_parts(parts)
        if active is not None and parts != (whole_part(self.g.periodic is not None),):
            raise ValueError(f"forces of the active particles: one part only, got "
                             f"{tuple(p.name for p in parts)}")
        backend = self.device if isinstance(state, DeviceState) else self.host
        done = drive(backend, state, parts, active, self.g.periodic is not None)
        for part in parts:
            self.tally.add(f"{part.name}_forces", 1)
        self._known = True
        return done

    @staticmethod
    def old_acc(s: State):
        """The acceleration the relative criterion scales with (a_old): the whole force's
        (with TreePM's time split short + long: GADGET's OldAcc, mesh included).  A
        float32 part: (its float4 buffer, its net force), which the walk's group floors
        widen as the kick does (no float64 copy)."""
        if s.float4 and len(s.parts) == 1:
            return s.acc[s.parts[0]], s.net[s.parts[0]]
        return s.total_acc()

    def criterion(self, s: State) -> Criterion:
        """The opening criterion of a force of ``s``'s particles
        (:func:`.criterion.opening_criterion`); a_old is formed only where the relative
        criterion takes it (with parts apart it is a kernel launch, which a hybrid run's
        hard substeps must not pay)."""
        criterion = opening_criterion(self.g, self._known)
        if criterion.relative:
            criterion = criterion.with_a_old(self.old_acc(s))
        return criterion

    @property
    def counts(self) -> dict[str, int]:
        """Interactions per part and forces computed, cumulative (:class:`Tally`; reading
        them waits for the device's sums)."""
        return self.tally.read()

    def count(self, part: Part, interactions: int) -> None:
        """Add interactions of ``part`` counted on the host."""
        self.tally.add_interactions(part.name, interactions)

    def sink_forces(self, pos, mass, sinks=None, criterion: Criterion | None = None,
                    parts: tuple[str, ...] | None = None) -> dict[str, Forces]:
        """Forces of ``sinks`` (default: the sources themselves) from the sources ``pos``,
        ``mass`` given as arrays, for ``parts`` (default the settings' own: ``("full",)``,
        or hard and soft with a changeover; split parts: the sources as sinks), the net
        force kept; nothing is kept in the engine but its buffers.  ``criterion``: the
        opening criterion (a relative one with a_old of the sinks), walked on a tree
        built with the settings' ``theta`` (its build angle).  See
        :func:`.arrays.sink_forces`."""
        return arrays.sink_forces(self, pos, mass, sinks, criterion, parts)

    def long_range_of(self, g: GravitySettings) -> LongRange:
        """The mesh of ``g``'s periodic box, kept between calls (its device buffers)."""
        if self._long is None or self._long.p != g.periodic:
            self._long = LongRange(g.periodic, self.rt, self.mesh_comm)
        return self._long
