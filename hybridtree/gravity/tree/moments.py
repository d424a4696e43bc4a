"""Cell moments: mass, centre of mass and (optionally) the traceless quadrupole.

Leaves are summed from their particles (they partition the particles, so one
``reduceat`` does all of them); internal cells are summed from their children,
deepest level first.  Sums are taken relative to each cell's geometric centre or
centre of mass, so that cells far from the origin keep full float64 precision.
"""

from __future__ import annotations

import numpy as np


def by_level(level: np.ndarray) -> list[np.ndarray]:
    """Cell indices grouped by level, deepest first (root level excluded)."""
    o = np.argsort(level, kind="stable")
    bounds = np.searchsorted(level[o], np.arange(level.max() + 2))
    return [o[bounds[lv]:bounds[lv + 1]] for lv in range(level.max(), 0, -1)]


def _outer6(d: np.ndarray, w: np.ndarray) -> np.ndarray:
    """w * (3 d d - |d|^2 I) as (xx, yy, zz, xy, xz, yz)."""
    r2 = np.einsum("ij,ij->i", d, d)
    q = np.empty((len(d), 6))
    q[:, 0] = 3 * d[:, 0] * d[:, 0] - r2
    q[:, 1] = 3 * d[:, 1] * d[:, 1] - r2
    q[:, 2] = 3 * d[:, 2] * d[:, 2] - r2
    q[:, 3] = 3 * d[:, 0] * d[:, 1]
    q[:, 4] = 3 * d[:, 0] * d[:, 2]
    q[:, 5] = 3 * d[:, 1] * d[:, 2]
    return q * w[:, None]


def cell_moments(pos: np.ndarray, mass: np.ndarray, start: np.ndarray, count: np.ndarray,
                 level: np.ndarray, parent: np.ndarray, is_leaf: np.ndarray,
                 centre: np.ndarray, quadrupole: bool = False):
    """Return (mass (C,), com (C, 3), quad (C, 6) or None) for cells in any order.

    Positions and masses are in tree order; a cell of zero mass gets its
    geometric centre as centre of mass (it exerts no force either way).
    """
    n_cells = len(start)
    leaves = np.flatnonzero(is_leaf)
    leaves = leaves[np.argsort(start[leaves], kind="stable")]
    lstart = start[leaves]
    owner = np.repeat(np.arange(len(leaves)), count[leaves])   # leaf of each particle
    d = pos - centre[leaves][owner]

    cmass = np.zeros(n_cells)
    moment = np.zeros((n_cells, 3))              # sum m (x - centre), per cell
    cmass[leaves] = np.add.reduceat(mass, lstart)
    moment[leaves] = np.add.reduceat(mass[:, None] * d, lstart, axis=0)
    levels = by_level(level) if n_cells > 1 else []
    for cells in levels:                          # children -> parents, deepest first
        p = parent[cells]
        cmass += np.bincount(p, weights=cmass[cells], minlength=n_cells)
        shifted = moment[cells] + cmass[cells, None] * (centre[cells] - centre[p])
        for k in range(3):
            moment[:, k] += np.bincount(p, weights=shifted[:, k], minlength=n_cells)
    safe = np.where(cmass > 0, cmass, 1.0)
    com = centre + np.where(cmass[:, None] > 0, moment / safe[:, None], 0.0)
    if not quadrupole:
        return cmass, com, None

    quad = np.zeros((n_cells, 6))
    dq = pos - com[leaves][owner]
    quad[leaves] = np.add.reduceat(_outer6(dq, mass), lstart, axis=0)
    for cells in levels:
        p = parent[cells]
        shifted = quad[cells] + _outer6(com[cells] - com[p], cmass[cells])
        for k in range(6):
            quad[:, k] += np.bincount(p, weights=shifted[:, k], minlength=n_cells)
    return cmass, com, quad
