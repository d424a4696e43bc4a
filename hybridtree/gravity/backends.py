"""The one-process backends of the force pipeline (:mod:`.pipeline`): a state on the device
(:class:`DeviceBackend`: the tree built or refitted in kept buffers, walks into the state's
buffers, counts and net force summed on the device, nothing read back) and a state on the
host (:class:`HostBackend`: numpy arrays uploaded, built, walked, downloaded; the direct
method too).  Units: G = 1, the state's."""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from ..device import reduce
from ..state import DeviceState, HostState
from .criterion import Criterion
from .direct import direct_forces
from .parts import Part
from .pipeline import Backend, Job
from .tree import build_tree
from .tree.device_build import DeviceArrays, DeviceTree, build_device_tree
from .walk import default_group, tree_forces, walk_active, walk_into

__all__ = ["DeviceBackend", "HostBackend"]


class DeviceBackend(Backend):
    """Stages of a :class:`hybridtree.state.DeviceState` on one process."""

    def sources(self, s: DeviceState, parts: tuple[Part, ...], active) -> Job:
        return Job(s, parts, active, self.engine.criterion(s), s.n)

    def tree(self, job: Job) -> None:
        job.tree = self.build(job.state, job.active, job.criterion)

    def build(self, s: DeviceState, active, criterion: Criterion) -> DeviceTree:
        """The kept tree refitted (forces of some particles, if it may), else a new one
        built with the criterion's angle."""
        e = self.engine
        kept, g, kind = e.kept, e.g, e.rt.info.kind
        arrays = DeviceArrays(s.pos, s.mass, s.n, e.softenings.device(s, g, e.work),
                              s.mass_step)
        theta = criterion.build_theta
        if active is not None and kept.reusable(s, s.n, theta, active.count):
            e.tally.add("refits", 1)
            with e.clock.device("build", "refit"):
                return kept.refit(arrays)
        with e.clock.device("build"):        # the walk's first split counted with the cells
            groups = g.n_group or default_group(kind, s.n, criterion.relative, tuning=e.tuning)
            tree = build_device_tree(e.rt, arrays, None, theta=theta, n_leaf=g.n_leaf,
                                     multipole=g.multipole, alloc=e.work, timed=False,
                                     group_sizes=(groups,),
                                     keep_keys=not e.tuning.lists_per_walk(s.n))
        kept.built(s, tree)
        return tree

    def walk_active(self, job: Job) -> int:
        e, s, part = self.engine, job.state, job.parts[0]
        g, active = e.g, job.active
        assert not s.float4, "forces of some particles into float64 parts only"
        with e.clock.device("walk", part.walk_key):
            counts, m, _ = walk_active(e.rt, job.tree, g.walk_eps, s.acc[part.name], s.pot,
                                       *active[:2], g.n_group or None, job.criterion,
                                       g.kernel_options, periodic=g.periodic,
                                       tuning=e.tuning)
        e.kept.forced(m)
        with e.clock.device("reduce"):
            e.tally.add_device(part.name, m, counts)
        return m

    def walk(self, job: Job, part: Part) -> None:
        e, s = self.engine, job.state
        g, rt = e.g, e.rt
        pot = job.pot[part] = s.pot if part.potential else None    # no potential written
        if not part.walked:          # the mesh alone; its potential adds to the short's
            assert not s.float4, "a mesh part is float64 (DeviceState pot_part)"
            cl.enqueue_fill_buffer(rt.queue, s.acc[part.name], np.float64(0), 0, 24 * s.n)
            job.extra[part] = None
            return
        with e.clock.device("walk", part.walk_key):
            job.extra[part], _, _ = walk_into(rt, job.tree, g.walk_eps, s.acc[part.name], pot,
                                              g.n_group or None, g.changeover, part,
                                              criterion=job.criterion, periodic=g.periodic,
                                              options=g.kernel_options, tuning=e.tuning,
                                              float4=s.float4)

    def long_range(self, job: Job, part: Part) -> None:
        e, s = self.engine, job.state
        mesh = e.long_range_of(e.g)
        mass = s.mass if s.mass_step else s.mass_value      # one for all: the float32 mesh
        assert s.mass_step == 1 or e.g.periodic.single, "the float64 mesh takes a mass each"
        with e.clock.device("pm"):
            if s.float4:        # the float32 mesh adds to the walk's float4 (pm_compact)
                mesh.add_device4(s.n, s.pos, mass, s.acc[part.name])
            else:
                mesh.add_device(s.n, s.pos, mass, s.acc[part.name], job.pot[part])

    def reduce_part(self, job: Job, part: Part) -> None:
        """The part's interaction counts and net force, summed on the device (the walk's
        count buffer is the next walk's: summed before it)."""
        e, s = self.engine, job.state
        with e.clock.device("reduce"):
            counts = job.extra[part]
            if counts is not None:
                e.tally.add_device(part.name, s.n, counts)
            if not e.g.remove_net_force or s.n == 0:
                return
            if s.float4:        # the net force kept apart, subtracted where a is used
                s.remove_net(part.name)
            else:
                reduce.reducer(e.rt).remove_net(s.n, s.mass, s.acc[part.name],
                                                mass_step=s.mass_step)


class HostBackend(Backend):
    """Stages of a :class:`hybridtree.state.HostState` on one process: each
    part's forces as arrays (``job.extra``: rows, sinks and their softenings), stored
    into the state by ``reduce_part`` (net force removed)."""

    def sources(self, s: HostState, parts: tuple[Part, ...], active) -> Job | int:
        e = self.engine
        rows = None if active is None else np.flatnonzero(active[0] >= active[1])
        if rows is not None and len(rows) == 0:
            return 0
        if s.n == 0 and e.g.method != "direct":
            return 0
        eps = e.g.particle_eps(s.types)            # None: one softening, g.eps
        criterion = e.criterion(s) if e.g.method != "direct" else None
        if criterion is not None and rows is not None:
            criterion = criterion.rows(rows)
        job = Job(s, parts, active, criterion, s.n if rows is None else len(rows))
        # the active sinks' own softenings (forces of some particles: sinks apart)
        job.extra.update(rows=rows, eps=eps, sinks=None if rows is None else s.pos[rows],
                         sink_eps=None if eps is None or rows is None else eps[rows])
        return job

    def tree(self, job: Job) -> None:
        e, s, eps = self.engine, job.state, job.extra["eps"]
        g, rt, clock = e.g, e.rt, e.clock
        if g.method == "direct":
            return
        theta = job.criterion.build_theta
        e.kept.forget()                    # its buffers may be reused here
        with clock.host("build", wait=True):
            if g.build == "device":
                job.tree = build_device_tree(rt, s.pos, s.mass, theta=theta, n_leaf=g.n_leaf,
                                             multipole=g.multipole, alloc=e.work, eps=eps)
            else:
                assert eps is None, "config.rules refuses a softening per type on the host build"
                job.tree = build_tree(s.pos, s.mass, theta=theta, n_leaf=g.n_leaf,
                                      multipole=g.multipole)
        upload = float(job.tree.timings.get("upload", 0.0))
        clock.add("build", -upload)
        clock.add("transfer", upload)

    def walk_active(self, job: Job) -> int:
        part = job.parts[0]
        self.walk(job, part)
        self.reduce_part(job, part)
        return job.n

    def walk(self, job: Job, part: Part) -> None:
        e, s, x = self.engine, job.state, job.extra
        g, rt, clock = e.g, e.rt, e.clock
        rows, sinks = x["rows"], x["sinks"]
        if g.method == "direct":
            assert not part.split, "the direct method has no force split"
            eps = x["eps"]
            sink_pos = s.pos if rows is None else sinks
            with clock.host("walk", part.walk_key, wait=True):
                acc, pot, _ = direct_forces(rt, s.pos, s.mass, sink_pos,
                                            g.eps if eps is None else eps,
                                            self_skip=rows is None, split=g.precise,
                                            options=g.kernel_options, sink_eps=x["sink_eps"],
                                            tuning=e.tuning)
            e.count(part, len(sink_pos) * max(s.n - 1, 0))
        elif not part.walked:         # the mesh alone; its potential adds to the short's
            acc, pot = np.zeros((s.n, 3)), s.pot.copy()
        else:
            with clock.host("walk", part.walk_key, wait=True):
                acc, pot, n_pp, n_pc, tw = tree_forces(rt, job.tree, g.walk_eps, g.n_group or None,
                                                       sinks=sinks, split=g.changeover,
                                                       part=part, criterion=job.criterion,
                                                       periodic=g.periodic,
                                                       options=g.kernel_options,
                                                       sink_eps=x["sink_eps"],
                                                       tuning=e.tuning)
            for name in ("walk", part.walk_key):
                clock.add(name, -tw["download"])
            clock.add("transfer", tw["download"])
            # a sink that is not the tree's own meets itself in its leaf: one interaction
            e.count(part, int(n_pp.sum()) + int(n_pc.sum()) - (0 if rows is None
                                                                else len(rows)))
        x[part] = acc
        job.pot[part] = pot

    def long_range(self, job: Job, part: Part) -> None:
        e, s = self.engine, job.state
        with e.clock.host("pm"):
            e.long_range_of(e.g).add(s.pos, s.mass, job.extra[part], job.pot[part],
                                     job.extra["sinks"])

    def reduce_part(self, job: Job, part: Part) -> None:
        """The part's forces into the state: all rows (net force removed), or the active
        rows only (no net force removed; their potential is not kept, because a walk for
        foreign sinks counts their own mass at zero separation)."""
        e, s, rows = self.engine, job.state, job.extra["rows"]
        acc = job.extra[part]
        with e.clock.host("reduce"):
            if rows is not None:
                s.acc[part.name][rows] = acc
                return
            if e.g.remove_net_force:
                acc -= reduce.host_net_acceleration(s.mass, acc)
            s.acc[part.name][:] = acc
            if part.potential:
                s.pot[:] = job.pot[part]
