"""The parallel engine's host backend: forces across processes from host arrays, with
the LET selected on the host (:mod:`.let`) — the path of devices without double
precision, and of :func:`.forces.parallel_accelerations`.

Every process builds its tree in the same global cube (power-of-two side), so its cells
are cells of the one-process tree restricted to its particles; it sends each other
process the LET for that process's particle box (:mod:`.let`) with one Alltoallv; it
builds one tree of its own particles plus everything received (pseudo-particles act as
point masses, as in FDPS) and walks it for its own particles, or (``overlap``) walks its
local tree while the LETs travel (non-blocking) and then the tree of what arrived.
Units: G = 1, the caller's length and mass units.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..device.runtime import Runtime
from ..gravity.engine import GravitySettings
from ..gravity.knobs import build_where
from ..gravity.parts import as_part
from ..gravity.tuning import TUNING, WalkTuning
from ..gravity.tree import build_tree
from ..gravity.tree.device_build import device_cube
from ..gravity.tree.morton import Cube
from ..gravity.walk import tree_forces
from .comm import Comm
from .let import LET_DTYPE, let_entries, select_let

__all__ = ["ParallelForces", "global_cube", "host_let_forces", "particle_boxes"]


@dataclass
class ParallelForces:
    """Accelerations (n_local, 3) and potentials of this process's particles (G = 1)."""

    acc: np.ndarray
    pot: np.ndarray
    interactions: int
    let_sent: dict = field(default_factory=dict)      # cells, particles, bytes sent
    timings: dict = field(default_factory=dict)       # seconds per phase


def global_cube(boxes: np.ndarray) -> Cube:
    """The power-of-two cube around every process's particles (``boxes``: as
    :func:`particle_boxes` returns them)."""
    lo, hi = boxes[:, 0].min(axis=0), boxes[:, 1].max(axis=0)
    if not np.all(np.isfinite(lo)):
        return Cube(np.zeros(3), 1.0)
    return device_cube(np.stack([lo, hi]))


def particle_boxes(comm: Comm, pos: np.ndarray) -> np.ndarray:
    """(size, 2, 3): lower and upper corner of every process's particles (empty: inf, -inf)."""
    box = np.stack([pos.min(axis=0), pos.max(axis=0)]) if len(pos) else \
        np.stack([np.full(3, np.inf), np.full(3, -np.inf)])
    return comm.allgather_float(box)


def host_let_forces(comm: Comm, rt: Runtime, g: GravitySettings, pos: np.ndarray,
                    mass: np.ndarray, part: str = "full", overlap: bool = False,
                    tuning: WalkTuning = TUNING) -> ParallelForces:
    """Forces of ``part`` on this process's particles (validated float64 arrays) from all
    processes' particles (collective), with ``g``'s knobs and the walks' ``tuning``; the
    net force kept.  See
    :func:`.forces.parallel_accelerations` for ``part`` and ``overlap``."""
    eps, theta, n_leaf, multipole, build = g.eps, g.theta, g.n_leaf, g.multipole, g.build
    n_group, split, part = g.n_group or None, g.changeover, as_part(part)
    t = {}
    t0 = time.perf_counter()
    boxes = particle_boxes(comm, pos)
    cube = global_cube(boxes)
    t1 = time.perf_counter()
    t["boxes"] = t1 - t0

    sent = {"cells": 0, "particles": 0, "bytes": 0}
    chunks, counts = [], np.zeros(comm.size, np.int64)
    others = [r for r in range(comm.size)
              if r != comm.rank and np.all(boxes[r][0] <= boxes[r][1])]
    if len(pos) and others:
        tree = build_tree(pos, mass, theta=theta, n_leaf=n_leaf, cube=cube, multipole=multipole)
        r_out = split.r_out if part.near_only else None
        for r in others:
            lo, hi = boxes[r]
            cells, idx = select_let(tree, lo, hi, r_out)
            chunks.append(let_entries(tree, cells, idx))
            counts[r] = len(chunks[-1])
            sent["cells"] += len(cells)
            sent["particles"] += len(idx)
    send = np.concatenate(chunks) if chunks else np.empty(0, LET_DTYPE)
    sent["bytes"] = int(send.nbytes)
    t2 = time.perf_counter()
    t["let_select"] = t2 - t1
    n = len(pos)
    walk = {"n_group": n_group, "split": split, "part": part, "options": g.kernel_options,
            "tuning": tuning}
    if not overlap:
        recv = comm.alltoallv(send, counts)
        t3 = time.perf_counter()
        t["let_comm"] = t3 - t2
        if n == 0:
            return ParallelForces(np.zeros((0, 3)), np.zeros(0), 0, sent, t)
        merged = build_where(rt, build, np.concatenate([pos, recv["pos"]]),
                             np.concatenate([mass, recv["mass"]]), theta, n_leaf, multipole,
                             cube=cube)
        t4 = time.perf_counter()
        t["build"] = t4 - t3
        acc, pot, n_pp, n_pc, tw = tree_forces(rt, merged, eps, **walk)
        t["walk"] = time.perf_counter() - t4
        t.update({f"walk_{k}": v for k, v in tw.items() if k != "n_groups"})
        return ParallelForces(acc[:n], pot[:n], int(n_pp[:n].sum() + n_pc[:n].sum()), sent, t)

    pending = comm.ialltoallv(send, counts)
    acc, pot, inter = np.zeros((n, 3)), np.zeros(n), 0
    t["build"] = t["walk"] = 0.0
    if n:
        local = build_where(rt, build, pos, mass, theta, n_leaf, multipole, cube=cube)
        pending.test()                  # lets MPI move the messages along
        t3 = time.perf_counter()
        t["build"] += t3 - t2
        acc, pot, n_pp, n_pc, _ = tree_forces(rt, local, eps, **walk)
        inter += int(n_pp.sum() + n_pc.sum())
        t["walk_local"] = time.perf_counter() - t3
    t4 = time.perf_counter()
    recv = pending.wait()
    t5 = time.perf_counter()
    t["let_comm"] = t5 - t4            # the part of the transfer the local walk did not hide
    if n and len(recv):
        remote = build_where(rt, build, recv["pos"], recv["mass"], theta, n_leaf, multipole,
                             cube=cube)
        t6 = time.perf_counter()
        t["build"] += t6 - t5
        acc_r, pot_r, pp_r, pc_r, _ = tree_forces(rt, remote, eps, sinks=pos, **walk)
        acc += acc_r
        pot += pot_r
        inter += int(pp_r.sum() + pc_r.sum())
        t["walk_remote"] = time.perf_counter() - t6
    t["walk"] = t.get("walk_local", 0.0) + t.get("walk_remote", 0.0)
    return ParallelForces(acc, pot, inter, sent, t)
