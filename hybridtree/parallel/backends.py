"""The many-process backends of the force pipeline (:mod:`hybridtree.gravity.pipeline`):
what many processes change in its stages (the steps are described in
:mod:`.engine`).  :class:`ParallelDeviceBackend` builds the local tree in the global cube
(``tree``), selects, sends and receives the LET and builds the merged tree
(``exchange``), walks the local sinks (``walk``; counts summed per part), walks what
arrived late (``received``: ``overlap``) and removes the net force over all processes
(``reduce``: one allreduce); :class:`ParallelHostBackend` takes each part's forces from
a force of host arrays (:meth:`.engine.ParallelEngine.let_forces`: the stages of
:class:`.host_let.ParallelArrayBackend`).  Units: G = 1, the state's."""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from ..device import reduce
from ..device.kernels import launch
from ..device.transfer import upload
from ..gravity.backends import DeviceBackend
from ..gravity.criterion import opening_criterion
from ..gravity.parts import Part
from ..gravity.pipeline import Backend, Job
from ..gravity.tree.device_build import DeviceArrays, build_device_tree, device_extent
from ..gravity.walk import default_group, walk_active, walk_into
from ..state import DeviceState, HostState
from ..particles import validate_particles
from .device_let import let_rows, local_sink_groups, select_on_device
from .host_let import global_cube

__all__ = ["ParallelDeviceBackend", "ParallelHostBackend"]

#: A periodic box's LET is cut at r_cut times 1 + this: the walk's float32 test of a
#: pair against r_cut must find every source it keeps among the entries that arrived.
PERIODIC_CUT_MARGIN = 1e-5


class ParallelDeviceBackend(DeviceBackend):
    """Stages of a device state on many processes (``engine``: a
    :class:`.engine.ParallelEngine`); ``job.extra`` keeps the cube, the local tree, the
    sink groups and the pending exchange (``overlap``)."""

    def tree(self, job: Job) -> None:
        """Every process's particle box (one small read back), the global cube around
        them, and the local tree built in it with the angle the LET is cut with (the
        relative walk may open any cell nearer than l / theta_min; its own tree has
        theta_max)."""
        e, s = self.engine, job.state
        g, rt, comm, clock, work, n = e.g, e.rt, e.comm, e.clock, e.work, s.n
        with clock.device("let_select"):
            box = np.stack(device_extent(rt, s.pos, n, work))
        with clock.host("let_comm"):
            boxes = comm.allgather_float(box)
        cube = global_cube(boxes)
        job.extra.update(boxes=boxes, cube=cube, others=[
            r for r in range(comm.size) if r != comm.rank and np.all(boxes[r][0] <= boxes[r][1])])
        if n:
            with clock.device("build"):
                job.tree = build_device_tree(rt, DeviceArrays(s.pos, s.mass, n), None,
                                             theta=job.criterion.let_theta, n_leaf=g.n_leaf,
                                             multipole=g.multipole, cube=cube, alloc=work)
        job.extra["local"] = job.tree

    def exchange(self, job: Job) -> None:
        """The LET of every other process's box selected on the device, sent and received
        (the hard part alone: cells beyond r_out left out; a periodic box: nothing beyond
        r_cut); then the tree of the local particles and what arrived, with the local
        sink groups.  ``overlap`` (and hard parts with a second tree): sent without
        waiting; the local tree is walked meanwhile (:meth:`received`)."""
        e, s, x = self.engine, job.state, job.extra
        g, rt, comm, clock, work, n = e.g, e.rt, e.comm, e.clock, e.work, s.n
        local, others, boxes = x["local"], x["others"], x["boxes"]
        near = all(p.near_only for p in job.parts)
        send, counts = np.empty((0, 4)), np.zeros(comm.size, np.int64)
        if local is not None and others:
            r_out = g.changeover.r_out if near else None
            box = None
            if g.periodic is not None:      # the short range: nothing beyond r_cut
                r_out, box = g.periodic.r_cut * (1.0 + PERIODIC_CUT_MARGIN), g.periodic.box
            rt.queue.finish()           # the host clock below times the selection alone
            with clock.host("let_select", wait=True):
                send, per_box = let_rows(select_on_device(local, s.pos, s.mass, boxes[others],
                                                          r_out, work, box))
            counts[others] = per_box
        e.sent(job.parts, len(send), send.nbytes)
        x["n_group"] = g.n_group or default_group(rt.info.kind, n, job.criterion.relative,
                                                  e.tuning)
        if e.overlap or (near and e.hard_second_tree):
            assert job.active is None and not job.criterion.relative, \
                "refused at set-up (make_stepper)"
            assert g.periodic is None, "refused at set-up (rules.process_refusal)"
            with clock.host("let_comm"):
                x["pending"] = comm.ialltoallv(send, counts)
            return
        with clock.host("let_comm"):
            recv = comm.alltoallv(send, counts)
        if n and (len(recv) or job.criterion.relative):
            job.tree = self._merged(s, recv, x["cube"], job.criterion.build_theta)
            if job.active is None:
                with clock.device("build"):
                    x["groups"] = local_sink_groups(job.tree, n, x["n_group"],
                                                    e.tuning.pack_groups)

    def _merged(self, s: DeviceState, recv: np.ndarray, cube, theta: float):
        """A tree of the local particles followed by the received LET rows."""
        e = self.engine
        g, rt, clock, work = e.g, e.rt, e.clock, e.work
        n, m = s.n, len(recv)
        pos, mass = work("let_pos", 24 * (n + m)), work("let_mass", 8 * (n + m))
        with clock.device("transfer"):
            cl.enqueue_copy(rt.queue, pos, s.pos, byte_count=24 * n)
            cl.enqueue_copy(rt.queue, mass, s.mass, byte_count=8 * n)
            if m:
                r_pos, r_mass = upload(rt, [recv[:, :3], recv[:, 3]], ["let_rpos", "let_rmass"])
                cl.enqueue_copy(rt.queue, pos, r_pos, byte_count=24 * m, dst_offset=24 * n)
                cl.enqueue_copy(rt.queue, mass, r_mass, byte_count=8 * m, dst_offset=8 * n)
        with clock.device("build"):
            return build_device_tree(rt, DeviceArrays(pos, mass, n + m), None, theta=theta,
                                     n_leaf=g.n_leaf, multipole=g.multipole, cube=cube,
                                     alloc=work)

    def walk_active(self, job: Job) -> int:
        """The whole force of the active local particles (none here: 0)."""
        e, s, part = self.engine, job.state, job.parts[0]
        if s.n == 0:
            return 0
        with e.clock.device("walk", part.walk_key):
            cnt, done, _ = walk_active(e.rt, job.tree, e.g.walk_eps, s.acc[part.name], s.pot,
                                       *job.active[:2], job.extra["n_group"], job.criterion,
                                       e.g.kernel_options, n_sinks=s.n, tuning=e.tuning)
        with e.clock.device("reduce"):
            e.count(part, sum(reduce.reducer(e.rt).count_sum(done, cnt)))
        return done

    def walk(self, job: Job, part: Part) -> None:
        """Walk the tree for the local sink groups; counts summed on the spot."""
        e, s = self.engine, job.state
        g, rt, n = e.g, e.rt, s.n
        job.pot[part] = s.pot
        if n == 0:
            return
        pot = job.pot[part] = s.pot if part.potential else None    # no potential written
        if not part.walked:          # the mesh alone (added by long_range)
            cl.enqueue_fill_buffer(rt.queue, s.acc[part.name], np.float64(0), 0, 24 * n)
            return
        with e.clock.device("walk", part.walk_key):
            cnt, _, _ = walk_into(rt, job.tree, g.walk_eps, s.acc[part.name], pot,
                                  job.extra["n_group"], g.changeover, part, n_sinks=n,
                                  groups=job.extra.get("groups"), criterion=job.criterion,
                                  periodic=g.periodic, options=g.kernel_options,
                                  tuning=e.tuning)
        with e.clock.device("reduce"):
            e.count(part, sum(reduce.reducer(rt).count_sum(n, cnt)))

    def reduce_part(self, job: Job, part: Part) -> None:
        """Counted in the walk; the net force waits for every part (:meth:`reduce`)."""

    def received(self, job: Job) -> None:
        """``overlap``: the LET that travelled while the local tree was walked, as a tree
        of its own walked by the local groups, its forces added."""
        pending = job.extra.get("pending")
        if pending is None:
            return
        with self.engine.clock.host("let_comm", wait=True):
            recv = pending.wait()
        if job.state.n and len(recv):
            self._walk_remote(job, recv)

    def _walk_remote(self, job: Job, recv: np.ndarray) -> None:
        e, s, local = self.engine, job.state, job.extra["local"]
        g, rt, clock, work = e.g, e.rt, e.clock, e.remote_work
        n, m = s.n, len(recv)
        n_group = g.n_group or default_group(rt.info.kind, n, tuning=e.tuning)
        with clock.device("transfer"):
            r_pos, r_mass = upload(rt, [recv[:, :3], recv[:, 3]], ["let_rpos", "let_rmass"])
        with clock.device("build"):
            remote = build_device_tree(rt, DeviceArrays(r_pos, r_mass, m), None, theta=g.theta,
                                       n_leaf=g.n_leaf, multipole=g.multipole,
                                       cube=job.extra["cube"], alloc=work)
        red = reduce.reducer(rt)
        acc, pot = work("x_acc", 24 * n), work("x_pot", 8 * n)
        for part in job.parts:
            with clock.device("walk", part.walk_key):
                cnt, _, _ = walk_into(rt, remote, g.walk_eps, acc, pot, n_group, g.changeover,
                                      part, sinks=local, options=g.kernel_options,
                                      tuning=e.tuning)
                launch(rt, "state.cl", "add", 3 * n, np.int64(3 * n), s.acc[part.name], acc,
                       s.acc[part.name])
                if part.potential:
                    launch(rt, "state.cl", "add", n, np.int64(n), s.pot, pot, s.pot)
            with clock.device("reduce"):
                e.count(part, sum(red.count_sum(n, cnt)))

    def reduce(self, job: Job) -> None:
        """Subtract every part's mass-weighted mean acceleration over all processes (one
        allreduce for all parts: each is a wait for the slowest process)."""
        e, s = self.engine, job.state
        if not e.g.remove_net_force:
            return
        red = reduce.reducer(e.rt)
        with e.clock.device("reduce"):
            tot = e.comm.allreduce(np.concatenate(
                [red.net_sums(s.n, s.mass, s.acc[p.name]) for p in job.parts])).reshape(-1, 4)
            for part, t in zip(job.parts, tot):
                if t[3] > 0:
                    red.subtract(s.n, s.acc[part.name], t[:3] / t[3])


class ParallelHostBackend(Backend):
    """Stages of a host state on many processes: each part's forces from the host LET
    path (tree, exchange and walk in one: :meth:`walk`); with ``active``, those of every
    particle are computed and the active ones kept (devices without double precision:
    the fallback, not the fast path); the relative criterion is refused at set-up."""

    def sources(self, s: HostState, parts: tuple[Part, ...], active) -> Job:
        e = self.engine
        assert e.g.periodic is None, "a periodic box needs the device state (make_stepper)"
        rows = None if active is None else np.flatnonzero(active[0] >= active[1])
        job = Job(s, parts, active, opening_criterion(e.g, False),
                  s.n if rows is None else len(rows))
        pos, mass = validate_particles(s.pos, s.mass)    # before any collective
        job.extra.update(rows=rows, pos=pos, mass=mass)
        return job

    def tree(self, job: Job) -> None:
        """Built with the exchange, per part (:meth:`walk`)."""

    def walk_active(self, job: Job) -> int:
        for part in job.parts:
            self.walk(job, part)
            self.reduce_part(job, part)
        return job.n

    def walk(self, job: Job, part: Part) -> None:
        e, x = self.engine, job.extra
        f = x[part] = e.let_forces(x["pos"], x["mass"], part.name)
        for k in ("let_select", "let_comm", "build", "walk"):
            e.clock.add(k, f.timings.get(k, 0.0))
        e.clock.add(part.walk_key, f.timings.get("walk", 0.0))
        e.sent((part,), f.let_sent["cells"] + f.let_sent["particles"], f.let_sent["bytes"])
        e.count(part, f.interactions)

    def reduce_part(self, job: Job, part: Part) -> None:
        """The part's forces into the state (the net force over all processes removed;
        active rows only: kept as they are)."""
        e, s, rows, f = self.engine, job.state, job.extra["rows"], job.extra[part]
        with e.clock.host("reduce"):
            acc = f.acc
            if rows is not None:
                s.acc[part.name][rows] = acc[rows]
                return
            if e.g.remove_net_force:
                local = reduce.host_block_sum(np.column_stack([s.mass[:, None] * acc, s.mass]))
                tot = e.comm.allreduce(local)
                if tot[3] > 0:
                    acc -= tot[:3] / tot[3]
            s.acc[part.name][:] = acc
            if part.potential:
                s.pot[:] = f.pot
