"""The force engine: a run state in, accelerations and potentials in its fields out.

One engine per run (or per runtime for :func:`hybridtree.gravity.accelerations`).  For a
:class:`hybridtree.integrate.state.DeviceState` it builds the tree on the device from the device
positions, walks it for each force part into the state's buffers, removes the net force and sums
the interaction counts on the device; nothing is allocated (a ``Workspace`` keeps the tree's
buffers between calls), nothing is validated (the state was checked when it was made) and the
host reads back only a few numbers; a force of some particles (block steps) may refit the last
tree instead (``refit_fraction``, :mod:`hybridtree.gravity.tree.refit`).  For a
:class:`hybridtree.integrate.state.HostState` it does the same from numpy arrays (upload, build,
walk, download).  Units: G = 1, the state's units.

One interface, backends chosen once: ``compute(state, parts, active)`` picks the backend by where
the state lives (``_on_device``, ``_on_host``); how many processes is the engine's class (this
one; many: :class:`hybridtree.parallel.engine.ParallelEngine`, which replaces the two backends and
keeps the rest).  Sinks given as arrays (the public :func:`hybridtree.gravity.accelerations`):
:meth:`ForceEngine.sink_forces`, the same device backend on buffers of its own (values checked on
the device, net force kept).

Net force: a tree force violates Newton's third law by the size of its error, so an isolated
system picks up a spurious net force (measured ~7e-5 at N = 1e4, θ = 0.5, monopole) and its centre
of mass drifts.  ``remove_net_force`` subtracts the mass-weighted mean acceleration of each part
(summed in the fixed order of :mod:`hybridtree.device.reduce`, so both backends subtract the same
bits)."""

from __future__ import annotations

import time

import numpy as np
import pyopencl as cl

from ..device import reduce
from ..device.clock import Clock
from ..device.runtime import Runtime
from ..device.transfer import Workspace, download, upload
from ..state import DeviceState, HostState, State
from ..particles import shaped_particles, validate_particles
from .counts import Tally
from .direct import direct_forces
from .eps_types import TypeSoftenings
from .forces import Active, Forces
from .knobs import build_where
from .long_range import LongRange
from .periodic import wrap
from .settings import GravitySettings, opening_floor
from .tree import build_tree
from .tree.device_build import DeviceArrays, DeviceTree, build_device_tree
from .tree.refit import KeptTree
from .walk import default_group, tree_forces, walk_active, walk_into

__all__ = ["ForceEngine", "Forces", "GravitySettings", "opening_floor"]


class ForceEngine:
    """Forces of a state (see the module docstring), or of sinks given as arrays
    (:meth:`sink_forces`).  ``counts``: interactions per part and the number of forces
    computed, cumulative.  ``work``: the buffers kept between calls (default: the
    engine's own).  Subclasses for other ways of computing (many processes:
    :class:`hybridtree.parallel.engine.ParallelEngine`) replace ``_on_device`` and
    ``_on_host``, the two backends, and keep the rest (``refits``: whether they refit)."""

    refits, mesh_comm = True, None      # mesh_comm: the processes sharing a periodic mesh

    def __init__(self, g: GravitySettings, rt: Runtime, clock: Clock | None = None,
                 work: Workspace | None = None):
        # a run settles "auto" knowing what it can take (run.assemble.make_stepper); an
        # engine made any other way has not been told, so "auto" walks geometric there
        self.g = g.settled(rt.info.kind, relative_ok=False)
        self.rt, self.clock, self.work = rt, clock or Clock(rt), work or Workspace(rt)
        self.tally, self.softenings = Tally(rt), TypeSoftenings(rt)
        self._known = False       # the state holds forces of its current particles
        # periodic boxes build every tree (a wrapped particle leaves its cell by a box length)
        self.kept = KeptTree(g.refit_fraction if self.refits and g.periodic is None else 0.0)
        self._long: LongRange | None = None

    def forces_known(self, state: State | None = None) -> None:
        """The state already holds forces (a restart): the relative opening criterion may
        use them from the first computation on.  ``state`` (block steps), where forces of
        some particles refit the last tree: its tree is built as a force of all would."""
        self._known = True
        if isinstance(state, DeviceState) and self.kept.fraction > 0:
            self._tree(state, None)

    def _tree(self, s: DeviceState, active) -> DeviceTree:
        """The kept tree refitted (forces of some particles, if it may), else a new one."""
        kept, g, kind = self.kept, self.g, self.rt.info.kind
        arrays = DeviceArrays(s.pos, s.mass, s.n, self.softenings.device(s, g, self.work))
        relative = opening_floor(g, self._known, None) is not None
        theta = g.theta_max if relative else g.theta
        if active is not None and kept.reusable(s, s.n, theta, active.count):
            self.tally.add("refits", 1)
            with self.clock.device("build", "refit"):
                return kept.refit(arrays)
        with self.clock.device("build"):        # the walk's first split counted with the cells
            tree = build_device_tree(self.rt, arrays, None, theta=theta, n_leaf=g.n_leaf,
                                     multipole=g.multipole, alloc=self.work, timed=False,
                                     group_sizes=(g.n_group or default_group(kind, s.n, relative),))
        kept.built(s, tree)
        return tree

    def compute(self, state: State, parts: tuple[str, ...], active=None) -> int:
        """Forces of ``parts`` at the state's positions, into ``state.acc[part]`` (net force
        removed) and ``state.pot`` (from the full or soft part).  One tree serves all parts.
        ``active``: an :class:`.forces.Active` or (time bins, kmin): forces only of bins >=
        kmin (the whole force, a box's short range; no net force removed); None: all.
        Returns the number of particles whose force was computed."""
        active = None if active is None else Active(*active)
        if active is not None and parts != ("short" if self.g.periodic else "full",):
            raise ValueError(f"forces of the active particles: one part only, got {parts}")
        if isinstance(state, DeviceState):
            done = self._on_device(state, parts, active)
        else:
            done = self._on_host(state, parts, active)
        for part in parts:
            self.tally.add(f"{part}_forces", 1)
        self._known = True
        return done

    @staticmethod
    def old_acc(s: State):
        """The acceleration the relative criterion scales with (a_old): the whole force's
        (with TreePM's time split short + long: GADGET's OldAcc, mesh included)."""
        return s.total_acc()

    def _floor(self, s: State):
        """:func:`opening_floor` of a force of ``s``'s particles; a_old is formed only
        where the relative criterion takes it (with parts apart it is a kernel launch,
        which a hybrid run's hard substeps must not pay)."""
        if opening_floor(self.g, self._known, None) is None:
            return None
        return opening_floor(self.g, self._known, self.old_acc(s))

    @property
    def counts(self) -> dict[str, int]:
        """Interactions per part and forces computed, cumulative (:class:`Tally`; reading
        them waits for the device's sums)."""
        return self.tally.read()

    def _count(self, part: str, interactions: int) -> None:
        self.tally.add_interactions(part, interactions)

    def _on_device(self, s: DeviceState, parts: tuple[str, ...], active) -> int:
        g, rt, clock = self.g, self.rt, self.clock
        red = reduce.reducer(rt)
        floor = self._floor(s)
        tree = self._tree(s, active)
        if active is not None:      # parts: the whole force, or a box's short range
            with clock.device("walk", f"walk_{parts[0]}"):
                counts, m, _ = walk_active(rt, tree, g.walk_eps, s.acc[parts[0]], s.pot,
                                           *active[:2], g.n_group or None, floor,
                                           g.kernel_options, periodic=g.periodic)
            self.kept.forced(m)
            with clock.device("reduce"):
                self.tally.add_device(parts[0], m, counts)
            return m
        for part in parts:
            pot = self.work("pot_unused", 8 * s.n) if part == "hard" else s.pot
            if part == "long":          # the mesh alone; its potential adds to the short's
                cl.enqueue_fill_buffer(rt.queue, s.acc[part], np.float64(0), 0, 24 * s.n)
                counts = None
            else:
                with clock.device("walk", f"walk_{part}"):
                    counts, _, _ = walk_into(rt, tree, g.walk_eps, s.acc[part], pot,
                                             g.n_group or None, g.changeover,
                                             "full" if part == "short" else part, floor=floor,
                                             periodic=g.periodic, options=g.kernel_options)
            if g.periodic is not None and part != "short":
                with clock.device("pm"):
                    self._long_range_of(g).add_device(s.n, s.pos, s.mass, s.acc[part], pot)
            with clock.device("reduce"):
                if counts is not None:
                    self.tally.add_device(part, s.n, counts)
                if g.remove_net_force:
                    red.remove_net(s.n, s.mass, s.acc[part])
        return s.n

    def _on_host(self, s: HostState, parts: tuple[str, ...], active) -> int:
        g, rt, clock = self.g, self.rt, self.clock
        rows = None if active is None else np.flatnonzero(active[0] >= active[1])
        if rows is not None and len(rows) == 0:
            return 0
        eps = g.particle_eps(s.types)            # None: one softening, g.eps
        # the active sinks' own softenings (forces of some particles: sinks apart)
        sink_eps = None if eps is None or rows is None else eps[rows]
        if g.method == "direct":
            assert parts == ("full",), "the direct method has no force split"
            sinks = s.pos if rows is None else s.pos[rows]
            with clock.host("walk", "walk_full", wait=True):
                acc, pot, _ = direct_forces(rt, s.pos, s.mass, sinks,
                                            g.eps if eps is None else eps,
                                            self_skip=rows is None, split=g.precise,
                                            options=g.kernel_options, sink_eps=sink_eps)
            self._count("full", len(sinks) * max(s.n - 1, 0))
            self._store(s, "full", acc, pot, rows)
            return len(sinks)
        if s.n == 0:
            return 0
        floor = self._floor(s)
        theta = g.theta_max if floor else g.theta
        self.kept.forget()                    # its buffers may be reused here
        with clock.host("build", wait=True):
            if g.build == "device":
                tree = build_device_tree(rt, s.pos, s.mass, theta=theta, n_leaf=g.n_leaf,
                                         multipole=g.multipole, alloc=self.work, eps=eps)
            else:
                assert eps is None, "config.rules refuses a softening per type on the host build"
                tree = build_tree(s.pos, s.mass, theta=theta, n_leaf=g.n_leaf,
                                  multipole=g.multipole)
        upload = float(tree.timings.get("upload", 0.0))
        clock.add("build", -upload)
        clock.add("transfer", upload)
        sinks = None if rows is None else s.pos[rows]
        if floor is not None and rows is not None:
            floor = (floor[0], floor[1][rows], floor[2])
        for part in parts:
            if part == "long":          # the mesh alone; its potential adds to the short's
                acc, pot = np.zeros((s.n, 3)), s.pot.copy()
                with clock.host("pm"):
                    self._long_range_of(g).add(s.pos, s.mass, acc, pot)
                self._store(s, part, acc, pot)
                continue
            with clock.host("walk", f"walk_{part}", wait=True):
                acc, pot, n_pp, n_pc, tw = tree_forces(rt, tree, g.walk_eps, g.n_group or None,
                                                       sinks=sinks, split=g.changeover,
                                                       part="full" if part == "short" else part,
                                                       floor=floor, periodic=g.periodic,
                                                       options=g.kernel_options,
                                                       sink_eps=sink_eps)
            if g.periodic is not None and part != "short":
                with clock.host("pm"):
                    self._long_range_of(g).add(s.pos, s.mass, acc, pot, sinks)
            for name in ("walk", f"walk_{part}"):
                clock.add(name, -tw["download"])
            clock.add("transfer", tw["download"])
            # a sink that is not the tree's own meets itself in its leaf: one interaction
            self._count(part, int(n_pp.sum()) + int(n_pc.sum()) - (0 if rows is None
                                                                     else len(rows)))
            self._store(s, part, acc, pot, rows)
        return s.n if rows is None else len(rows)

    def _store(self, s: HostState, part: str, acc: np.ndarray, pot: np.ndarray,
               rows: np.ndarray | None = None) -> None:
        """Forces into the state: all rows (net force removed), or ``rows`` only (the
        active particles: no net force removed; their potential is not kept, because a
        walk for foreign sinks counts their own mass at zero separation)."""
        with self.clock.host("reduce"):
            if rows is not None:
                s.acc[part][rows] = acc
                return
            if self.g.remove_net_force:
                acc -= reduce.host_net_acceleration(s.mass, acc)
            s.acc[part][:] = acc
            if part != "hard":
                s.pot[:] = pot

    def sink_forces(self, pos, mass, sinks=None, floor=None,
                    parts: tuple[str, ...] | None = None) -> dict[str, Forces]:
        """Forces of ``sinks`` (default: the sources themselves) from the sources ``pos``,
        ``mass`` given as arrays, for ``parts`` (default the settings' own: ``("full",)``,
        or hard and soft with a changeover; split parts: the sources as sinks), the net
        force kept; nothing is kept in the engine but its buffers.  ``floor``: the
        relative criterion's (alpha, a_old of the sinks, theta_min), walked on a tree
        built with ``theta`` (its theta_max).  The arrays are validated here: on the
        device where they are the sources and sinks of a device walk (:meth:`_resident`),
        on the host otherwise."""
        g, rt = self.g, self.rt
        self.kept.forget()                    # its buffers may be reused here
        if g.changeover is not None:
            return self._split(pos, mass, parts or g.parts)
        self_sinks = sinks is None
        resident = g.method == "tree" and g.build == "device" and self_sinks and rt.has_fp64
        if g.periodic is not None:
            if g.method != "tree":
                raise ValueError("periodic forces (box) need the tree method")
            if g.multipole == "quadrupole":
                raise ValueError("periodic forces (box) take monopole cells: the short-range "
                                 "kernel has no quadrupole terms yet (multipole='monopole' "
                                 "or 'auto')")
            pos, mass = validate_particles(pos, mass)       # before the wrap
            pos = wrap(pos, g.periodic.box)
        elif resident:
            pos, mass = shaped_particles(pos, mass)        # values: checked on the device
        else:
            pos, mass = validate_particles(pos, mass)
        if not self_sinks:
            sinks, _ = validate_particles(sinks, np.zeros(len(np.asarray(sinks))), "sinks")
            if g.periodic is not None:
                sinks = wrap(sinks, g.periodic.box)
        n_sink = len(pos) if self_sinks else len(sinks)
        if len(pos) == 0 or n_sink == 0:
            z = np.zeros(n_sink, np.int64)
            return {"full": Forces(np.zeros((n_sink, 3)), np.zeros(n_sink), z, z.copy())}
        # a softening per source: carried by the tree (sinks given apart have eps 0: each
        # pair takes its source's)
        eps = np.asarray(g.eps, np.float32) if np.ndim(g.eps) and g.method == "tree" else None
        if resident:
            return {"full": self._long_range(self._resident(pos, mass, floor, eps), pos, mass,
                                             None)}
        n_group = g.n_group or None
        t0 = time.perf_counter()
        if g.method == "direct":
            sink_pos = pos if self_sinks else sinks
            acc, pot, t = direct_forces(rt, pos, mass, sink_pos, g.eps, self_skip=self_sinks,
                                        split=g.precise, options=g.kernel_options)
            n_pp = np.full(n_sink, len(pos) - int(self_sinks), np.int64)
            n_pc = np.zeros(n_sink, np.int64)
        else:
            tree = build_where(rt, g.build, pos, mass, g.theta, g.n_leaf, g.multipole, eps=eps)
            t = {f"build_{k}": v for k, v in tree.timings.items()}
            t["build"] = time.perf_counter() - t0
            acc, pot, n_pp, n_pc, tw = tree_forces(rt, tree, g.walk_eps, n_group=n_group,
                                                   sinks=None if self_sinks else sinks,
                                                   floor=floor, periodic=g.periodic,
                                                   options=g.kernel_options)
            t.update(tw)
        t["total"] = time.perf_counter() - t0
        out = Forces(acc, pot, n_pp, n_pc, device=rt.info.label, timings=t)
        return {"full": self._long_range(out, pos, mass, None if self_sinks else sinks)}

    def _long_range(self, f: Forces, pos: np.ndarray, mass: np.ndarray,
                    sinks: np.ndarray | None) -> Forces:
        """``f`` (the tree's short range) with the mesh's long range added (periodic)."""
        if self.g.periodic is not None:
            self._long_range_of(self.g).add_timed(pos, mass, f.acc, f.pot, f.timings, sinks)
        return f

    def _long_range_of(self, g: GravitySettings) -> LongRange:
        """The mesh of ``g``'s periodic box, kept between calls (its device buffers)."""
        if self._long is None or self._long.p != g.periodic:
            self._long = LongRange(g.periodic, self.rt, self.mesh_comm)
        return self._long

    def _split(self, pos, mass, parts: tuple[str, ...]) -> dict[str, Forces]:
        """:meth:`sink_forces` of the hybrid tree's parts: one tree, walked per part from
        the host (the build's time in the first part's timings)."""
        g, rt = self.g, self.rt
        pos, mass = validate_particles(pos, mass)
        t0 = time.perf_counter()
        tree = build_where(rt, g.build, pos, mass, g.theta, g.n_leaf, g.multipole)
        build = time.perf_counter() - t0
        out = {}
        for part in parts:
            t1 = time.perf_counter()
            acc, pot, n_pp, n_pc, tw = tree_forces(rt, tree, g.eps, n_group=g.n_group or None,
                                                   split=g.changeover, part=part,
                                                   options=g.kernel_options)
            tw["build"] = build if not out else 0.0
            tw["total"] = time.perf_counter() - t1 + tw["build"]
            out[part] = Forces(acc, pot, n_pp, n_pc, device=rt.info.label, timings=tw)
        return out

    def _resident(self, pos: np.ndarray, mass: np.ndarray, floor=None,
                  eps: np.ndarray | None = None) -> Forces:
        """The tree force of particles on themselves through the device backend: one
        upload (pinned on GPUs), the values checked on the device, the tree built in kept
        buffers, results widened to float64 on the device, one download of acc and pot;
        interaction counts summed on the device (per sink: on demand).  ``timings``:
        device seconds of upload, build, walk, download (device markers), ``total`` (the
        host's clock from the upload on) and ``n_groups``."""
        g, rt, clock, work = self.g, self.rt, self.clock, self.work
        n = len(pos)
        red = reduce.reducer(rt)
        t0 = time.perf_counter()
        with clock.device("upload"):
            d_pos, d_mass = upload(rt, [pos, mass], ["upload_pos", "upload_mass"])
            d_eps = None if eps is None else upload(rt, [eps], ["upload_eps"])[0]
        if not (red.all_finite(n, (d_pos, 3 * n), (d_mass, n)) and float(mass.min()) >= 0.0):
            validate_particles(pos, mass)         # names the first bad particle
        with clock.device("build"):
            tree = build_device_tree(rt, DeviceArrays(d_pos, d_mass, n, d_eps), None,
                                     theta=g.theta, n_leaf=g.n_leaf, multipole=g.multipole,
                                     alloc=work)
        acc_b, pot_b = work("api_acc", 24 * n), work("api_pot", 8 * n)
        if floor is not None:
            with clock.device("upload"):
                a_old = upload(rt, [floor[1]], ["api_acc_old"])[0]
            floor = (floor[0], a_old, floor[2])
        with clock.device("walk"):
            counts, n_groups, _ = walk_into(rt, tree, g.walk_eps, acc_b, pot_b, g.n_group or None,
                                            floor=floor, periodic=g.periodic,
                                            options=g.kernel_options)
            total = sum(red.count_sum(n, counts))
            # per-sink counts (caller's order), kept for a later read (walk_into left them
            # in the workspace, which the next call overwrites)
            kept = rt.empty(8 * n)
            cl.enqueue_copy(rt.queue, kept, counts, byte_count=8 * n)
        acc, pot = np.empty((n, 3)), np.empty(n)
        with clock.device("download"):
            download(rt, [(acc_b, acc), (pot_b, pot)])
        t = clock.snapshot()
        t["total"] = time.perf_counter() - t0
        t["n_groups"] = n_groups

        def fetch() -> tuple[np.ndarray, np.ndarray]:
            cnt = np.empty((n, 2), np.int32)
            download(rt, [(kept, cnt)])
            return cnt[:, 0], cnt[:, 1]

        return Forces(acc, pot, device=rt.info.label, timings=t, _total=total, _fetch=fetch)
