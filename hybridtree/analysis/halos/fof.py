"""Friends-of-friends groups of particles and GADGET-4's FOF linking length.

- :func:`friends_of_friends`: group labels of particles closer than a linking length
  (open boundaries), from scipy's cKDTree in slabs of bounded size.
- :func:`mean_separation`, :func:`linking_length`: the linking length as GADGET-4 takes it
  (src/fof/fof.cc, fof.h of GADGET-4): ``FOF_LINKLENGTH`` × (mean particle mass /
  (Ω_m ρ_crit,0))^(1/3), comoving; two particles are linked when their distance is <= the
  linking length.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy.spatial import cKDTree

from ...config.units import G_CGS, KM_CM, MPC_CM
from ...errors import UserInputError

__all__ = ["friends_of_friends", "linking_length", "mean_separation"]

#: particles per slab of :func:`friends_of_friends` (its memory: about 16 bytes per linked
#: pair in a slab, 2^16 particles at a few hundred neighbours each: tens of MB)
FOF_CHUNK = 1 << 16


# --------------------------------------------------------------------------------------
# friends of friends

def friends_of_friends(pos: np.ndarray, link: float, chunk: int = FOF_CHUNK,
                       leafsize: int = 16, box: float | None = None) -> np.ndarray:
    """Friends-of-friends groups: particles i and j are linked when |x_i - x_j| <= ``link``
    (open boundaries; with ``box``, the side of a periodic cube, on the nearest image); a
    group is a connected set of links.

    ``pos``: (N, 3) positions, ``link`` in the same units.  Returns int64 labels (N,):
    0 .. n_groups - 1, single particles included, groups numbered in the order of their
    first particle (the group of particle 0 is 0).

    Memory stays bounded however clustered the particles are: they are taken in slabs of
    ``chunk`` particles along the longest axis; each slab, with the particles within
    ``link`` beyond it, gets its own cKDTree and its linked pairs (``query_pairs``, 16 bytes
    a pair, one slab's pairs at a time), reduced at once by union-find to one edge per
    linked particle (particle -> the first particle of its group in the slab); union-find
    over those edges of all slabs gives the groups.  Time: O(N log N + linked pairs),
    the slabs shared among threads, one per core (memory: one slab's pairs per thread).
    A periodic box adds, for each particle within ``link`` of a face, its images across
    that face (and edge and corner) as ghosts that carry the particle's own index, so the
    same slabs link across the faces.
    """
    pos = np.asarray(pos, dtype=np.float64)
    if pos.ndim != 2 or pos.shape[1] != 3:
        raise UserInputError(f"pos must have shape (N, 3), not {pos.shape}")
    link = float(link)
    if not (link > 0 and math.isfinite(link)):
        raise UserInputError(f"link must be a positive finite number, not {link}")
    if not np.isfinite(pos).all():
        raise UserInputError("pos has non-finite values")
    n = len(pos)
    if n == 0:
        return np.zeros(0, np.int64)
    chunk = max(int(chunk), 1)
    index = np.int32 if n < 2 ** 31 else np.int64
    origin = np.arange(n, dtype=index)
    if box is not None:
        pos, origin = _with_ghosts(pos, origin, link, float(box))
    if len(pos) <= chunk:
        src, dst = _window_edges(pos, origin, link, leafsize)
    else:
        axis = int(np.argmax(np.ptp(pos, axis=0)))
        order = np.argsort(pos[:, axis], kind="stable").astype(index)
        xs = pos[order, axis]

        def slab(start: int) -> tuple[np.ndarray, np.ndarray]:
            end = min(start + chunk, len(pos))
            # the pairs (i, j), x_i <= x_j, with i in this slab have j in [start, stop)
            stop = int(np.searchsorted(xs, xs[end - 1] + link, side="right"))
            members = order[start:stop]
            return _window_edges(pos[members], origin[members], link, leafsize)

        # the slabs on every core (cKDTree lets the GIL go while it builds and pairs);
        # map keeps the slabs' order, so the edges are the same whatever the threads
        starts = range(0, len(pos), chunk)
        with ThreadPoolExecutor(max(1, min(len(starts), os.cpu_count() or 1))) as pool:
            edges = list(pool.map(slab, starts))
        srcs, dsts = [e[0] for e in edges], [e[1] for e in edges]
        del order, xs, edges
        src, dst = np.concatenate(srcs), np.concatenate(dsts)
        del srcs, dsts
    roots = _union_find(n, src, dst)
    return np.unique(roots, return_inverse=True)[1].astype(np.int64, copy=False)


def _with_ghosts(pos: np.ndarray, origin: np.ndarray, link: float, box: float
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Positions wrapped into [0, box) followed by the images (ghosts) of those within
    ``link`` of a face, for each of the 26 shifts that brings them next to the opposite
    face; and for every row the index of the particle it is (``origin``)."""
    if not (math.isfinite(box) and 2.0 * link < box):
        raise UserInputError(f"the linking length {link:g} must be below half the box "
                             f"({box:g})")
    pos = np.mod(pos, box)
    pos[pos >= box] = 0.0
    low, high = pos < link, pos >= box - link
    parts, owners = [pos], [origin]
    for shift in np.array(np.meshgrid([-1, 0, 1], [-1, 0, 1], [-1, 0, 1])).T.reshape(-1, 3):
        if not shift.any():
            continue
        near = np.ones(len(pos), bool)
        for a in range(3):
            if shift[a] == 1:
                near &= low[:, a]
            elif shift[a] == -1:
                near &= high[:, a]
        rows = np.flatnonzero(near)
        parts.append(pos[rows] + shift * box)
        owners.append(origin[rows])
    return np.concatenate(parts), np.concatenate(owners)


def _union_find(n: int, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Connected components of the graph on nodes 0 .. n-1 with edges (i[k], j[k]): each
    node's root, the smallest node of its component.  Vectorised union-find: every edge
    hooks the root of its larger end onto its smaller end's (np.minimum.at), pointer
    jumping flattens the trees, edges within one tree are dropped; repeated until none is
    left (a few rounds: each merges every edge's two trees)."""
    parent = np.arange(n, dtype=i.dtype if len(i) else np.int64)
    while len(i):
        np.minimum.at(parent, np.maximum(i, j), np.minimum(i, j))
        while True:
            jumped = parent[parent]
            if np.array_equal(jumped, parent):
                break
            parent = jumped
        i, j = parent[i], parent[j]
        differ = i != j
        i, j = i[differ], j[differ]
    return parent


def _window_edges(pos: np.ndarray, members: np.ndarray, link: float,
                  leafsize: int) -> tuple[np.ndarray, np.ndarray]:
    """Edges (global indices) particle -> first particle of its group among ``members``
    (positions ``pos``), one for each particle of a group of two or more that is not
    its group's first."""
    tree = cKDTree(pos, leafsize=leafsize, balanced_tree=False, compact_nodes=False)
    pairs = tree.query_pairs(link, output_type="ndarray")
    del tree
    if len(pairs) == 0:
        return members[:0], members[:0]
    local = members.dtype if len(pos) >= 2 ** 31 else np.int32
    i, j = pairs[:, 0].astype(local), pairs[:, 1].astype(local)
    del pairs
    root = _union_find(len(pos), i, j)
    del i, j
    linked = np.flatnonzero(root != np.arange(len(pos), dtype=root.dtype))
    return members[linked], members[root[linked]]


# --------------------------------------------------------------------------------------
# linking length

def mean_separation(particle_mass: float, omega_m: float, h: float, unit_mass_g: float,
                    unit_length_cm: float) -> float:
    """The mean comoving interparticle separation of particles of mass ``particle_mass``
    (in UnitMass/h) that make up the matter density Ω_m ρ_crit,0, in comoving
    UnitLength/h: (m / (Ω_m ρ_crit,0))^(1/3), ρ_crit,0 = 3 H0² / (8 π G), H0 = 100 h
    km/s/Mpc.  (The particle count of the whole cube is not needed: right for a sphere cut
    from a cosmological box.)  The result does not depend on h."""
    if not (particle_mass > 0 and omega_m > 0 and h > 0):
        raise UserInputError(f"need particle mass, Omega0 and h > 0 (got {particle_mass}, "
                             f"{omega_m}, {h})")
    h0 = h * 100.0 * KM_CM / MPC_CM                                   # 1/s
    rho_crit = 3.0 * h0 ** 2 / (8.0 * math.pi * G_CGS)                # g/cm^3
    m_g = particle_mass * unit_mass_g / h
    d_cm = (m_g / (omega_m * rho_crit)) ** (1.0 / 3.0)                # comoving cm
    return d_cm * h / unit_length_cm


def linking_length(b: float, particle_mass: float, omega_m: float, h: float,
                   unit_mass_g: float, unit_length_cm: float) -> float:
    """b × :func:`mean_separation` (comoving UnitLength/h): GADGET-4's FOF linking length."""
    return b * mean_separation(particle_mass, omega_m, h, unit_mass_g, unit_length_cm)
