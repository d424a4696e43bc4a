"""Locally essential trees: what one process's tree must send to another process.

A process walks its local tree against the bounding box of another process's particles
with the walk's own opening test (the smallest distance from the box to a cell's centre
of mass against S_eff): accepted cells travel as pseudo-particles (mass at the centre of
mass; with quadrupoles, six point masses that carry the cell's quadrupole, see
:func:`quadrupole_points`), the particles of opened leaves travel as they are.  Every
sink group of the receiver lies inside that box, so it would accept every cell the box
accepts: the LET is conservative.  For the hard force (:mod:`hybridtree.gravity.splitting`)
cells whose bounding sphere lies farther than r_out from the box are not sent at all
(the hard walk skips them), nor are the particles of opened leaves that lie farther than
r_out from the box (their hard force on any sink in it is exactly zero), so hard LETs are
much smaller.  Lengths: the caller's units.
"""

from __future__ import annotations

import numpy as np

from ..gravity.tree import Octree
from ..gravity.tree.moments import by_level
from ..gravity.tree.octree import concat_ranges

__all__ = ["box_distance2", "let_entries", "quadrupole_points", "select_let", "LET_DTYPE"]

#: A LET entry: a particle (kind 0) or a cell as a pseudo-particle (kind 1).
LET_DTYPE = np.dtype([("pos", "f8", 3), ("mass", "f8"), ("kind", "i8")])


def box_distance2(lo: np.ndarray, hi: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Squared distance from the box [lo, hi] to each point of ``p`` (n, 3) (0 inside)."""
    d = np.maximum(np.maximum(lo - p, 0.0), p - hi)
    return np.einsum("ij,ij->i", d, d)


def select_let(tree: Octree, lo: np.ndarray, hi: np.ndarray, r_out: float | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """(accepted cells, particles of opened leaves in tree order) for the box [lo, hi].

    ``r_out``: the hard part's cut-off (cells wholly beyond it are left out, and of an
    opened leaf the particles beyond it: their hard force on every sink in the box is
    exactly zero); None: all.
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
    for cells in reversed(by_level(tree.level)):     # root side first
        p = tree.parent[cells]
        visited[cells] = visited[p] & goes_down[p]
    live = visited & ~skip
    cells = np.flatnonzero(live & accept)
    leaves = np.flatnonzero(live & ~accept & tree.is_leaf)
    particles = concat_ranges(tree.start[leaves], tree.count[leaves])
    if r_out is not None:       # beyond r_out of the box a particle's hard force is zero
        particles = particles[box_distance2(lo, hi, tree.pos[particles]) <= r_out * r_out]
    return cells, particles


def quadrupole_points(mass: np.ndarray, com: np.ndarray, quad: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Six point masses per cell with the cell's mass, centre of mass and traceless
    quadrupole Q = Σ m (3 d d - |d|² I) (as (xx, yy, zz, xy, xz, yz)): mass/6 at
    com ± a_i e_i along Q's eigenvectors e_i, a_i = sqrt((q_i - q_min) / mass).

    Their second moment is S = (Q - q_min I) / 3, positive semi-definite, and 3 S - tr S
    = Q; the set is symmetric, so its octupole vanishes.  A receiver's tree then holds
    the sender's quadrupoles exactly without a pseudo-particle type of its own.
    Returns (positions (6C, 3), masses (6C,)).
    """
    q = np.empty((len(mass), 3, 3))
    q[:, 0, 0], q[:, 1, 1], q[:, 2, 2] = quad[:, 0], quad[:, 1], quad[:, 2]
    q[:, 0, 1] = q[:, 1, 0] = quad[:, 3]
    q[:, 0, 2] = q[:, 2, 0] = quad[:, 4]
    q[:, 1, 2] = q[:, 2, 1] = quad[:, 5]
    val, vec = np.linalg.eigh(q)                    # ascending eigenvalues
    safe = np.where(mass > 0, mass, 1.0)
    a = np.sqrt(np.maximum(val - val[:, :1], 0.0) / safe[:, None])      # (C, 3)
    arms = vec * a[:, None, :]                      # column i: a_i e_i
    off = np.concatenate([arms, -arms], axis=2).transpose(0, 2, 1)      # (C, 6, 3)
    pos = (com[:, None, :] + off).reshape(-1, 3)
    return pos, np.repeat(mass / 6.0, 6)


def let_entries(tree: Octree, cells: np.ndarray, particles: np.ndarray) -> np.ndarray:
    """The LET as LET_DTYPE rows: pseudo-particles first (six per cell, carrying the
    quadrupole, when the tree has quadrupoles), then particles."""
    if tree.quad is not None:
        qpos, qmass = quadrupole_points(tree.cell_mass[cells], tree.com[cells], tree.quad[cells])
        out = np.empty(len(qmass) + len(particles), LET_DTYPE)
        k = len(qmass)
        out["pos"][:k], out["mass"][:k] = qpos, qmass
    else:
        out = np.empty(len(cells) + len(particles), LET_DTYPE)
        k = len(cells)
        out["pos"][:k] = tree.com[cells]
        out["mass"][:k] = tree.cell_mass[cells]
    out["kind"][:k] = 1
    out["pos"][k:] = tree.pos[particles]
    out["mass"][k:] = tree.mass[particles]
    out["kind"][k:] = 0
    return out
