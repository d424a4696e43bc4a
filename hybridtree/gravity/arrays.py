"""Forces of sinks given as arrays through the force engine (the public
:func:`hybridtree.gravity.accelerations` and :func:`~hybridtree.gravity.api.split_accelerations`):
the device walk on buffers of its own where the sources are the sinks (:func:`_resident`:
one upload, values checked on the device, one download), else a tree built where the
settings say and walked from the host; a periodic box's mesh added.  The net force is
kept.  Units: G = 1, the caller's."""

from __future__ import annotations

import time

import numpy as np
import pyopencl as cl

from ..device import reduce
from ..device.transfer import download, upload
from ..particles import shaped_particles, validate_particles
from .criterion import Criterion
from .direct import direct_forces
from .forces import Forces
from .knobs import build_where
from .parts import Part, as_parts
from .periodic import wrap
from .tree.device_build import DeviceArrays, build_device_tree
from .walk import tree_forces, walk_into

__all__ = ["sink_forces"]


def sink_forces(engine, pos, mass, sinks=None, criterion: Criterion | None = None,
                parts: tuple[str, ...] | None = None) -> dict[str, Forces]:
    """Forces of ``sinks`` (default: the sources themselves) from the sources ``pos``,
    ``mass`` given as arrays, for ``parts`` (default the settings' own: ``("full",)``,
    or hard and soft with a changeover; split parts: the sources as sinks), the net
    force kept; nothing is kept in the engine but its buffers.  ``criterion``: the
    opening criterion (None: geometric; a relative one with a_old of the sinks, walked
    on a tree built with the settings' ``theta``, its theta_max).  The arrays are
    validated here: on the device where they are the sources and sinks of a device walk
    (:func:`_resident`), on the host otherwise."""
    g, rt = engine.g, engine.rt
    engine.kept.forget()                    # its buffers may be reused here
    if g.changeover is not None:
        return _split(engine, pos, mass, as_parts(parts or g.parts))
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
        return {"full": _long_range(engine, _resident(engine, pos, mass, criterion, eps),
                                    pos, mass, None)}
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
                                               criterion=criterion, periodic=g.periodic,
                                               options=g.kernel_options, tuning=engine.tuning)
        t.update(tw)
    t["total"] = time.perf_counter() - t0
    out = Forces(acc, pot, n_pp, n_pc, device=rt.info.label, timings=t)
    return {"full": _long_range(engine, out, pos, mass, None if self_sinks else sinks)}


def _long_range(engine, f: Forces, pos: np.ndarray, mass: np.ndarray,
                sinks: np.ndarray | None) -> Forces:
    """``f`` (the tree's short range) with the mesh's long range added (periodic)."""
    if engine.g.periodic is not None:
        engine.long_range_of(engine.g).add_timed(pos, mass, f.acc, f.pot, f.timings, sinks)
    return f


def _split(engine, pos, mass, parts: tuple[Part, ...]) -> dict[str, Forces]:
    """:func:`sink_forces` of the hybrid tree's parts: one tree, walked per part from
    the host (the build's time in the first part's timings)."""
    g, rt = engine.g, engine.rt
    for part in parts:
        if not (part.walked and part.mesh):     # TreePM's parts: a box, no force split
            raise ValueError(f"the hybrid tree's parts are full, soft and hard, got "
                             f"{part.name!r}")
    pos, mass = validate_particles(pos, mass)
    t0 = time.perf_counter()
    tree = build_where(rt, g.build, pos, mass, g.theta, g.n_leaf, g.multipole)
    build = time.perf_counter() - t0
    out = {}
    for part in parts:
        t1 = time.perf_counter()
        acc, pot, n_pp, n_pc, tw = tree_forces(rt, tree, g.eps, n_group=g.n_group or None,
                                               split=g.changeover, part=part,
                                               options=g.kernel_options, tuning=engine.tuning)
        tw["build"] = build if not out else 0.0
        tw["total"] = time.perf_counter() - t1 + tw["build"]
        out[part.name] = Forces(acc, pot, n_pp, n_pc, device=rt.info.label, timings=tw)
    return out


def _resident(engine, pos: np.ndarray, mass: np.ndarray, criterion: Criterion | None = None,
              eps: np.ndarray | None = None) -> Forces:
    """The tree force of particles on themselves through the device backend: one
    upload (pinned on GPUs), the values checked on the device, the tree built in kept
    buffers, results widened to float64 on the device, one download of acc and pot;
    interaction counts summed on the device (per sink: on demand).  ``timings``:
    device seconds of upload, build, walk, download (device markers), ``total`` (the
    host's clock from the upload on) and ``n_groups``."""
    g, rt, clock, work = engine.g, engine.rt, engine.clock, engine.work
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
    if criterion is not None and criterion.relative:
        with clock.device("upload"):
            a_old = upload(rt, [criterion.a_old], ["api_acc_old"])[0]
        criterion = criterion.with_a_old(a_old)
    with clock.device("walk"):
        counts, n_groups, _ = walk_into(rt, tree, g.walk_eps, acc_b, pot_b, g.n_group or None,
                                        criterion=criterion, periodic=g.periodic,
                                        options=g.kernel_options, tuning=engine.tuning)
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
