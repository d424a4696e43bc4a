"""Forces across processes from host arrays, with the LET selected on the host
(:mod:`.let`): the stages of the one force pipeline (:func:`hybridtree.gravity.pipeline.
drive`) for :func:`.forces.parallel_accelerations` and for the parallel engine's host
state (the path of devices without double precision).

Every process builds its tree in the same global cube (power-of-two side), so its cells
are cells of the one-process tree restricted to its particles; it sends each other
process the LET for that process's particle box (:mod:`.let`) with one Alltoallv; it
builds one tree of its own particles plus everything received (pseudo-particles act as
point masses, as in FDPS) and walks it for its own particles, or (``overlap``) walks its
local tree while the LETs travel (non-blocking) and then the tree of what arrived.
Host arrays in (:class:`ParallelArrays`), host arrays out (:class:`ParallelForces`), the
net force kept (no reduction).  Units: G = 1, the caller's length and mass units.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..gravity.knobs import build_where
from ..gravity.parts import Part
from ..gravity.pipeline import Backend, Job
from ..gravity.tree import build_tree
from ..gravity.tree.device_build import device_cube
from ..gravity.tree.morton import Cube
from ..gravity.walk import tree_forces
from ..particles import bounds
from .comm import Comm
from .let import LET_DTYPE, let_entries, select_let

__all__ = ["ParallelArrayBackend", "ParallelArrays", "ParallelForces", "global_cube",
           "particle_boxes"]


@dataclass
class ParallelForces:
    """Accelerations (n_local, 3) and potentials of this process's particles (G = 1)."""

    acc: np.ndarray
    pot: np.ndarray
    interactions: int
    let_sent: dict = field(default_factory=dict)      # cells, particles, bytes sent
    timings: dict = field(default_factory=dict)       # seconds per phase


@dataclass
class ParallelArrays:
    """The state of a force of host arrays across processes: this process's particles
    ``pos`` (n, 3) and ``mass`` (n,) (validated float64), and ``forces``, the part's
    result by name (filled by :meth:`ParallelArrayBackend.reduce`)."""

    pos: np.ndarray
    mass: np.ndarray
    forces: dict[str, ParallelForces] = field(default_factory=dict)


def global_cube(boxes: np.ndarray) -> Cube:
    """The power-of-two cube around every process's particles (``boxes``: as
    :func:`particle_boxes` returns them)."""
    lo, hi = boxes[:, 0].min(axis=0), boxes[:, 1].max(axis=0)
    if not np.all(np.isfinite(lo)):
        return Cube(np.zeros(3), 1.0)
    return device_cube(np.stack([lo, hi]))


def particle_boxes(comm: Comm, pos: np.ndarray) -> np.ndarray:
    """(size, 2, 3): lower and upper corner of every process's particles (empty: inf, -inf)."""
    box = np.stack(bounds(pos)) if len(pos) else \
        np.stack([np.full(3, np.inf), np.full(3, -np.inf)])
    return comm.allgather_float(box)


class ParallelArrayBackend(Backend):
    """The stages of one part's force of :class:`ParallelArrays` on many processes
    (``engine``: a :class:`.engine.ParallelEngine`: its ``comm``, ``g``, ``overlap``,
    ``tuning``), every stage collective: ``sources`` gathers the particle boxes and the
    global cube; ``tree`` builds the host tree the LET is selected from; ``exchange``
    selects and sends the LETs (the hard part: cells beyond r_out left out) and builds
    the merged tree, or (``overlap``) sends without waiting and builds the local tree;
    ``walk`` walks it; ``received`` (``overlap``) walks the tree of what arrived;
    ``reduce`` hands the forces to the state.  One part a force: each part has its
    own LET.  ``timings`` (host seconds): ``boxes``, ``let_select``, ``let_comm``,
    ``build``, ``walk`` (and the walk's own, or ``walk_local``, ``walk_remote``)."""

    def sources(self, a: ParallelArrays, parts: tuple[Part, ...], active) -> Job:
        """Every process's particle box and the global cube; a Job even without local
        particles (the exchange is collective)."""
        assert active is None and len(parts) == 1, "one part of every particle a force"
        comm = self.engine.comm
        t0 = time.perf_counter()
        boxes = particle_boxes(comm, a.pos)
        cube = global_cube(boxes)
        t1 = time.perf_counter()
        others = [r for r in range(comm.size)
                  if r != comm.rank and np.all(boxes[r][0] <= boxes[r][1])]
        job = Job(a, parts, None, None, len(a.pos))
        job.extra.update(boxes=boxes, cube=cube, others=others, t1=t1,
                         t={"boxes": t1 - t0}, acc=np.zeros((job.n, 3)), pot=np.zeros(job.n),
                         inter=None)
        return job

    def tree(self, job: Job) -> None:
        """The host tree of the local particles, that the LETs are selected from (none
        without local particles or other processes)."""
        g, a, x = self.engine.g, job.state, job.extra
        if job.n and x["others"]:
            job.tree = build_tree(a.pos, a.mass, theta=g.theta, n_leaf=g.n_leaf,
                                  cube=x["cube"], multipole=g.multipole)

    def exchange(self, job: Job) -> None:
        """The LET of every other process's box, sent with one Alltoallv; then the tree
        of the local particles and what arrived (``overlap``: sent without waiting, and
        the tree of the local particles alone)."""
        e, a, x, t = self.engine, job.state, job.extra, job.extra["t"]
        g, comm, part = e.g, e.comm, job.parts[0]
        sent = x["sent"] = {"cells": 0, "particles": 0, "bytes": 0}
        chunks, counts = [], np.zeros(comm.size, np.int64)
        if job.tree is not None:
            r_out = g.changeover.r_out if part.near_only else None
            for r in x["others"]:
                lo, hi = x["boxes"][r]
                cells, idx = select_let(job.tree, lo, hi, r_out)
                chunks.append(let_entries(job.tree, cells, idx))
                counts[r] = len(chunks[-1])
                sent["cells"] += len(cells)
                sent["particles"] += len(idx)
        send = np.concatenate(chunks) if chunks else np.empty(0, LET_DTYPE)
        sent["bytes"] = int(send.nbytes)
        t2 = time.perf_counter()
        t["let_select"] = t2 - x["t1"]
        job.tree = None
        if not e.overlap:
            recv = comm.alltoallv(send, counts)
            t3 = time.perf_counter()
            t["let_comm"] = t3 - t2
            if job.n:
                job.tree = build_where(e.rt, g.build, np.concatenate([a.pos, recv["pos"]]),
                                       np.concatenate([a.mass, recv["mass"]]), g.theta,
                                       g.n_leaf, g.multipole, cube=x["cube"])
                t["build"] = time.perf_counter() - t3
            return
        x["pending"] = pending = comm.ialltoallv(send, counts)
        t["build"] = t["walk"] = 0.0
        if job.n:
            job.tree = build_where(e.rt, g.build, a.pos, a.mass, g.theta, g.n_leaf,
                                   g.multipole, cube=x["cube"])
            pending.test()                  # lets MPI move the messages along
            t["build"] += time.perf_counter() - t2

    def _walk(self, job: Job, tree, sinks=None) -> float:
        """``tree`` walked for the local particles, its forces the result (a second
        walk's: added to it); the seconds taken and the walk's own timings."""
        e, x = self.engine, job.extra
        g, part = e.g, job.parts[0]
        t0 = time.perf_counter()
        acc, pot, n_pp, n_pc, tw = tree_forces(e.rt, tree, g.eps, n_group=g.n_group or None,
                                               sinks=sinks, split=g.changeover, part=part,
                                               options=g.kernel_options, tuning=e.tuning)
        n = job.n
        if x["inter"] is None:          # the first walk's arrays are the result
            x["acc"], x["pot"], x["inter"] = acc[:n], pot[:n], 0
        else:
            x["acc"] += acc
            x["pot"] += pot
        x["inter"] += int(n_pp[:n].sum() + n_pc[:n].sum())
        return time.perf_counter() - t0, tw

    def walk(self, job: Job, part: Part) -> None:
        """The merged tree (``overlap``: the local one) walked for the local particles;
        the received entries' sink groups are walked too (nobody needs them)."""
        t = job.extra["t"]
        if job.tree is None:
            return
        seconds, tw = self._walk(job, job.tree)
        if "pending" in job.extra:
            t["walk_local"] = seconds
            return
        t["walk"] = seconds
        t.update({f"walk_{k}": v for k, v in tw.items() if k != "n_groups"})

    def received(self, job: Job) -> None:
        """``overlap``: the LETs that travelled during the local walk, as a tree of their
        own walked for the local particles."""
        e, x, t = self.engine, job.extra, job.extra["t"]
        pending = x.get("pending")
        if pending is None:
            return
        g = e.g
        t4 = time.perf_counter()
        recv = pending.wait()
        t5 = time.perf_counter()
        t["let_comm"] = t5 - t4        # the part of the transfer the local walk did not hide
        if job.n and len(recv):
            remote = build_where(e.rt, g.build, recv["pos"], recv["mass"], g.theta, g.n_leaf,
                                 g.multipole, cube=x["cube"])
            t["build"] += time.perf_counter() - t5
            t["walk_remote"], _ = self._walk(job, remote, sinks=job.state.pos)
        t["walk"] = t.get("walk_local", 0.0) + t.get("walk_remote", 0.0)

    def reduce(self, job: Job) -> None:
        """The forces to the state (after :meth:`received`, whose walk adds to them); the
        net force kept."""
        x = job.extra
        job.state.forces[job.parts[0].name] = ParallelForces(x["acc"], x["pot"],
                                                             x["inter"] or 0, x["sent"], x["t"])
