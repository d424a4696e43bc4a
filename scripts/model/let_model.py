#!/usr/bin/env python3
"""Beyond one node, on paper: LET volumes for K = 8 ... 1024 processes and a network model.

For each particle set (``plummer``; ``halo_sat``: a Hernquist halo with a satellite) and
each N, the script decomposes the particles for K processes as the MPI run does
(``hybridtree.parallel.domain``: a random sample of 2000 particles per process, cut into
equal-count cuboids of ``grid_shape(K)``), builds every process's tree in the global
power-of-two cube (``hybridtree.parallel.forces``) and counts, without walking, the
entries of the soft LET (all of it, the same selection as the normal scheme's LET) and
of the hard LET (cells beyond r_out left out) that every process sends to every other
one: accepted cells and particles of opened leaves for the other process's *particle*
bounding box, exactly what ``hybridtree.parallel.let.select_let`` selects
(tests/parallel/test_let_model.py checks the counts against it).  From the volumes and a network
model (bandwidth per GPU, a fixed cost per message) and the measured one-H100 step time
it predicts the time per unit of simulated time (n_hard hard steps) and the parallel
efficiency against K for the normal and the hybrid scheme.  docs/let_model.md has the
method, the model and the results.

    .venv/bin/python scripts/model/let_model.py --quick                       # smoke run, ~3 s
    .venv/bin/python scripts/model/let_model.py --n 2^22 --out let22.json --plot let.png
    python scripts/model/let_model.py --n 2^24 2^26 --out let.json --plot docs/let_model.png
    python scripts/model/let_model.py --replot let22.json let.json --plot docs/let_model.png

Units: lengths in the particle set's units (Hénon units for Plummer, the halo's scale
radius for halo_sat), times in seconds, bytes, bandwidth in bytes per second.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:                 # run from a checkout without installing
    sys.path.insert(0, str(ROOT))

from hybridtree import ics# noqa: E402
from hybridtree.parallel.domain import Domains, cut_samples, grid_shape  # noqa: E402
from hybridtree.parallel.forces import global_cube  # noqa: E402
from hybridtree.gravity.tree import Octree  # noqa: E402
from hybridtree.gravity.tree.moments import cell_moments  # noqa: E402
from hybridtree.gravity.tree.morton import MAX_LEVEL, Cube, integer_coords, key_coords, morton_keys  # noqa: E402
from hybridtree.gravity.tree.octree import concat_ranges as _concat_ranges, split_cells  # noqa: E402

MODELS = ("plummer", "halo_sat")
DEFAULT_PROCS = (8, 16, 32, 64, 128, 256, 512, 1024)

#: Bytes of one LET entry on the wire: the device LET's rows (hybridtree.parallel.
#: device_let.let_rows) are position (3 × f8) and mass (f8) = 32 bytes, for a particle or
#: a monopole cell alike (the host path's LET_DTYPE adds an i8 kind: 40 bytes).
ENTRY_BYTES = 32

#: Seconds per particle of a device tree build on the H100 (round 19: 0.0111 s at 2^22,
#: one process): the merged tree of local particles and received entries is one more
#: build per force.
BUILD_S_PER_PARTICLE = 0.0111 / 2 ** 22

#: Measured wall seconds per step of a plain (normal) monopole run on one H100 against
#: N (docs/history.md, session 7, scripts/bench/step.py runs: θ = 0.5, ε = 0.01, Plummer;
#: the whole step: device tree build, walk, kicks/drifts, reductions).
H100_STEP_S = ((2 ** 20, 0.0190), (2 ** 22, 0.0400), (2 ** 24, 0.1322))

#: Cost of one hard force relative to one full force on the H100: from the same session's
#: hybrid step (one soft + n_hard = 4 hard forces) against the plain step, with the soft
#: force taken as costly as a full one: (0.1388 - 0.0400) / (4 × 0.0400) = 0.62 at 2^22,
#: (0.4547 - 0.1322) / (4 × 0.1322) = 0.61 at 2^24.  The hard walk does only 17 % of the
#: interactions (scripts/bench/step.py hybrid), but lists, launches and the rebuild stay.
HARD_FRACTION = 0.61

#: Halo-with-satellite set: mass fraction, scale radius (halo scale radii) and distance of
#: the satellite from the halo's centre; its truncation radius in its own scale radii.
SAT_FRACTION, SAT_SCALE, SAT_DISTANCE, SAT_RMAX = 0.1, 0.1, 5.0, 10.0


# --------------------------------------------------------------------------------------
# Particle sets (positions only: a static count needs no velocities)
# --------------------------------------------------------------------------------------


#: Particles per random stream of the position generators: chunk c of a sphere with seed
#: ``seed`` draws from ``SeedSequence(seed, spawn_key=(c,))``, so the particles do not
#: depend on how many threads make them.
CHUNK = 1 << 20


def _chunks(n: int, size: int | None = None) -> list[tuple[int, int, int]]:
    """(index, first, end) of the chunks of ``size`` (default :data:`CHUNK`) that cover
    range(n)."""
    size = size or CHUNK
    return [(c, a, min(n, a + size)) for c, a in enumerate(range(0, n, size))]


def _threads(fn, items: list, jobs: int) -> list:
    """``[fn(*item) for item in items]`` on ``jobs`` threads (numpy's big array operations
    release the GIL, so chunks of one array run in parallel)."""
    if jobs <= 1 or len(items) <= 1:
        return [fn(*item) for item in items]
    with ThreadPoolExecutor(min(jobs, len(items))) as ex:
        return list(ex.map(lambda item: fn(*item), items))


def _directions(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` unit vectors uniform on the sphere (n, 3)."""
    z = rng.uniform(-1.0, 1.0, n)
    phi = rng.uniform(0.0, 2.0 * np.pi, n)
    s = np.sqrt(1.0 - z * z)
    return np.stack([s * np.cos(phi), s * np.sin(phi), z], axis=1)


def _plummer_chunk(rng: np.random.Generator, n: int, r_max: float) -> np.ndarray:
    m_max = (r_max * r_max / (1.0 + r_max * r_max)) ** 1.5    # M(<r_max) / M
    u = rng.uniform(0.0, m_max, n)
    r = 1.0 / np.sqrt(np.maximum(u, 1e-300) ** (-2.0 / 3.0) - 1.0)
    return (3.0 * np.pi / 16.0) * r[:, None] * _directions(rng, n)


def _hernquist_chunk(rng: np.random.Generator, n: int, r_max: float) -> np.ndarray:
    m_cut = 1.0 / (1.0 + 1.0 / r_max) ** 2                    # M(<r_max) / M
    s = np.sqrt(rng.uniform(0.0, 1.0, n) * m_cut)              # s = r / (1 + r)
    return (s / (1.0 - s))[:, None] * _directions(rng, n)


def _sphere(chunk_fn, n: int, seed: int, r_max: float, jobs: int) -> np.ndarray:
    """(n, 3) positions from ``chunk_fn`` per chunk (own stream each), not yet centred."""
    out = np.empty((n, 3))

    def fill(c: int, a: int, b: int) -> None:
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(c,)))
        out[a:b] = chunk_fn(rng, b - a, r_max)

    _threads(fill, _chunks(n), jobs)
    return out


def plummer_positions(n: int, seed: int = 1, r_max: float = 100.0, jobs: int = 1) -> np.ndarray:
    """(n, 3) positions of a Plummer sphere in Hénon units (scale radius 3π/16), truncated
    at ``r_max`` scale radii, centre of mass at the origin: the distribution of
    ``hybridtree.ics.plummer`` (not its random numbers: the truncated mass profile is
    inverted directly and no velocities are drawn, which a static count does not need)."""
    pos = _sphere(_plummer_chunk, n, seed, r_max, jobs)
    return pos - pos.mean(axis=0)


def hernquist_positions(n: int, seed: int = 1, r_max: float = 100.0, jobs: int = 1) -> np.ndarray:
    """(n, 3) positions of a Hernquist sphere (scale radius 1) truncated at ``r_max``,
    centre of mass at the origin: the distribution of ``hybridtree.ics.hernquist`` (its
    inversion of M(<r) = r² / (1 + r)², no velocities)."""
    pos = _sphere(_hernquist_chunk, n, seed, r_max, jobs)
    return pos - pos.mean(axis=0)


def _sat_counts(n: int) -> tuple[int, int]:
    n_sat = int(round(SAT_FRACTION * n))
    return n - n_sat, n_sat


def satellite_speed() -> float:
    """Circular speed of the halo (mass 1 - SAT_FRACTION, a = 1, truncated at 100 a as
    ``ics.hernquist`` samples it) at the satellite's distance, G = 1."""
    m_cut = 1.0 / (1.0 + 1.0 / 100.0) ** 2
    r = SAT_DISTANCE
    m_in = (1.0 - SAT_FRACTION) * r * r / (r + 1.0) ** 2 / m_cut
    return math.sqrt(m_in / r)


def halo_sat_positions(n: int, seed: int = 1, jobs: int = 1) -> np.ndarray:
    """(n, 3) positions of the :func:`halo_sat` model (its distribution, drawn without
    velocities): halo of n - round(0.1 n) particles, satellite of round(0.1 n)."""
    n_halo, n_sat = _sat_counts(n)
    halo = hernquist_positions(n_halo, seed, jobs=jobs)
    sat = hernquist_positions(n_sat, seed + 1, r_max=SAT_RMAX, jobs=jobs) * SAT_SCALE
    sat[:, 0] += SAT_DISTANCE
    pos = np.concatenate([halo, sat])
    return pos - pos.mean(axis=0)


def halo_sat(n: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A clustered set in phase space (for runs; the count uses
    :func:`halo_sat_positions`): a Hernquist halo (mass 0.9, scale radius a = 1,
    truncated at 100 a) and a Hernquist satellite (mass 0.1, scale radius 0.1 a,
    truncated at 10 of its scale radii, i.e. at 1 a, inside its Jacobi radius ≈ 1.9 a)
    at (5 a, 0, 0) moving on the halo's circular orbit (0, v_c, 0), v_c =
    :func:`satellite_speed` ≈ 0.357; equal masses 1/n, G = 1, centre of mass at rest at
    the origin.  Each sphere is ``ics.hernquist`` in equilibrium on its own, scaled to
    its mass M and radius a (lengths × a, velocities × sqrt(M / a)).

    Returns (positions (n, 3), velocities (n, 3), masses (n,)).
    """
    n_halo, n_sat = _sat_counts(n)
    hp, hv, _ = ics.hernquist(n_halo, seed)
    sp, sv, _ = ics.hernquist(n_sat, seed + 1, r_max=SAT_RMAX)
    hv = hv * math.sqrt(1.0 - SAT_FRACTION)            # a = 1
    sp = sp * SAT_SCALE
    sv = sv * math.sqrt(SAT_FRACTION / SAT_SCALE)
    sp[:, 0] += SAT_DISTANCE
    sv[:, 1] += satellite_speed()
    pos, vel = np.concatenate([hp, sp]), np.concatenate([hv, sv])
    mass = np.full(n, 1.0 / n)
    pos, vel = ics.to_com_frame(pos, vel, mass)
    return pos, vel, mass


def positions(model: str, n: int, seed: int = 1, jobs: int = 1) -> np.ndarray:
    """(n, 3) positions of a particle set named in :data:`MODELS`."""
    if model == "plummer":
        return plummer_positions(n, seed, jobs=jobs)
    if model == "halo_sat":
        return halo_sat_positions(n, seed, jobs=jobs)
    raise ValueError(f"model must be one of {MODELS}, got {model!r}")


def core_spacing(model: str, n: int) -> float:
    """Mean interparticle distance in the core (length units of the set).

    Plummer: at the central density 3 M / (4 π b³), b = 3π/16 (as scripts/bench/mpi.py).
    halo_sat: the halo's cusp has no core; the mean density inside its scale radius
    (M(<a) = 1/4 of the halo, with ics.hernquist's truncation factor) is used instead.
    Both give r_out ≈ 0.013–0.014 of the set's half-mass radius for 3 spacings.
    """
    if model == "plummer":
        return (n * 3 / (4 * math.pi * (3 * math.pi / 16) ** 3)) ** (-1 / 3)
    if model == "halo_sat":
        n_halo, _ = _sat_counts(n)
        n_in = n_halo * 0.25 * (1.0 + 1.0 / 100.0) ** 2
        return (n_in / (4 * math.pi / 3)) ** (-1 / 3)
    raise ValueError(f"model must be one of {MODELS}, got {model!r}")


# --------------------------------------------------------------------------------------
# Decomposition
# --------------------------------------------------------------------------------------


def decompose_offline(pos: np.ndarray, k: int, samples_per_process: int = 2000,
                      seed: int = 0) -> Domains:
    """The run's decomposition (``domain.decompose``) done by one process: equal costs, so
    ``samples_per_process * k`` particles drawn at random from all, cut into equal-count
    cuboids of ``grid_shape(k)``."""
    rng = np.random.default_rng(seed)
    m = min(samples_per_process * k, len(pos))
    take = rng.choice(len(pos), size=m, replace=False)
    return cut_samples(pos[take], grid_shape(k))


def owners(domains: Domains, pos: np.ndarray) -> np.ndarray:
    """``domains.owner(pos)`` with the same searchsorted calls, but each slab and column
    touching only its own particles (``Domains.owner`` masks all N particles once per
    column: 128 passes over 2^26 particles at K = 1024)."""
    nx, ny, nz = domains.shape
    ix = np.clip(np.searchsorted(domains.x[1:-1], pos[:, 0], side="right"), 0, nx - 1)
    out = np.empty(len(pos), np.int64)
    for i in range(nx):
        si = np.flatnonzero(ix == i)
        iy = np.searchsorted(domains.y[i, 1:-1], pos[si, 1], side="right")
        for j in range(ny):
            sj = si[iy == j]
            iz = np.searchsorted(domains.z[i, j, 1:-1], pos[sj, 2], side="right")
            out[sj] = (i * ny + j) * nz + iz
    return out


# --------------------------------------------------------------------------------------
# Trees and vectorised LET counting
# --------------------------------------------------------------------------------------


@dataclass
class LetTree:
    """What the LET selection of one sender's tree needs, cells in any order (root first).

    ``com`` (C, 3), ``s_eff`` (C,) and ``radius`` (C,) as :class:`Octree` has them
    (lengths, lengths squared, lengths); cell c holds particles ``pos[start[c]:start[c] +
    count[c]]``; its children are ``child[child_start[c]:child_start[c] + n_child[c]]``.
    """

    com: np.ndarray
    s_eff: np.ndarray
    radius: np.ndarray
    start: np.ndarray
    count: np.ndarray
    is_leaf: np.ndarray
    child_start: np.ndarray
    n_child: np.ndarray
    child: np.ndarray
    pos: np.ndarray

    @property
    def n_cells(self) -> int:
        return len(self.count)


def _children(parent: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(child_start, n_child, child) in CSR form from a parent array (-1 for the root)."""
    n_cells = len(parent)
    if np.all(parent[1:] >= parent[:-1]):    # the split's level order: already grouped
        child = np.arange(1, n_cells)
    else:
        order = np.argsort(parent, kind="stable")
        child = order[parent[order] >= 0]
    n_child = np.bincount(parent[child], minlength=n_cells)
    child_start = np.cumsum(n_child) - n_child
    return child_start, n_child, child


def let_tree_from_octree(tree: Octree) -> LetTree:
    """The :class:`LetTree` of a built :class:`Octree` (pre-order, root = cell 0)."""
    cs, nc, ch = _children(tree.parent)
    return LetTree(tree.com, tree.s_eff, tree.radius, tree.start, tree.count, tree.is_leaf,
                   cs, nc, ch, tree.pos)


def sender_tree(keys: np.ndarray, pos: np.ndarray, mass: np.ndarray, cube: Cube,
                theta: float = 0.5, n_leaf: int = 16) -> LetTree:
    """The tree that ``build_tree(pos, mass, theta, n_leaf, cube=cube)`` builds, from
    particles already sorted by their Morton ``keys`` in ``cube``, cells left in the
    split's level order (the pre-order permutation changes nothing the count needs).

    The centres, sides, moments (``cell_moments``), S_eff and radii use the same float64
    operations as ``build_tree`` and ``Octree.radius``, so every opening decision is the
    same as the reference selection's.
    """
    start, count, level, parent, is_leaf = split_cells(keys, n_leaf)
    geo_level = np.minimum(level, MAX_LEVEL)
    side = cube.side / np.exp2(geo_level)
    cell_ic = key_coords(keys[start]).astype(np.uint64) >> \
        (MAX_LEVEL - geo_level).astype(np.uint64)[:, None]
    centre = cube.corner + (cell_ic.astype(np.float64) + 0.5) * side[:, None]
    _, com, _ = cell_moments(pos, mass, start, count, level, parent, is_leaf, centre)
    s = np.sqrt(np.sum((com - centre) ** 2, axis=1))
    s_eff = (side / theta + s) ** 2
    radius = np.linalg.norm(com - centre, axis=1) + 0.5 * np.sqrt(3.0) * side
    cs, nc, ch = _children(parent)
    return LetTree(com, s_eff, radius, start, count, is_leaf, cs, nc, ch, pos)


@dataclass
class LetCounts:
    """Sizes of one sender's LETs for B receiving boxes: accepted cells and particles of
    opened leaves (B,) each, the opening tests done, and (hard LETs only) the entries of
    the *tight* hard LET, which keeps only cells whose centre of mass and particles that
    lie within r_out of the box (None for soft LETs)."""

    cells: np.ndarray
    parts: np.ndarray
    tests: int
    tight_cells: np.ndarray | None = None
    tight_parts: np.ndarray | None = None


def _box_d2(lo: np.ndarray, hi: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``let.box_distance2``'s operations for one box per point: lo, hi, p (m, 3)."""
    d = np.maximum(np.maximum(lo - p, 0.0), p - hi)
    return np.einsum("ij,ij->i", d, d)


def count_lets(tree: LetTree, lo: np.ndarray, hi: np.ndarray, r_out: float | None,
               max_pairs: int = 1 << 23) -> tuple[LetCounts, LetCounts | None]:
    """Sizes of the soft LETs and (``r_out`` given) the hard LETs of ``tree`` for B boxes
    [lo[b], hi[b]] ((B, 3) each) at once: (soft, hard or None).

    ``cells`` and ``parts`` are the lengths of ``select_let(tree, lo[b], hi[b])``'s and
    ``select_let(tree, lo[b], hi[b], r_out)``'s two arrays for every b.  One walk goes
    down level by level with a frontier of (cell, box) pairs, so it tests only the cells
    whose parent that box opened (``select_let`` tests every cell once per box; at
    K = 1024 that would be ~10^6 passes over a whole tree).  A pair also carries whether
    the hard walk still visits it: the hard walk's cells are a subset of the soft walk's
    (it opens what the soft one opens, minus what lies beyond r_out).  Boxes are taken in
    chunks of at most ``max_pairs`` / cells, which bounds the frontier's memory.
    """
    n_box = len(lo)
    hard = r_out is not None
    s_cells, s_parts = np.zeros(n_box, np.int64), np.zeros(n_box, np.int64)
    h_cells, h_parts = np.zeros(n_box, np.int64), np.zeros(n_box, np.int64)
    t_cells, t_parts = np.zeros(n_box, np.int64), np.zeros(n_box, np.int64)
    s_tests = h_tests = 0
    r2 = r_out * r_out if hard else 0.0
    chunk = max(1, min(n_box, max_pairs // max(tree.n_cells, 1)))
    for b0 in range(0, n_box, chunk):
        b1 = min(n_box, b0 + chunk)
        fb = np.arange(b0, b1)                    # box of each frontier pair
        fc = np.zeros(b1 - b0, np.int64)          # cell of each frontier pair: the root
        fh = np.ones(b1 - b0, bool)               # the hard walk visits this pair too
        while len(fc):
            s_tests += len(fc)
            d2 = _box_d2(lo[fb], hi[fb], tree.com[fc])
            accept = d2 > tree.s_eff[fc]
            leaf = tree.is_leaf[fc]
            s_cells += np.bincount(fb[accept], minlength=n_box)
            opened = ~accept & leaf
            s_parts += np.bincount(fb[opened], weights=tree.count[fc[opened]],
                                   minlength=n_box).astype(np.int64)
            down = ~accept & ~leaf
            if hard:
                h_tests += int(np.count_nonzero(fh))
                # the hard LET skips cells whose bounding sphere lies beyond r_out
                live = fh & ~(d2 > (r_out + tree.radius[fc]) ** 2)
                took = accept & live
                h_cells += np.bincount(fb[took], minlength=n_box)
                t_cells += np.bincount(fb[took & (d2 <= r2)], minlength=n_box)
                hop = opened & live
                oc, ob = fc[hop], fb[hop]
                idx = _concat_ranges(tree.start[oc], tree.count[oc])
                pb = np.repeat(ob, tree.count[oc])
                # of an opened leaf only the particles within r_out travel (select_let)
                near = _box_d2(lo[pb], hi[pb], tree.pos[idx]) <= r2
                h_parts += np.bincount(pb[near], minlength=n_box)
                t_parts += np.bincount(pb[near], minlength=n_box)
                fh = (live & down)[down]
            fc, fb = fc[down], fb[down]
            nch = tree.n_child[fc]
            fb = np.repeat(fb, nch)
            if hard:
                fh = np.repeat(fh, nch)
            fc = tree.child[_concat_ranges(tree.child_start[fc], nch)]
    soft = LetCounts(s_cells, s_parts, s_tests)
    return soft, (LetCounts(h_cells, h_parts, h_tests, t_cells, t_parts) if hard else None)


def count_let(tree: LetTree, lo: np.ndarray, hi: np.ndarray, r_out: float | None = None,
              max_pairs: int = 1 << 23) -> LetCounts:
    """The soft (``r_out`` None) or the hard LET sizes of :func:`count_lets`."""
    soft, hard = count_lets(tree, lo, hi, r_out, max_pairs)
    return soft if r_out is None else hard


# --------------------------------------------------------------------------------------
# Counting for one particle set and one K
# --------------------------------------------------------------------------------------


@dataclass
class Prepared:
    """One particle set, its Morton keys in the global cube and its r_out."""

    model: str
    n: int
    pos: np.ndarray          # (N, 3)
    keys: np.ndarray         # (N,) uint64 keys in ``cube``
    cube: Cube
    r_out: float
    seconds: dict


def prepare(model: str, n: int, seed: int = 1, r_out_factor: float = 3.0,
            pos: np.ndarray | None = None, jobs: int = 1) -> Prepared:
    """Positions, the global power-of-two cube (as ``forces.global_cube``) and the keys."""
    t0 = time.perf_counter()
    if pos is None:
        pos = positions(model, n, seed, jobs)
    t1 = time.perf_counter()
    box = np.stack([pos.min(axis=0), pos.max(axis=0)])
    cube = global_cube(box[None])
    keys = np.empty(len(pos), np.uint64)

    def fill(c: int, a: int, b: int) -> None:
        keys[a:b] = morton_keys(integer_coords(pos[a:b], cube))

    _threads(fill, _chunks(len(pos)), jobs)
    t2 = time.perf_counter()
    return Prepared(model, len(pos), pos, keys, cube, r_out_factor * core_spacing(model, len(pos)),
                    {"ics": t1 - t0, "keys": t2 - t1})


# State that forked workers inherit (set before the pool starts; never pickled).
_SHARED: dict = {}


#: The (k, k) count matrices [sender, receiver] that :func:`count_all` returns.
MATRICES = ("soft_cells", "soft_parts", "hard_cells", "hard_parts", "tight_cells",
            "tight_parts")


def _particles_of(s: int) -> np.ndarray:
    """Indices of process ``s``'s particles, in the caller's order."""
    g = _SHARED
    return g["perm"][g["bounds"][s]:g["bounds"][s + 1]]


def _box_of(s: int) -> tuple[int, np.ndarray, np.ndarray]:
    """(s, lower corner, upper corner) of process ``s``'s particles."""
    p = _SHARED["pos"][_particles_of(s)]
    return s, p.min(axis=0), p.max(axis=0)


def _count_sender(s: int, lo: np.ndarray, hi: np.ndarray, receivers: np.ndarray
                  ) -> tuple[int, dict[str, np.ndarray], int, int, float, float]:
    """Soft, hard and tight-hard LET counts of sender ``s`` for the ``receivers`` (not s)
    with particle boxes ``lo``, ``hi`` (k, 3): (s, {matrix name: row (k,)}, soft tests,
    hard tests, seconds building the tree, seconds counting).  The sender sorts its own
    particles by key (stable, as ``build_tree`` does)."""
    g = _SHARED
    k = len(lo)
    rows = {name: np.zeros(k, np.int64) for name in MATRICES}
    recv = receivers[receivers != s]
    idx = _particles_of(s)
    if len(idx) == 0 or len(recv) == 0:
        return s, rows, 0, 0, 0.0, 0.0
    t0 = time.perf_counter()
    keys = g["keys"][idx]
    order = np.argsort(keys, kind="stable")
    idx = idx[order]
    tree = sender_tree(keys[order], g["pos"][idx], np.full(len(idx), 1.0 / g["n"]), g["cube"],
                       g["theta"], g["n_leaf"])
    t1 = time.perf_counter()
    soft, hard = count_lets(tree, lo[recv], hi[recv], g["r_out"])
    t2 = time.perf_counter()
    for name, v in (("soft_cells", soft.cells), ("soft_parts", soft.parts),
                    ("hard_cells", hard.cells), ("hard_parts", hard.parts),
                    ("tight_cells", hard.tight_cells), ("tight_parts", hard.tight_parts)):
        rows[name][recv] = v
    return s, rows, soft.tests, hard.tests, t1 - t0, t2 - t1


def count_all(prep: Prepared, k: int, theta: float = 0.5, n_leaf: int = 16,
              samples_per_process: int = 2000, seed: int = 0, jobs: int = 1) -> dict:
    """Decompose ``prep`` for ``k`` processes and count every pair's LET entries.

    Returns a dict: ``local`` (k,) particles per process, the :data:`MATRICES` (k, k)
    int64 [sender, receiver], opening tests done (``tests_soft``, ``tests_hard``) and
    ``seconds`` per phase.  ``jobs`` > 1: owners on threads, senders on forked processes.
    """
    t0 = time.perf_counter()
    domains = decompose_offline(prep.pos, k, samples_per_process, seed + k)
    own = np.empty(prep.n, np.int16 if k < 2 ** 15 else np.int32)   # int16: radix sort

    def fill(c: int, a: int, b: int) -> None:
        own[a:b] = owners(domains, prep.pos[a:b])

    _threads(fill, _chunks(prep.n), jobs)
    perm = np.argsort(own, kind="stable")     # by owner, the caller's order within each
    bounds = np.searchsorted(own[perm], np.arange(k + 1))
    del own
    local = np.diff(bounds)
    full = np.flatnonzero(local > 0)
    senders = full[np.argsort(-local[full], kind="stable")]    # largest first
    t1 = time.perf_counter()

    _SHARED.update(pos=prep.pos, keys=prep.keys, perm=perm, bounds=bounds, cube=prep.cube,
                   theta=theta, n_leaf=n_leaf, r_out=prep.r_out, n=prep.n)
    lo, hi = np.full((k, 3), np.inf), np.full((k, 3), -np.inf)
    try:
        if jobs > 1 and len(senders) > 1:
            ctx = multiprocessing.get_context("fork")   # workers share the arrays (COW)
            with ctx.Pool(min(jobs, len(senders))) as pool:
                for s, a, b in pool.imap_unordered(_box_of, senders.tolist()):
                    lo[s], hi[s] = a, b
                t2 = time.perf_counter()
                results = list(pool.starmap(_count_sender,
                                            [(int(s), lo, hi, full) for s in senders],
                                            chunksize=1))
        else:
            for s in senders:
                _, lo[s], hi[s] = _box_of(int(s))
            t2 = time.perf_counter()
            results = [_count_sender(int(s), lo, hi, full) for s in senders]
    finally:
        _SHARED.clear()
    mats = {name: np.zeros((k, k), np.int64) for name in MATRICES}
    tests = [0, 0]
    cpu = [0.0, 0.0]
    for s, rows, ts, th, c_tree, c_count in results:
        for name in MATRICES:
            mats[name][s] = rows[name]
        tests[0] += ts
        tests[1] += th
        cpu[0] += c_tree
        cpu[1] += c_count
    t3 = time.perf_counter()
    # wall seconds per phase; cpu_*: summed over the senders' workers
    return {"k": k, "shape": list(domains.shape), "local": local, **mats,
            "tests_soft": tests[0], "tests_hard": tests[1],
            "seconds": {"decompose": t1 - t0, "boxes": t2 - t1, "count": t3 - t2,
                        "cpu_tree": cpu[0], "cpu_count": cpu[1]}}


# --------------------------------------------------------------------------------------
# Network and compute model
# --------------------------------------------------------------------------------------


def step_time(n: float, points: tuple = H100_STEP_S) -> float:
    """Seconds per plain monopole step of ``n`` particles on one H100: power law between
    measured points (log-log interpolation), the end slopes beyond them."""
    x = np.log([p[0] for p in points])
    y = np.log([p[1] for p in points])
    lx = math.log(max(n, 1.0))
    i = int(np.clip(np.searchsorted(x, lx) - 1, 0, len(x) - 2))
    slope = (y[i + 1] - y[i]) / (x[i + 1] - x[i])
    return float(math.exp(y[i] + slope * (lx - x[i])))


@dataclass(frozen=True)
class Network:
    """Per GPU: ``bandwidth`` bytes/s each way (full duplex), ``latency`` s per message,
    ``entry_bytes`` per LET entry on the wire."""

    bandwidth: float = 25e9
    latency: float = 2e-6
    entry_bytes: int = ENTRY_BYTES


def volumes(counts: dict, cell_entries: int = 1) -> dict:
    """Per process entries and messages sent and received, soft and hard.

    ``cell_entries``: LET entries per accepted cell (1 monopole, 6 quadrupole)."""
    out = {}
    for part in ("soft", "hard", "tight"):
        e = counts[f"{part}_cells"] * cell_entries + counts[f"{part}_parts"]
        out[part] = {"sent": e.sum(axis=1), "recv": e.sum(axis=0),
                     "msg_sent": (e > 0).sum(axis=1), "msg_recv": (e > 0).sum(axis=0)}
    return out


def force_time(local: np.ndarray, vol: dict, net: Network, fraction: float,
               compute: str = "merged") -> tuple[float, float]:
    """(communication, computation) seconds of one force, no overlap between them.

    Communication: the exchange ends when the slowest process has sent and received,
    each direction taking bytes / bandwidth + messages × latency (full duplex).
    Computation, the slowest process: ``fraction`` × the measured one-GPU step time of
    its n_local particles, plus (``compute`` "merged", the run's way: one more tree of
    local particles and received entries, walked by the local groups only, so the
    entries stand in for the particles a one-process walk would meet) one more build of
    n_local + n_received particles; or nothing more ("local": received entries cost
    nothing, an upper bound on the efficiency).
    """
    send = vol["sent"] * net.entry_bytes / net.bandwidth + vol["msg_sent"] * net.latency
    recv = vol["recv"] * net.entry_bytes / net.bandwidth + vol["msg_recv"] * net.latency
    comm = float(np.max(np.maximum(send, recv)))
    busy = local > 0
    extra = BUILD_S_PER_PARTICLE * (local + vol["recv"]) if compute == "merged" else 0 * local
    comp = max(fraction * step_time(float(m)) + float(x)
               for m, x in zip(local[busy], extra[busy]))
    return comm, comp


def predict(n: int, counts: dict, net: Network, n_hard: int = 4,
            hard_fraction: float = HARD_FRACTION, soft_fraction: float = 1.0,
            hard_let: str = "hard", compute: str = "merged") -> dict:
    """Seconds per unit of simulated time (one soft step = n_hard hard steps) and the
    parallel efficiency E(K) = T(1) / (K T(K)) for the normal and the hybrid scheme.

    Normal: n_hard full forces, each with the full (= soft) LET.  Hybrid: one soft force
    (soft LET, ``soft_fraction`` × a full force's compute) and n_hard hard forces (hard
    LET, ``hard_fraction``).  K = 1: the same forces without LETs or messages.
    ``hard_let``: "hard" (what ``select_let`` sends today) or "tight" (only cells and
    particles within r_out of the box, see :class:`LetCounts`).
    """
    k = len(counts["local"])
    vol = volumes(counts)
    c_soft, p_soft = force_time(counts["local"], vol["soft"], net, 1.0, compute)
    c_hs, p_hs = force_time(counts["local"], vol["soft"], net, soft_fraction, compute)
    c_hard, p_hard = force_time(counts["local"], vol[hard_let], net, hard_fraction, compute)
    t_normal = n_hard * (c_soft + p_soft)
    t_hybrid = (c_hs + p_hs) + n_hard * (c_hard + p_hard)
    one = step_time(n)
    t1_normal = n_hard * one
    t1_hybrid = soft_fraction * one + n_hard * hard_fraction * one
    # the GPU's own scaling: the same forces with free, instantaneous LETs
    eff_nolet = one / (k * max(step_time(float(m)) for m in counts["local"][counts["local"] > 0]))
    return {"t_normal": t_normal, "t_hybrid": t_hybrid, "eff_nolet": eff_nolet,
            "t1_normal": t1_normal, "t1_hybrid": t1_hybrid,
            "eff_normal": t1_normal / (k * t_normal), "eff_hybrid": t1_hybrid / (k * t_hybrid),
            "hybrid_over_normal": t_hybrid / t_normal,
            "comm_soft": c_soft, "comp_full": p_soft, "comp_soft": p_hs,
            "comm_hard": c_hard, "comp_hard": p_hard, "hard_fraction": hard_fraction,
            "hard_let": hard_let, "compute": compute}


def summarise(prep: Prepared, counts: dict, net: Network, n_hard: int,
              hard_fractions: list[float]) -> dict:
    """One JSON row: LET totals, per-process extremes, and the predictions."""
    k = counts["k"]
    vol = volumes(counts)
    row = {"model": prep.model, "n": prep.n, "k": k, "shape": counts["shape"],
           "r_out": prep.r_out, "entry_bytes": net.entry_bytes,
           "local_max": int(counts["local"].max()), "local_min": int(counts["local"].min()),
           "imbalance": float(counts["local"].max() / counts["local"].mean())}
    for part in ("soft", "hard", "tight"):
        v = vol[part]
        row[f"{part}_cells"] = int(counts[f"{part}_cells"].sum())
        row[f"{part}_parts"] = int(counts[f"{part}_parts"].sum())
        row[f"{part}_entries"] = int(v["sent"].sum())
        row[f"{part}_recv_max"] = int(v["recv"].max())
        row[f"{part}_recv_mean"] = float(v["recv"].mean())
        row[f"{part}_sent_max"] = int(v["sent"].max())
        row[f"{part}_msgs_max"] = int(max(v["msg_sent"].max(), v["msg_recv"].max()))
        row[f"{part}_msgs_mean"] = float(v["msg_sent"].mean())
        row[f"{part}_bytes_max"] = int(max(v["sent"].max(), v["recv"].max()) * net.entry_bytes)
    row["hard_over_soft"] = row["hard_entries"] / max(row["soft_entries"], 1)
    row["tight_over_soft"] = row["tight_entries"] / max(row["soft_entries"], 1)
    row["recv_over_local"] = row["soft_recv_mean"] / (prep.n / k)
    row["tests_soft"], row["tests_hard"] = counts["tests_soft"], counts["tests_hard"]
    row["predictions"] = [predict(prep.n, counts, net, n_hard, f, hard_let=h, compute=c)
                          for c in ("merged", "local") for h in ("hard", "tight")
                          for f in hard_fractions]
    row["seconds"] = counts["seconds"]
    return row


# --------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------


def prediction(row: dict, hard_let: str = "hard", which: int = 0,
               compute: str = "merged") -> dict:
    """The row's prediction for ``hard_let``, its ``which``-th hard fraction, ``compute``."""
    ps = [p for p in row["predictions"] if p["hard_let"] == hard_let and p["compute"] == compute]
    return ps[which]


def _n_label(n: int) -> str:
    e = math.log2(n)
    return f"2^{int(e)}" if e == int(e) else f"{n:,}"


def table(rows: list[dict]) -> str:
    """Markdown table: LET sizes and the main prediction (first hard fraction) per row."""
    head = ("| set | N | K | grid | soft LET recv/proc mean (max) | hard LET recv/proc mean (max) | "
            "hard/soft | tight/soft | msgs/proc soft / hard / tight (max) | T normal s | "
            "T hybrid s | E no LET | E normal | E hybrid | hybrid/normal | E hybrid, tight |")
    lines = [head, "|" + "|".join(["---"] * (head.count("|") - 1)) + "|"]
    for r in rows:
        p, q = prediction(r, "hard"), prediction(r, "tight")
        lines.append(
            f"| {r['model']} | {_n_label(r['n'])} | {r['k']} | "
            f"{'×'.join(map(str, r['shape']))} | {r['soft_recv_mean']:,.0f} ({r['soft_recv_max']:,}) | "
            f"{r['hard_recv_mean']:,.0f} ({r['hard_recv_max']:,}) | {r['hard_over_soft']:.3f} | "
            f"{r['tight_over_soft']:.3f} | "
            f"{r['soft_msgs_max']} / {r['hard_msgs_max']} / {r['tight_msgs_max']} | "
            f"{p['t_normal']:.4f} | {p['t_hybrid']:.4f} | {p['eff_nolet']:.3f} | "
            f"{p['eff_normal']:.3f} | "
            f"{p['eff_hybrid']:.3f} | {p['hybrid_over_normal']:.3f} | {q['eff_hybrid']:.3f} |")
    return "\n".join(lines)


def breakdown(rows: list[dict]) -> str:
    """Markdown table of the per-force terms of the main prediction (seconds) and of the
    efficiencies with the other hard fractions."""
    fr = [p["hard_fraction"] for p in rows[0]["predictions"]
          if p["hard_let"] == "hard" and p["compute"] == "merged"] if rows else []
    extra = "".join(f" E hybrid (f = {f:g}) / tight |" for f in fr[1:])
    head = ("| set | N | K | comm soft | comp full | comm hard | comp hard | comm tight | "
            "soft cells / parts | hard cells / parts | tight cells / parts | "
            "hard/soft, 6 entries per cell (quadrupole) | E normal / hybrid, local compute |"
            + extra)
    lines = [head, "|" + "|".join(["---"] * (head.count("|") - 1)) + "|"]
    for r in rows:
        p, q = prediction(r, "hard"), prediction(r, "tight")
        more = "".join(f" {prediction(r, 'hard', i)['eff_hybrid']:.3f} / "
                       f"{prediction(r, 'tight', i)['eff_hybrid']:.3f} |"
                       for i in range(1, len(fr)))
        lines.append(
            f"| {r['model']} | {_n_label(r['n'])} | {r['k']} | "
            f"{p['comm_soft']:.2e} | {p['comp_full']:.2e} | {p['comm_hard']:.2e} | "
            f"{p['comp_hard']:.2e} | {q['comm_hard']:.2e} | "
            f"{r['soft_cells']:,} / {r['soft_parts']:,} | "
            f"{r['hard_cells']:,} / {r['hard_parts']:,} | "
            f"{r['tight_cells']:,} / {r['tight_parts']:,} | "
            f"{(6 * r['hard_cells'] + r['hard_parts']) / (6 * r['soft_cells'] + r['soft_parts']):.3f} | "
            f"{prediction(r, compute='local')['eff_normal']:.3f} / "
            f"{prediction(r, compute='local')['eff_hybrid']:.3f} |" + more)
    return "\n".join(lines)


def plot(rows: list[dict], path: Path) -> bool:
    """Efficiency, hybrid/normal and hard/soft against K; False without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install -e '.[plot]'): no plot", file=sys.stderr)
        return False
    fig, ax = plt.subplots(1, 3, figsize=(15, 4.5))
    cases = sorted({(r["model"], r["n"]) for r in rows}, key=lambda c: (c[1], c[0]))
    drawn: set[int] = set()
    for ci, (model, n) in enumerate(cases):
        rr = sorted((r for r in rows if r["model"] == model and r["n"] == n), key=lambda r: r["k"])
        k = [r["k"] for r in rr]
        label = f"{model} {_n_label(n)}"
        color = f"C{ci}"
        p = [prediction(r, "hard") for r in rr]
        ax[0].plot(k, [x["eff_normal"] for x in p], "-o", color=color, label=f"{label} normal")
        ax[0].plot(k, [x["eff_hybrid"] for x in p], "--s", color=color, label=f"{label} hybrid")
        if n not in drawn:            # the same for every set of this N
            drawn.add(n)
            ax[0].plot(k, [x["eff_nolet"] for x in p], ":", color="0.3", lw=1,
                       marker=f"${len(drawn)}$", label=f"{_n_label(n)}: free LETs (GPU alone)")
        ax[1].plot(k, [x["hybrid_over_normal"] for x in p], "-o", color=color, label=label)
        ax[2].plot(k, [r["hard_over_soft"] for r in rr], "-o", color=color, label=label)
        ax[2].plot(k, [r["tight_over_soft"] for r in rr], ":^", color=color,
                   label=f"{label} tight")
    ax[2].axhline(0.4, color="k", lw=0.8, ls=":", label="paper: 0.4")
    titles = ("parallel efficiency T(1) / (K T(K))", "hybrid / normal time per unit time",
              "hard LET / soft LET entries")
    for a, t in zip(ax, titles):
        a.set_xscale("log", base=2)
        a.set_xlabel("processes K")
        a.set_title(t, fontsize=10)
        a.grid(alpha=0.3)
    ax[0].set_yscale("log")
    ax[0].legend(fontsize=7)
    ax[1].legend(fontsize=7)
    ax[2].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def _int_expr(text: str) -> int:
    """An integer such as 16777216, 2^24 or 2**24."""
    t = text.replace("**", "^")
    if "^" in t:
        b, e = t.split("^")
        return int(b) ** int(e)
    return int(t)


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=_int_expr, nargs="+", default=[2 ** 24, 2 ** 26],
                    help="particle numbers (2^24 accepted)")
    ap.add_argument("--procs", type=int, nargs="+", default=list(DEFAULT_PROCS))
    ap.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    ap.add_argument("--out", type=Path, help="JSON file for the rows")
    ap.add_argument("--plot", type=Path, help="PNG (needs matplotlib)")
    ap.add_argument("--quick", action="store_true", help="tiny run: N = 2^16, K = 8 ... 64")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="worker processes (senders in parallel)")
    ap.add_argument("--theta", type=float, default=0.5)
    ap.add_argument("--n-leaf", type=int, default=16)
    ap.add_argument("--n-hard", type=int, default=4, help="hard steps per soft step")
    ap.add_argument("--r-out-factor", type=float, default=3.0,
                    help="r_out in mean core interparticle spacings")
    ap.add_argument("--samples", type=int, default=2000, help="decomposition samples per process")
    ap.add_argument("--bandwidth", type=float, default=25e9, help="bytes/s per GPU, each way")
    ap.add_argument("--latency", type=float, default=2e-6, help="seconds per message")
    ap.add_argument("--entry-bytes", type=int, default=ENTRY_BYTES,
                    help="bytes per LET entry (LET_DTYPE: 40; the device LET's x y z m rows: 32)")
    ap.add_argument("--hard-fraction", type=float, nargs="+", default=[HARD_FRACTION, 0.17],
                    help="hard force cost / full force cost (first: the main table)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--replot", type=Path, nargs="+", metavar="JSON",
                    help="no counting: tables (and --plot) from the rows of earlier --out files")
    a = ap.parse_args(argv)
    if a.replot:
        rows = [r for f in a.replot for r in json.loads(f.read_text())["rows"]]
        print(table(rows))
        print()
        print(breakdown(rows))
        if a.plot:
            plot(rows, a.plot)
        return rows
    if a.quick:
        a.n, a.procs = [2 ** 16], [8, 16, 32, 64]
    net = Network(a.bandwidth, a.latency, a.entry_bytes)
    rows: list[dict] = []
    t_start = time.perf_counter()
    print(f"entry {net.entry_bytes} B, network {a.bandwidth:.3g} B/s + {a.latency:.3g} s/message, "
          f"θ = {a.theta}, n_leaf = {a.n_leaf}, monopole, n_hard = {a.n_hard}, "
          f"r_out = {a.r_out_factor} core spacings, hard fractions {a.hard_fraction}, "
          f"{a.jobs} jobs", flush=True)
    for n in a.n:
        for model in a.models:
            prep = prepare(model, n, a.seed, a.r_out_factor, jobs=a.jobs)
            print(f"{model} N = {n}: r_out = {prep.r_out:.4g}, ics {prep.seconds['ics']:.1f} s, "
                  f"keys {prep.seconds['keys']:.1f} s", flush=True)
            for k in a.procs:
                counts = count_all(prep, k, a.theta, a.n_leaf, a.samples, a.seed, a.jobs)
                row = summarise(prep, counts, net, a.n_hard, a.hard_fraction)
                row["seconds"].update(prep.seconds if k == a.procs[0] else {})
                rows.append(row)
                p = row["predictions"][0]
                print(f"  K = {k:5d}: soft {row['soft_entries']:>12,} hard {row['hard_entries']:>12,}"
                      f" (ratio {row['hard_over_soft']:.3f}), E normal {p['eff_normal']:.3f} "
                      f"hybrid {p['eff_hybrid']:.3f}; decompose {row['seconds']['decompose']:.1f} s, "
                      f"boxes {row['seconds']['boxes']:.1f} s, "
                      f"count {row['seconds']['count']:.1f} s", flush=True)
                if a.out:                         # rewritten after every row
                    _write(a, rows, net, time.perf_counter() - t_start)
            del prep
    print()
    print(table(rows))
    print()
    print(breakdown(rows))
    print(f"\ntotal {time.perf_counter() - t_start:.1f} s")
    if a.out:
        _write(a, rows, net, time.perf_counter() - t_start)
    if a.plot:
        plot(rows, a.plot)
    return rows


def _write(a: argparse.Namespace, rows: list[dict], net: Network, seconds: float) -> None:
    header = {"entry_bytes": net.entry_bytes, "bandwidth": net.bandwidth, "latency": net.latency,
              "theta": a.theta, "n_leaf": a.n_leaf, "n_hard": a.n_hard,
              "r_out_factor": a.r_out_factor, "hard_fractions": a.hard_fraction,
              "samples_per_process": a.samples, "h100_step_s": H100_STEP_S, "seed": a.seed,
              "jobs": a.jobs, "total_seconds": seconds}
    a.out.write_text(json.dumps({"header": header, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
