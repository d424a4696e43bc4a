"""Forces of sinks given as arrays (the public :func:`hybridtree.gravity.accelerations`
and :func:`~hybridtree.gravity.api.split_accelerations`), through the one force pipeline
(:func:`.pipeline.drive`).

The state of such a force is an :class:`Arrays` value: the sources as arrays, the sinks
(the sources, or foreign sinks), the opening criterion, and the :class:`.forces.Forces`
of each part it receives.  Two backends implement the stages:

* :class:`ResidentBackend`, where the sources are the sinks of a device-built tree (and
  the device has double precision): ``sources`` is the one upload (pinned on GPUs) with
  the values checked on the device; ``tree`` builds in kept buffers; ``walk`` walks into
  kept buffers, sums the interaction counts on the device (per sink: kept for a later
  read) and downloads acc and pot once;
* :class:`ArrayHostBackend` otherwise: the arrays validated on the host, a tree built
  where the settings say and walked from the host (or the direct method), and the hybrid
  tree's parts (hard, soft, full) from one tree.

Both add a periodic box's mesh on the host (``long_range``); the net force is kept (no
reduction).  Units: G = 1, the caller's."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyopencl as cl

from ..device import reduce
from ..device.transfer import download, upload
from ..particles import shaped_particles, validate_particles
from .criterion import Criterion
from .direct import direct_forces
from .forces import Forces
from .knobs import build_where
from .parts import FULL, Part, as_parts
from .periodic import wrap
from .pipeline import Backend, Job, drive
from .tree.device_build import DeviceArrays, build_device_tree
from .walk import tree_forces, walk_into

__all__ = ["ArrayHostBackend", "Arrays", "ResidentBackend", "sink_forces"]


@dataclass
class Arrays:
    """The state of a force of arrays: sources ``pos`` (n, 3) and ``mass`` (n,) as the
    caller gave them, ``sinks`` (m, 3) (None: the sources themselves), the opening
    ``criterion`` (None: geometric), and ``forces``, each part's result by name (filled
    by the backends' ``reduce_part``)."""

    pos: Any
    mass: Any
    sinks: Any = None
    criterion: Criterion | None = None
    forces: dict[str, Forces] = field(default_factory=dict)


def sink_forces(engine, pos, mass, sinks=None, criterion: Criterion | None = None,
                parts: tuple[str, ...] | None = None) -> dict[str, Forces]:
    """Forces of ``sinks`` (default: the sources themselves) from the sources ``pos``,
    ``mass`` given as arrays, for ``parts`` (default the settings' own: ``("full",)``,
    or hard and soft with a changeover; split parts: the sources as sinks), the net
    force kept; nothing is kept in the engine but its buffers.  ``criterion``: the
    opening criterion (None: geometric; a relative one with a_old of the sinks, walked
    on a tree built with the settings' ``theta``, its theta_max).  The arrays are
    validated in the ``sources`` stage: on the device by :class:`ResidentBackend`, on
    the host by :class:`ArrayHostBackend`."""
    g = engine.g
    engine.kept.forget()                    # its buffers may be reused here
    split = g.changeover is not None
    a = Arrays(pos, mass, sinks, criterion)
    resident = (not split and g.method == "tree" and g.build == "device" and sinks is None
                and engine.rt.has_fp64)
    backend = engine.resident if resident else engine.host_arrays
    # the hybrid tree's parts take no box's mesh (a run refuses hybrid in a box at set-up)
    drive(backend, a, as_parts(parts or g.parts) if split else (FULL,), None,
          g.periodic is not None and not split)
    return a.forces


def _checked_box(g) -> None:
    """The errors of a periodic box's force of arrays (its knobs)."""
    if g.method != "tree":
        raise ValueError("periodic forces (box) need the tree method")
    if g.multipole == "quadrupole":
        raise ValueError("periodic forces (box) take monopole cells: the short-range "
                         "kernel has no quadrupole terms yet (multipole='monopole' "
                         "or 'auto')")


def _source_eps(g) -> np.ndarray | None:
    """A softening per source, carried by the tree (sinks given apart have eps 0: each
    pair takes its source's); None: one for all."""
    return np.asarray(g.eps, np.float32) if np.ndim(g.eps) and g.method == "tree" else None


def _empty(a: Arrays, n_sink: int) -> int:
    """No sources or no sinks: zero forces of the sinks, nothing walked."""
    z = np.zeros(n_sink, np.int64)
    a.forces["full"] = Forces(np.zeros((n_sink, 3)), np.zeros(n_sink), z, z.copy())
    return 0


class _ArrayStages(Backend):
    """What both array backends share: the mesh of a periodic box added on the host to
    a part's forces (``job.extra[part]``, the tree's short range), and the part's
    forces handed to the state (the net force kept: no reduction)."""

    def long_range(self, job: Job, part: Part) -> None:
        f, x = job.extra[part], job.extra
        self.engine.long_range_of(self.engine.g).add_timed(x["pos"], x["mass"], f.acc, f.pot,
                                                           f.timings, x["sinks"])

    def reduce_part(self, job: Job, part: Part) -> None:
        job.state.forces[part.name] = job.extra[part]


class ResidentBackend(_ArrayStages):
    """The tree force of particles on themselves on the device, on buffers of its own
    (module docstring).  ``timings``: device seconds of upload, build, walk, download
    (device markers of the engine's clock), ``total`` (the host's clock from the upload
    on) and ``n_groups``; interaction counts summed on the device (per sink: on
    demand)."""

    def sources(self, a: Arrays, parts: tuple[Part, ...], active) -> Job | int:
        """The one upload; the values checked on the device (a bad one: named by the
        host's check)."""
        e = self.engine
        g, rt, clock = e.g, e.rt, e.clock
        if g.periodic is not None:
            _checked_box(g)
            pos, mass = validate_particles(a.pos, a.mass)       # before the wrap
            pos = wrap(pos, g.periodic.box)
        else:
            pos, mass = shaped_particles(a.pos, a.mass)        # values: checked on the device
        n = len(pos)
        if n == 0:
            return _empty(a, 0)
        eps = _source_eps(g)
        red = reduce.reducer(rt)
        t0 = time.perf_counter()
        with clock.device("upload"):
            d_pos, d_mass = upload(rt, [pos, mass], ["upload_pos", "upload_mass"])
            d_eps = None if eps is None else upload(rt, [eps], ["upload_eps"])[0]
        if not (red.all_finite(n, (d_pos, 3 * n), (d_mass, n)) and float(mass.min()) >= 0.0):
            validate_particles(pos, mass)         # names the first bad particle
        job = Job(a, parts, active, a.criterion, n)
        job.extra.update(t0=t0, pos=pos, mass=mass, sinks=None,
                         sources=DeviceArrays(d_pos, d_mass, n, d_eps))
        return job

    def tree(self, job: Job) -> None:
        """Built in kept buffers; a relative criterion's a_old uploaded meanwhile (its
        host copy overlaps the build on GPUs)."""
        e = self.engine
        g, rt, clock = e.g, e.rt, e.clock
        with clock.device("build"):
            job.tree = build_device_tree(rt, job.extra["sources"], None, theta=g.theta,
                                         n_leaf=g.n_leaf, multipole=g.multipole, alloc=e.work)
        if job.criterion is not None and job.criterion.relative:
            with clock.device("upload"):
                a_old = upload(rt, [job.criterion.a_old], ["api_acc_old"])[0]
            job.criterion = job.criterion.with_a_old(a_old)

    def walk(self, job: Job, part: Part) -> None:
        """Walk into kept buffers, counts summed on the device, one download."""
        e, n = self.engine, job.n
        g, rt, clock, work = e.g, e.rt, e.clock, e.work
        red = reduce.reducer(rt)
        acc_b, pot_b = work("api_acc", 24 * n), work("api_pot", 8 * n)
        with clock.device("walk"):
            counts, n_groups, _ = walk_into(rt, job.tree, g.walk_eps, acc_b, pot_b,
                                            g.n_group or None, criterion=job.criterion,
                                            periodic=g.periodic, options=g.kernel_options,
                                            tuning=e.tuning, per_sink=True)
            total = sum(red.count_sum(n, counts))
            # per-sink counts (caller's order), kept for a later read (walk_into left them
            # in the workspace, which the next call overwrites)
            kept = rt.empty(8 * n)
            cl.enqueue_copy(rt.queue, kept, counts, byte_count=8 * n)
        acc, pot = np.empty((n, 3)), np.empty(n)
        with clock.device("download"):
            download(rt, [(acc_b, acc), (pot_b, pot)])
        t = clock.snapshot()
        t["total"] = time.perf_counter() - job.extra["t0"]
        t["n_groups"] = n_groups

        def fetch() -> tuple[np.ndarray, np.ndarray]:
            cnt = np.empty((n, 2), np.int32)
            download(rt, [(kept, cnt)])
            return cnt[:, 0], cnt[:, 1]

        job.extra[part] = Forces(acc, pot, device=rt.info.label, timings=t, _total=total,
                                 _fetch=fetch)


class ArrayHostBackend(_ArrayStages):
    """Forces of arrays from the host: the direct method, or a tree built where the
    settings say (``g.build``) and walked from the host for the sources or foreign sinks;
    with a changeover, the hybrid tree's parts from one tree (the build's time in the
    first part's timings).  ``timings``: the build's (``build``, and ``build_*`` of a
    whole force), the walk's or direct kernel's, ``total`` (host seconds)."""

    def sources(self, a: Arrays, parts: tuple[Part, ...], active) -> Job | int:
        """The arrays validated (and wrapped into a periodic box)."""
        g = self.engine.g
        if g.changeover is not None:
            for part in parts:
                if not (part.walked and part.mesh):     # TreePM's parts: a box, no force split
                    raise ValueError(f"the hybrid tree's parts are full, soft and hard, got "
                                     f"{part.name!r}")
            pos, mass = validate_particles(a.pos, a.mass)
            job = Job(a, parts, active, None, len(pos))
            job.extra.update(pos=pos, mass=mass, sinks=None, eps=None, split=True)
            return job
        if g.periodic is not None:
            _checked_box(g)
        pos, mass = validate_particles(a.pos, a.mass)
        sinks = a.sinks
        if g.periodic is not None:
            pos = wrap(pos, g.periodic.box)
        if sinks is not None:
            sinks, _ = validate_particles(sinks, np.zeros(len(np.asarray(sinks))), "sinks")
            if g.periodic is not None:
                sinks = wrap(sinks, g.periodic.box)
        n_sink = len(pos) if sinks is None else len(sinks)
        if len(pos) == 0 or n_sink == 0:
            return _empty(a, n_sink)
        job = Job(a, parts, active, a.criterion, n_sink)
        job.extra.update(pos=pos, mass=mass, sinks=sinks, eps=_source_eps(g), split=False)
        return job

    def tree(self, job: Job) -> None:
        """The tree (the direct method: none), its build timed from here on."""
        e, x = self.engine, job.extra
        g = e.g
        x["t0"] = t0 = time.perf_counter()
        if g.method == "direct" and not x["split"]:
            return
        job.tree = build_where(e.rt, g.build, x["pos"], x["mass"], g.theta, g.n_leaf,
                               g.multipole, eps=x["eps"])
        x["build"] = time.perf_counter() - t0

    def walk(self, job: Job, part: Part) -> None:
        e, x = self.engine, job.extra
        g, rt = e.g, e.rt
        if x["split"]:
            t1 = time.perf_counter()
            acc, pot, n_pp, n_pc, t = tree_forces(rt, job.tree, g.eps, n_group=g.n_group or None,
                                                  split=g.changeover, part=part,
                                                  options=g.kernel_options, tuning=e.tuning)
            t["build"] = x.pop("build", 0.0)           # the first part's
            t["total"] = time.perf_counter() - t1 + t["build"]
        elif g.method == "direct":
            pos, sinks = x["pos"], x["sinks"]
            self_sinks = sinks is None
            acc, pot, t = direct_forces(rt, pos, x["mass"], pos if self_sinks else sinks,
                                        g.eps, self_skip=self_sinks, split=g.precise,
                                        options=g.kernel_options, tuning=e.tuning)
            n_pp = np.full(job.n, len(pos) - int(self_sinks), np.int64)
            n_pc = np.zeros(job.n, np.int64)
            t["total"] = time.perf_counter() - x["t0"]
        else:
            t = {f"build_{k}": v for k, v in job.tree.timings.items()}
            t["build"] = x["build"]
            acc, pot, n_pp, n_pc, tw = tree_forces(rt, job.tree, g.walk_eps,
                                                   n_group=g.n_group or None, sinks=x["sinks"],
                                                   criterion=job.criterion,
                                                   periodic=g.periodic,
                                                   options=g.kernel_options, tuning=e.tuning)
            t.update(tw)
            t["total"] = time.perf_counter() - x["t0"]
        x[part] = Forces(acc, pot, n_pp, n_pc, device=rt.info.label, timings=t)
