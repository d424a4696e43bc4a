"""The force engine of many processes: local tree, LETs, net force over all processes.

``compute(state, parts)`` as :class:`hybridtree.gravity.engine.ForceEngine`.  With the state on
the device (:class:`hybridtree.integrate.state.DeviceState`), per call:

1. every process's particle box (one small read back) is gathered, and the global
   power-of-two cube around them, so that every process's cells are cells of the
   one-process tree restricted to its particles;
2. the local tree is built on the device from the state's positions;
3. the LET for every other process's box is selected and compacted on the device
   (:mod:`.device_let`); only it is downloaded and sent (one Alltoallv).  A call for the
   hard part alone sends the hard LET (cells beyond r_out of the box left out); a call
   with the full or soft part sends the full LET, which both parts then share;
4. a tree of the local particles plus what arrived is built, and walked only by the sink
   groups that hold local particles (received entries are sources only); one tree
   serves every part of the call (the hybrid tree's last substep walks it twice);
5. the net force is removed with sums over all processes.

A periodic box (TreePM): the LET of step 3 is the short range's (nearest-image
distances, nothing beyond r_cut: :func:`.device_let.select_on_device` with ``box``), and
the processes share one mesh in slabs (``mesh_comm``, :class:`hybridtree.gravity.
long_range.LongRange`, :mod:`hybridtree.gravity.pm_slabs`).

``overlap`` (and hard substeps where :data:`HARD_SECOND_TREE` is set): the other way
to treat the received entries.  The LET travels with a non-blocking Alltoallv while the
local tree is walked for the local particles; then a tree of the received entries alone
is built and walked by the local tree's groups, and the two forces are added.  One build
of N + m particles becomes one of m, at the price of a second walk of every local group;
measured slower (docs/history.md, session 8).
With a host state the forces come from the host backend, :func:`.host_let.host_let_forces`
(host LET selection), the path of devices without double precision.  Everything else —
settings, clock, kept buffers, counts, ``forces_known``, the dispatch of ``compute`` — is
the one-process engine's, which this one extends.  Units: G = 1, the caller's.
"""

from __future__ import annotations

import time
from collections import defaultdict

import numpy as np
import pyopencl as cl

from ..device import reduce
from ..device.clock import Clock
from ..device.kernels import launch
from ..device.runtime import Runtime
from ..device.transfer import Workspace, upload
from ..gravity.engine import ForceEngine, GravitySettings
from ..gravity.tree.device_build import DeviceArrays, build_device_tree, device_extent
from ..gravity.walk import default_group, walk_active, walk_into
from ..state import DeviceState, HostState, State
from ..particles import validate_particles
from .comm import Comm
from .device_let import let_rows, local_sink_groups, select_on_device
from .host_let import ParallelForces, global_cube, host_let_forces

__all__ = ["ParallelEngine"]

#: Whether hard substeps take the received hard LET as a second tree walked by the local
#: groups (as ``overlap`` does) instead of one merged tree.  The hard LET is small, so its
#: tree is cheap, but the merged tree was as fast at K = 2 and 10 % faster at K = 4
#: (H100, 2^22, docs/history.md, session 8), so it stays off.
HARD_SECOND_TREE = False

#: A periodic box's LET is cut at r_cut times 1 + this: the walk's float32 test of a
#: pair against r_cut must find every source it keeps among the entries that arrived.
PERIODIC_CUT_MARGIN = 1e-5


class ParallelEngine(ForceEngine):
    """Forces of a state on many processes (module docstring): the one-process engine
    with backends that exchange LETs through ``comm``.  ``counts``: this process's
    interactions and forces per part, cumulative; ``step``: this step's force seconds,
    interactions (``work``) and LET volumes (entries, bytes sent).  Every force builds
    its trees (``refits`` off: ``gravity.refit_fraction`` is for one process)."""

    refits = False

    def __init__(self, g: GravitySettings, rt: Runtime, comm: Comm, clock: Clock | None = None,
                 overlap: bool = False):
        super().__init__(g, rt, clock)
        self.comm, self.overlap = comm, overlap
        self.mesh_comm = comm if comm.size > 1 else None     # a periodic box's mesh in slabs
        self.step: dict[str, float] = defaultdict(float)
        self.remote_work = Workspace(rt)       # the received LET's tree (overlap)
        self.hard_second_tree = HARD_SECOND_TREE

    def compute(self, state: State, parts: tuple[str, ...], active=None) -> int:
        """As :meth:`hybridtree.gravity.engine.ForceEngine.compute` (collective: every process
        calls it, with or without active particles); returns this process's count of
        particles whose force was computed."""
        t0 = time.perf_counter()
        done = super().compute(state, parts, active)
        self.step["force"] += time.perf_counter() - t0
        return done

    def _count(self, part: str, interactions: int) -> None:
        super()._count(part, interactions)
        self.step["work"] += interactions

    def _sent(self, parts: tuple[str, ...], entries: int, nbytes: int) -> None:
        key = "hard" if parts == ("hard",) else "soft"
        self.step[f"let_{key}_entries"] += entries
        self.step[f"let_{key}_bytes"] += nbytes

    def _on_device(self, s: DeviceState, parts: tuple[str, ...], active) -> int:
        g, rt, comm, clock, work = self.g, self.rt, self.comm, self.clock, self.work
        n = s.n
        floor = self._floor(s)
        # the relative walk may open any cell nearer than l / theta_min: the LET is cut
        # with theta_min, the walk's own tree has theta_max
        let_theta = g.theta_min if floor else g.theta
        with clock.device("let_select"):
            box = np.stack(device_extent(rt, s.pos, n, work))
        with clock.host("let_comm"):
            boxes = comm.allgather_float(box)
        cube = global_cube(boxes)
        others = [r for r in range(comm.size)
                  if r != comm.rank and np.all(boxes[r][0] <= boxes[r][1])]
        local = None
        if n:
            with clock.device("build"):
                local = build_device_tree(rt, DeviceArrays(s.pos, s.mass, n), None,
                                          theta=let_theta, n_leaf=g.n_leaf,
                                          multipole=g.multipole, cube=cube, alloc=work)
        send, counts = np.empty((0, 4)), np.zeros(comm.size, np.int64)
        if local is not None and others:
            r_out = g.changeover.r_out if parts == ("hard",) else None
            box = None
            if g.periodic is not None:      # the short range: nothing beyond r_cut
                r_out, box = g.periodic.r_cut * (1.0 + PERIODIC_CUT_MARGIN), g.periodic.box
            rt.queue.finish()           # the host clock below times the selection alone
            with clock.host("let_select", wait=True):
                send, per_box = let_rows(select_on_device(local, s.pos, s.mass, boxes[others],
                                                          r_out, work, box))
            counts[others] = per_box
        self._sent(parts, len(send), send.nbytes)
        if self.overlap or (parts == ("hard",) and self.hard_second_tree):
            assert active is None and floor is None, "refused at set-up (make_stepper)"
            assert g.periodic is None, "refused at set-up (rules.process_refusal)"
            with clock.host("let_comm"):
                pending = comm.ialltoallv(send, counts)
            if n:
                self._walk(s, parts, local, np.empty((0, 4)), cube)
            with clock.host("let_comm", wait=True):
                recv = pending.wait()
            if n and len(recv):
                self._walk_remote(s, parts, local, recv, cube)
        else:
            with clock.host("let_comm"):
                recv = comm.alltoallv(send, counts)
            if n:
                done = self._walk(s, parts, local, recv, cube, active, floor)
                if active is not None:        # a partial force's net force is real
                    return done
            elif active is not None:
                return 0
        if g.periodic is not None:      # collective: every process adds to the one mesh
            for part in parts:
                if part != "short":
                    with clock.device("pm"):
                        self._long_range_of(g).add_device(n, s.pos, s.mass, s.acc[part], s.pot)
        self._remove_net_force(s, parts)
        return n

    def _merged(self, s: DeviceState, recv: np.ndarray, cube, theta: float):
        """A tree of the local particles followed by the received LET rows."""
        g, rt, clock, work = self.g, self.rt, self.clock, self.work
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

    def _walk_remote(self, s: DeviceState, parts: tuple[str, ...], local, recv: np.ndarray,
                     cube) -> None:
        """Add the forces of a tree of the received LET alone, walked by the local tree's
        groups (``overlap``: the local walk ran while the LET travelled)."""
        g, rt, clock, work = self.g, self.rt, self.clock, self.remote_work
        n, m = s.n, len(recv)
        n_group = g.n_group or default_group(rt.info.kind, n)
        with clock.device("transfer"):
            r_pos, r_mass = upload(rt, [recv[:, :3], recv[:, 3]], ["let_rpos", "let_rmass"])
        with clock.device("build"):
            remote = build_device_tree(rt, DeviceArrays(r_pos, r_mass, m), None, theta=g.theta,
                                       n_leaf=g.n_leaf, multipole=g.multipole, cube=cube,
                                       alloc=work)
        red = reduce.reducer(rt)
        acc, pot = work("x_acc", 24 * n), work("x_pot", 8 * n)
        for part in parts:
            with clock.device("walk", f"walk_{part}"):
                cnt, _, _ = walk_into(rt, remote, g.walk_eps, acc, pot, n_group, g.changeover,
                                      part, sinks=local, options=g.kernel_options)
                launch(rt, "state.cl", "add", 3 * n, np.int32(3 * n), s.acc[part], acc,
                       s.acc[part])
                if part != "hard":
                    launch(rt, "state.cl", "add", n, np.int32(n), s.pot, pot, s.pot)
            with clock.device("reduce"):
                self._count(part, sum(red.count_sum(n, cnt)))

    def _walk(self, s: DeviceState, parts: tuple[str, ...], local, recv: np.ndarray,
              cube, active=None, floor=None) -> int:
        """Walk the local tree, or the tree of local particles and ``recv`` (LET rows), for
        the local particles; forces into the state.  ``active`` = (bins, kmin): the whole
        force of the active particles only; ``floor``: the relative criterion's (alpha,
        a_old, theta_min), walked on a tree built with theta_max.  Returns the number of
        particles whose force was computed."""
        g, rt, clock = self.g, self.rt, self.clock
        n, m = s.n, len(recv)
        n_group = g.n_group or default_group(rt.info.kind, n, floor is not None)
        tree = local
        if m or floor is not None:
            tree = self._merged(s, recv, cube, g.theta_max if floor else g.theta)
        red = reduce.reducer(rt)
        if active is not None:
            with clock.device("walk", "walk_full"):
                cnt, done, _ = walk_active(rt, tree, g.walk_eps, s.acc["full"], s.pot, *active[:2],
                                           n_group, floor, g.kernel_options, n_sinks=n)
            with clock.device("reduce"):
                self._count("full", sum(red.count_sum(done, cnt)))
            return done
        groups = None
        if tree is not local:
            with clock.device("build"):
                groups = local_sink_groups(tree, n, n_group)
        for part in parts:
            pot = self.work("pot_unused", 8 * n) if part == "hard" else s.pot
            if part == "long":          # the mesh alone (added by the caller)
                cl.enqueue_fill_buffer(rt.queue, s.acc[part], np.float64(0), 0, 24 * n)
                continue
            with clock.device("walk", f"walk_{part}"):
                cnt, _, _ = walk_into(rt, tree, g.walk_eps, s.acc[part], pot, n_group, g.changeover,
                                      "full" if part == "short" else part, n_sinks=n,
                                      groups=groups, floor=floor, periodic=g.periodic,
                                      options=g.kernel_options)
            with clock.device("reduce"):
                self._count(part, sum(red.count_sum(n, cnt)))
        return n

    def _remove_net_force(self, s: DeviceState, parts: tuple[str, ...]) -> None:
        """Subtract every part's mass-weighted mean acceleration over all processes (one
        allreduce for all parts: each is a wait for the slowest process)."""
        if not self.g.remove_net_force:
            return
        red = reduce.reducer(self.rt)
        with self.clock.device("reduce"):
            tot = self.comm.allreduce(np.concatenate(
                [red.net_sums(s.n, s.mass, s.acc[part]) for part in parts])).reshape(-1, 4)
            for part, t in zip(parts, tot):
                if t[3] > 0:
                    red.subtract(s.n, s.acc[part], t[:3] / t[3])

    def let_forces(self, pos: np.ndarray, mass: np.ndarray, part: str = "full"
                   ) -> ParallelForces:
        """The host backend on arrays (validated float64, this process's particles):
        forces of ``part`` from every process's particles (collective), net force kept."""
        return host_let_forces(self.comm, self.rt, self.g, pos, mass, part, self.overlap)

    def _on_host(self, state: HostState, parts: tuple[str, ...], active) -> int:
        """Forces through the host LET path; with ``active``, those of every particle are
        computed and the active ones kept (devices without double precision: the
        fallback, not the fast path); the relative criterion is refused at set-up."""
        g = self.g
        assert g.periodic is None, "a periodic box needs the device state (make_stepper)"
        rows = None if active is None else np.flatnonzero(active[0] >= active[1])
        pos, mass = validate_particles(state.pos, state.mass)    # before any collective
        for part in parts:
            f = self.let_forces(pos, mass, part)
            for k in ("let_select", "let_comm", "build", "walk"):
                self.clock.add(k, f.timings.get(k, 0.0))
            self.clock.add(f"walk_{part}", f.timings.get("walk", 0.0))
            self._sent((part,), f.let_sent["cells"] + f.let_sent["particles"],
                       f.let_sent["bytes"])
            self._count(part, f.interactions)
            with self.clock.host("reduce"):
                acc = f.acc
                if rows is not None:
                    state.acc[part][rows] = acc[rows]
                    continue
                if g.remove_net_force:
                    local = reduce.host_block_sum(np.column_stack(
                        [state.mass[:, None] * acc, state.mass]))
                    tot = self.comm.allreduce(local)
                    if tot[3] > 0:
                        acc -= tot[:3] / tot[3]
                state.acc[part][:] = acc
                if part != "hard":
                    state.pot[:] = f.pot
        return state.n if rows is None else len(rows)
