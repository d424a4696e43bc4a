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
from typing import Any

import numpy as np
from scipy.spatial import cKDTree

from ...config.units import G_CGS, KM_CM, MPC_CM
from ...errors import UserInputError
from ...particles import bounds as corners

__all__ = ["all_finite", "friends_of_friends", "linking_length", "mean_separation"]

#: particles per slab of :func:`friends_of_friends` (its memory: about 16 bytes per linked
#: pair in a slab, 2^16 particles at a few hundred neighbours each: tens of MB)
FOF_CHUNK = 1 << 16


# --------------------------------------------------------------------------------------
# friends of friends

def friends_of_friends(pos: np.ndarray, link: float, chunk: int = FOF_CHUNK,
                       leafsize: int = 16, box: float | None = None,
                       runtime: Any = None) -> np.ndarray:
    """Friends-of-friends groups: particles i and j are linked when |x_i - x_j| <= ``link``
    (open boundaries; with ``box``, the side of a periodic cube, on the nearest image); a
    group is a connected set of links.

    ``pos``: (N, 3) positions, ``link`` in the same units.  Returns int64 labels (N,):
    0 .. n_groups - 1, single particles included, groups numbered in the order of their
    first particle (the group of particle 0 is 0).

    Memory stays bounded: the particles are taken in slabs of about ``chunk`` particles
    along the longest axis (whole bins at least ``link`` wide: :func:`_slabs`, a counting
    order rather than a sort); each slab, with the next bin, gets its own cKDTree and its
    linked pairs (``query_pairs``, 16 bytes a pair, one slab's pairs at a time), reduced
    at once by union-find to one edge per linked particle (particle -> the first particle
    of its group in the slab); union-find over those edges of all slabs gives the groups,
    numbered without a sort.  Time: O(N log N + linked pairs) in the slabs, shared among
    threads, one per core (memory: one slab's pairs per thread), O(N) outside them.
    A periodic box adds, for each particle within ``link`` of a face, its images across
    that face (and edge and corner) as ghosts that carry the particle's own index, so the
    same slabs link across the faces.

    ``runtime``: an OpenCL :class:`~hybridtree.device.runtime.Runtime` to link on
    (:mod:`hybridtree.analysis.halos.fof_device`: a grid of cells, labels by min-label
    propagation; the same groups but for pairs within ~1e-6 of the linking length), where
    it can take the case; the host's k-d trees otherwise (and without one).
    """
    pos = np.asarray(pos, dtype=np.float64)
    if pos.ndim != 2 or pos.shape[1] != 3:
        raise UserInputError(f"pos must have shape (N, 3), not {pos.shape}")
    link = float(link)
    if not (link > 0 and math.isfinite(link)):
        raise UserInputError(f"link must be a positive finite number, not {link}")
    if not all_finite(pos):
        raise UserInputError("pos has non-finite values")
    n = len(pos)
    if n == 0:
        return np.zeros(0, np.int64)
    if runtime is not None:
        from . import fof_device            # pyopencl: only where a device is asked for
        if fof_device.usable(runtime, n):
            if box is not None:
                pos = _wrapped(pos, link, float(box))
            return _first_member_labels(fof_device.device_roots(runtime, pos, link, box))
    chunk = max(int(chunk), 1)
    index = np.int32 if n < 2 ** 31 else np.int64
    origin = np.arange(n, dtype=index)
    if box is not None:
        pos, origin = _with_ghosts(pos, origin, link, float(box))
    if len(pos) <= chunk:
        src, dst = _window_edges(pos, origin, link, leafsize)
    else:
        order, bounds = _slabs(pos, link, chunk)

        def slab(k: int) -> tuple[np.ndarray, np.ndarray]:
            members = order[bounds[k, 0]:bounds[k, 1]]
            return _window_edges(pos[members], origin[members], link, leafsize)

        # the slabs on every core (cKDTree lets the GIL go while it builds and pairs);
        # map keeps the slabs' order, so the edges are the same whatever the threads
        with ThreadPoolExecutor(max(1, min(len(bounds), os.cpu_count() or 1))) as pool:
            edges = list(pool.map(slab, range(len(bounds))))
        srcs, dsts = [e[0] for e in edges], [e[1] for e in edges]
        del order, edges
        src, dst = np.concatenate(srcs), np.concatenate(dsts)
        del srcs, dsts
    return _first_member_labels(_union_find(n, src, dst))


def _first_member_labels(roots: np.ndarray) -> np.ndarray:
    """Labels 0, 1, ... numbered in the order of each group's first particle, from each
    particle's root (the smallest particle of its group, :func:`_union_find`): a group's
    label counts the roots before its own.  What ``np.unique(roots,
    return_inverse=True)[1]`` gives, without its sort."""
    is_root = roots == np.arange(len(roots), dtype=roots.dtype)
    return (np.cumsum(is_root, dtype=np.int64) - 1)[roots]


#: the most bins along the slab axis: their index fits int16, which numpy sorts by radix
_MAX_BINS = 32000


def _slabs(pos: np.ndarray, link: float, chunk: int) -> tuple[np.ndarray, np.ndarray]:
    """The particles in slabs along the longest axis: ``order`` (their rows, by bin) and
    ``bounds`` (k, 2): slab k is ``order[bounds[k, 0]:bounds[k, 1]]``.  Bins at least
    ``link`` wide (so a particle's partners lie in its bin or the next), each slab whole
    bins of about ``chunk`` particles (more where one bin holds more) followed by the next
    bin: every linked pair (i, j), x_i <= x_j, lies in the slab of i's bin.  Bins, not a
    sort of the coordinate: a counting order, O(N) (numpy's stable sort of int16 is a
    radix sort)."""
    lows, highs = corners(pos)
    axis = int(np.argmax(highs - lows))
    lo, extent = float(lows[axis]), float(highs[axis] - lows[axis])
    # 1e-6 above link: rounding in (x - lo) / width cannot put partners two bins apart
    width = max(link * (1.0 + 1e-6), extent / (_MAX_BINS - 1), 1e-300)
    n_bins = min(int(extent / width) + 1, _MAX_BINS)
    t = pos[:, axis] - lo
    t /= width
    np.minimum(t, n_bins - 1, out=t)
    bins = t.astype(np.int16)
    del t
    order = np.argsort(bins, kind="stable")
    if len(pos) < 2 ** 31:
        order = order.astype(np.int32)
    first = np.zeros(n_bins + 1, np.int64)
    np.cumsum(np.bincount(bins, minlength=n_bins), out=first[1:])
    del bins
    # slab starts: the bins where the running count passes a multiple of chunk
    cuts = np.searchsorted(first, np.arange(0, len(pos), chunk), side="right") - 1
    cuts = cuts[np.r_[True, cuts[1:] != cuts[:-1]]]         # ascending: drop repeats
    ends = np.append(cuts[1:], n_bins)
    bounds = np.stack([first[cuts], first[np.minimum(ends + 1, n_bins)]], axis=1)
    return order, bounds


def _wrapped(pos: np.ndarray, link: float, box: float) -> np.ndarray:
    """``pos`` wrapped into [0, box) (itself where it lies there already), after checking
    that the linking length is below half the periodic ``box``."""
    if not (math.isfinite(box) and 2.0 * link < box):
        raise UserInputError(f"the linking length {link:g} must be below half the box "
                             f"({box:g})")
    if not (pos.min() >= 0.0 and pos.max() < box):    # else in the box already: as mod gives
        pos = np.mod(pos, box)
        pos[pos >= box] = 0.0
    return pos


def _with_ghosts(pos: np.ndarray, origin: np.ndarray, link: float, box: float
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Positions wrapped into [0, box) followed by the images (ghosts) of those within
    ``link`` of a face, for each of the 26 shifts that brings them next to the opposite
    face; and for every row the index of the particle it is (``origin``)."""
    pos = _wrapped(pos, link, box)
    low, high = pos < link, pos >= box - link
    # the 26 shifts look at the few particles near a face only (a thin shell of the box)
    edge = np.flatnonzero((low | high).any(axis=1))
    low, high, near_pos, near_origin = low[edge], high[edge], pos[edge], origin[edge]
    parts, owners = [pos], [origin]
    for shift in np.array(np.meshgrid([-1, 0, 1], [-1, 0, 1], [-1, 0, 1])).T.reshape(-1, 3):
        if not shift.any():
            continue
        near = np.ones(len(edge), bool)
        for a in range(3):
            if shift[a] == 1:
                near &= low[:, a]
            elif shift[a] == -1:
                near &= high[:, a]
        rows = np.flatnonzero(near)
        parts.append(near_pos[rows] + shift * box)
        owners.append(near_origin[rows])
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


def all_finite(a: np.ndarray) -> bool:
    """Whether every value of ``a`` is finite: its smallest and largest are (a NaN makes
    both NaN); two passes without the N-sized mask of ``np.isfinite(a).all()``."""
    return a.size == 0 or bool(np.isfinite(np.min(a)) and np.isfinite(np.max(a)))


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
