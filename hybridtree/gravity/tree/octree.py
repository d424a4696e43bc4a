"""Octree over Morton-sorted particles, built level by level with numpy.

Cells are stored depth-first (pre-order), so the first child of an internal cell c
is c + 1 (the "more" link) and ``next[c]`` is the first cell after c's subtree:
the walk follows these two links and needs no stack.

Splitting rule: a cell with more than ``n_leaf`` particles is split into its
(non-empty) octants.  At the deepest level that the 21-bit keys resolve, a cell
that still holds more than ``n_leaf`` particles (coincident or nearly coincident
particles) is cut into pseudo-children of at most ``n_leaf`` consecutive particles,
with the geometry of their parent.  Hence the depth is at most MAX_LEVEL + 1 = 22
and no leaf holds more than ``n_leaf`` particles, whatever the input.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .moments import cell_moments
from .morton import MAX_LEVEL, Cube, bounding_cube, integer_coords, key_coords, morton_keys

MULTIPOLES = ("monopole", "quadrupole")


@dataclass
class Octree:
    """A built tree.  Arrays over cells are in pre-order; lengths in caller units."""

    cube: Cube
    theta: float
    n_leaf: int
    order: np.ndarray        # (N,) caller index of the i-th particle in tree order
    pos: np.ndarray          # (N, 3) float64 positions in tree order
    mass: np.ndarray         # (N,) float64 masses in tree order
    keys: np.ndarray         # (N,) uint64 sorted Morton keys
    start: np.ndarray        # (C,) first particle of each cell (tree order)
    count: np.ndarray        # (C,) particles in each cell
    level: np.ndarray        # (C,) 0 = root; MAX_LEVEL + 1 for pseudo-children
    parent: np.ndarray       # (C,) parent cell, -1 for the root
    next: np.ndarray         # (C,) first cell after the subtree (C = end of walk)
    is_leaf: np.ndarray      # (C,) bool
    centre: np.ndarray       # (C, 3) geometric centre
    side: np.ndarray         # (C,) side length l
    cell_mass: np.ndarray    # (C,)
    com: np.ndarray          # (C, 3) centre of mass
    s_eff: np.ndarray        # (C,) (l / theta + s)^2, s = |com - centre|
    quad: np.ndarray | None  # (C, 6) traceless Q (xx, yy, zz, xy, xz, yz) about com
    timings: dict = field(default_factory=dict)  # seconds per build phase

    @property
    def n_cells(self) -> int:
        return len(self.start)

    @property
    def depth(self) -> int:
        return int(self.level.max())

    @property
    def radius(self) -> np.ndarray:
        """(C,) radius about the centre of mass of a sphere holding the whole cell."""
        return np.linalg.norm(self.com - self.centre, axis=1) + 0.5 * np.sqrt(3.0) * self.side


def concat_ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenation of arange(s, s + c) for every (s, c)."""
    offsets = np.cumsum(counts) - counts
    return np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(offsets - starts, counts)


def split_cells(keys: np.ndarray, n_leaf: int, max_level: int = MAX_LEVEL):
    """Split sorted keys into cells of at most ``n_leaf`` particles.

    Returns level-order arrays (start, count, level, parent, is_leaf).
    """
    n = len(keys)
    starts = [np.zeros(1, np.int64)]
    counts = [np.array([n], np.int64)]
    levels = [np.zeros(1, np.int64)]
    parents = [np.full(1, -1, np.int64)]
    cur_s, cur_c, cur_id = starts[0], counts[0], np.zeros(1, np.int64)
    n_cells = 1
    level = 0
    while level < max_level:
        sel = cur_c > n_leaf
        if not sel.any():
            break
        ps, pc, pid = cur_s[sel], cur_c[sel], cur_id[sel]
        idx = concat_ranges(ps, pc)
        owner = np.repeat(np.arange(len(ps)), pc)
        prefix = keys[idx] >> np.uint64(3 * (max_level - level - 1))
        new = np.ones(len(idx), bool)
        new[1:] = (prefix[1:] != prefix[:-1]) | (owner[1:] != owner[:-1])
        b = np.flatnonzero(new)
        cur_s = idx[b]
        cur_c = np.diff(np.append(b, len(idx)))
        cur_id = n_cells + np.arange(len(b), dtype=np.int64)
        n_cells += len(b)
        level += 1
        starts.append(cur_s)
        counts.append(cur_c)
        levels.append(np.full(len(b), level, np.int64))
        parents.append(pid[owner[b]])
    if level == max_level:
        sel = cur_c > n_leaf
        if sel.any():  # unresolvable clumps: chunks of n_leaf with the parent's geometry
            ps, pc, pid = cur_s[sel], cur_c[sel], cur_id[sel]
            nch = -(-pc // n_leaf)
            owner = np.repeat(np.arange(len(ps)), nch)
            k = concat_ranges(np.zeros(len(nch), np.int64), nch)   # chunk number in its cell
            cs = ps[owner] + k * n_leaf
            starts.append(cs)
            counts.append(np.minimum(n_leaf, pc[owner] - k * n_leaf))
            levels.append(np.full(len(cs), max_level + 1, np.int64))
            parents.append(pid[owner])
    start = np.concatenate(starts)
    count = np.concatenate(counts)
    lev = np.concatenate(levels)
    parent = np.concatenate(parents)
    is_leaf = np.ones(len(start), bool)
    is_leaf[parent[parent >= 0]] = False
    return start, count, lev, parent, is_leaf


def _leaves(keys: np.ndarray, n_max: int) -> tuple[np.ndarray, ...]:
    """(start, count, parent, level) of the leaves of a split with at most ``n_max`` per
    leaf, in key order."""
    start, count, level, parent, is_leaf = split_cells(keys, n_max)
    o = np.argsort(start[is_leaf], kind="stable")
    return tuple(a[is_leaf][o] for a in (start, count, parent, level))


def leaf_ranges(keys: np.ndarray, n_max: int) -> tuple[np.ndarray, np.ndarray]:
    """(start, count) of the leaves of a split with at most ``n_max`` per leaf, in key order."""
    return _leaves(keys, n_max)[:2]


#: A merged sink group's box (the sum of its sides, in key coordinates) may be at most
#: this ratio (numerator, denominator: 1.5) times the largest such sum of its leaves'
#: boxes.  Two siblings that fill their cells pass (4 s against 3 s), sparse or L-shaped
#: runs do not.  Measured at N = 2e5 (Plummer, groups of 128): with 2 one group whose
#: box reached from the outskirts to the dense core had a list of 31 000 entries (and
#: 182 000 with a longest-side rule), against at most 5 400 for any plain leaf, and the
#: GPU waits for the longest list; with 1.5 the longest is 5 450, groups are 48 % full
#: instead of 28 % and the lists 37 % shorter in sum.
PACK_SPREAD = (3, 2)

#: A merged sink group's box (sum of sides) may also be at most this ratio (numerator,
#: denominator) times the sum of its leaves' boxes' sums: Morton-consecutive siblings can
#: lie diagonally opposite in their parent (children 3 and 4), and a box around both
#: then holds the siblings between them, which the group's walk opens down to their
#: particles.  Cusp with a satellite, 2^20 particles, groups of 256: a leaf of 241 sparse
#: particles joined with one of 2 across their parent passed PACK_SPREAD (233 against
#: 1.5 x 160) with a box around 63 768 particles of the halo's inner part, a list of
#: 173 000 entries (at most 15 295 in groups of 128).  The rule closes 9 more groups of
#: 7 846 (Plummer, 2^20).
PACK_UNION = (1, 1)


def packed_leaf_ranges(keys: np.ndarray, n_max: int) -> tuple[np.ndarray, np.ndarray]:
    """(start, count) of groups of at most ``n_max`` particles: the leaves of a split with
    at most ``n_max`` per leaf, with consecutive sibling leaves (same parent cell) merged
    greedily in key order (a group is closed when the next sibling does not fit, or would
    stretch the group's box beyond :data:`PACK_SPREAD` times its largest leaf box, or beyond
    :data:`PACK_UNION` times its leaves' boxes together).  A
    plain split leaves groups about 30 % full (a parent of n_max + 1 particles has eight
    small children).  Pseudo-children (clumps of equal keys) are not merged.  Boxes are
    integer key-coordinate boxes, so the device build's ``pack_leaves`` kernel gives
    exactly these groups."""
    s, c, par, lev = _leaves(keys, n_max)
    m = len(s)
    first = np.ones(m, bool)            # first leaf of a run of siblings
    first[1:] = (par[1:] != par[:-1]) | (lev[1:] > MAX_LEVEL)
    run = np.flatnonzero(first)
    run_len = np.diff(np.append(run, m))
    ic = key_coords(keys)
    lo, hi = np.minimum.reduceat(ic, s, axis=0), np.maximum.reduceat(ic, s, axis=0)
    side = (hi - lo).sum(axis=1)
    starts = first.copy()
    fill, glo, ghi, gside = c[run].astype(np.int64), lo[run], hi[run], side[run]
    gsum = side[run].astype(np.int64)           # the sum of the group's leaves' sums
    (num, den), (unum, uden) = PACK_SPREAD, PACK_UNION
    for k in range(1, int(run_len.max()) if m else 0):   # runs of at most 8 leaves
        live = np.flatnonzero(run_len > k)
        i = run[live] + k
        nlo, nhi = np.minimum(glo[live], lo[i]), np.maximum(ghi[live], hi[i])
        nside = np.maximum(gside[live], side[i])
        union = (nhi - nlo).sum(axis=1)
        new = (fill[live] + c[i] > n_max) | (den * union > num * nside) | \
            (uden * union > unum * (gsum[live] + side[i]))
        starts[i] = new
        fill[live] = np.where(new, c[i], fill[live] + c[i])
        glo[live] = np.where(new[:, None], lo[i], nlo)
        ghi[live] = np.where(new[:, None], hi[i], nhi)
        gside[live] = np.where(new, side[i], nside)
        gsum[live] = np.where(new, side[i], gsum[live] + side[i])
    g = np.flatnonzero(starts)
    return s[g], np.add.reduceat(c, g) if m else c


def check_build_args(n: int, theta: float, n_leaf: int, multipole: str) -> None:
    """ValueError for arguments that no tree build (host or device) accepts."""
    if multipole not in MULTIPOLES:
        raise ValueError(f"multipole must be one of {MULTIPOLES}, got {multipole!r}")
    if not (n_leaf >= 1):
        raise ValueError(f"n_leaf must be >= 1, got {n_leaf}")
    if not (theta > 0.0):
        raise ValueError(f"theta must be > 0, got {theta}")
    if n == 0:
        raise ValueError("cannot build a tree of zero particles")


def build_tree(pos: np.ndarray, mass: np.ndarray, theta: float = 0.5, n_leaf: int = 16,
               multipole: str = "monopole", cube: Cube | None = None) -> Octree:
    """Build the octree of ``pos`` (N, 3) float64 with masses ``mass`` (N,).

    ``theta`` enters only through S_eff; ``cube`` defaults to the bounding cube.
    """
    check_build_args(len(pos), theta, n_leaf, multipole)
    t = {}
    t0 = time.perf_counter()
    cube = cube or bounding_cube(pos)
    ic = integer_coords(pos, cube)
    keys = morton_keys(ic)
    t1 = time.perf_counter()
    t["keys"] = t1 - t0
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    ic = ic[order]
    spos = pos[order]
    smass = mass[order]
    t2 = time.perf_counter()
    t["sort"] = t2 - t1

    start, count, level, parent, is_leaf = split_cells(keys, n_leaf)
    pre = np.lexsort((level, start))          # depth-first order: by start, parent first
    rank = np.empty_like(pre)
    rank[pre] = np.arange(len(pre))
    start, count, level, is_leaf = start[pre], count[pre], level[pre], is_leaf[pre]
    parent = parent[pre]
    parent = np.where(parent >= 0, rank[np.maximum(parent, 0)], -1)
    nxt = np.searchsorted(start, start + count, side="left")
    geo_level = np.minimum(level, MAX_LEVEL)
    side = cube.side / np.exp2(geo_level)
    cell_ic = ic[start] >> (MAX_LEVEL - geo_level).astype(np.uint64)[:, None]
    centre = cube.corner + (cell_ic.astype(np.float64) + 0.5) * side[:, None]
    t3 = time.perf_counter()
    t["cells"] = t3 - t2

    cmass, com, quad = cell_moments(spos, smass, start, count, level, parent, is_leaf, centre,
                                    quadrupole=(multipole == "quadrupole"))
    s = np.sqrt(np.sum((com - centre) ** 2, axis=1))
    s_eff = (side / theta + s) ** 2
    t["moments"] = time.perf_counter() - t3
    return Octree(cube=cube, theta=float(theta), n_leaf=int(n_leaf), order=order, pos=spos,
                  mass=smass, keys=keys, start=start, count=count, level=level, parent=parent,
                  next=nxt, is_leaf=is_leaf, centre=centre, side=side, cell_mass=cmass, com=com,
                  s_eff=s_eff, quad=quad, timings=t)
