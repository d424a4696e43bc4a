"""Locally essential trees: what one process's tree must send to another process.

A process walks its local tree against the bounding box of another process's particles
with the walk's own opening test (the smallest distance from the box to a cell's centre
of mass against S_eff): accepted cells travel as pseudo-particles (mass at the centre of
mass), the particles of opened leaves travel as they are.  Every sink group of the
receiver lies inside that box, so it would accept every cell the box accepts: the LET is
conservative.  For the hard force (:mod:`hybridtree.splitting`) cells whose bounding
sphere lies farther than r_out from the box are not sent at all (the hard walk skips
them), so hard LETs are much smaller.  Lengths: the caller's units.
"""

from __future__ import annotations

import numpy as np

from ..tree import Octree
from ..tree.moments import _by_level
from ..tree.octree import _concat_ranges

__all__ = ["box_distance2", "select_let", "LET_DTYPE"]

#: A LET entry: a particle (kind 0) or a cell as a pseudo-particle (kind 1).
LET_DTYPE = np.dtype([("pos", "f8", 3), ("mass", "f8"), ("kind", "i8")])


def box_distance2(lo: np.ndarray, hi: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Squared distance from the box [lo, hi] to each point of ``p`` (n, 3) (0 inside)."""
    d = np.maximum(np.maximum(lo - p, 0.0), p - hi)
    return np.einsum("ij,ij->i", d, d)


def select_let(tree: Octree, lo: np.ndarray, hi: np.ndarray, r_out: float | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """(accepted cells, particles of opened leaves in tree order) for the box [lo, hi].

    ``r_out``: the hard part's cut-off (cells wholly beyond it are left out); None: all.
    """
    d2 = box_distance2(lo, hi, tree.com)
    accept = d2 > tree.s_eff
    if r_out is not None:
        skip = d2 > (r_out + tree.radius) ** 2
    else:
        skip = np.zeros(tree.n_cells, bool)
    visited = np.zeros(tree.n_cells, bool)
    visited[0] = True
    goes_down = ~accept & ~skip & ~tree.is_leaf
    for cells in reversed(_by_level(tree.level)):     # root side first
        p = tree.parent[cells]
        visited[cells] = visited[p] & goes_down[p]
    live = visited & ~skip
    cells = np.flatnonzero(live & accept)
    leaves = np.flatnonzero(live & ~accept & tree.is_leaf)
    return cells, _concat_ranges(tree.start[leaves], tree.count[leaves])


def let_entries(tree: Octree, cells: np.ndarray, particles: np.ndarray) -> np.ndarray:
    """The LET as LET_DTYPE rows: pseudo-particles first, then particles."""
    out = np.empty(len(cells) + len(particles), LET_DTYPE)
    k = len(cells)
    out["pos"][:k] = tree.com[cells]
    out["mass"][:k] = tree.cell_mass[cells]
    out["kind"][:k] = 1
    out["pos"][k:] = tree.pos[particles]
    out["mass"][k:] = tree.mass[particles]
    out["kind"][k:] = 0
    return out
