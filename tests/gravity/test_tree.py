"""Octree structure against independent numpy computations."""

import numpy as np
import pytest

from hybridtree.ics import plummer
from hybridtree.gravity.tree import MAX_LEVEL, bounding_cube, build_tree, integer_coords, morton_keys


def _naive_key(ix, iy, iz):
    k = 0
    for b in range(20, -1, -1):
        k = (k << 3) | (((ix >> b) & 1) << 2) | (((iy >> b) & 1) << 1) | ((iz >> b) & 1)
    return k


def test_morton_keys_interleave_bits():
    rng = np.random.default_rng(0)
    ic = rng.integers(0, 1 << 21, size=(200, 3)).astype(np.uint64)
    keys = morton_keys(ic)
    for (x, y, z), k in zip(ic.tolist(), keys.tolist()):
        assert k == _naive_key(x, y, z)
    assert keys.max() < (1 << 63)


def test_integer_coords_clip_into_cube():
    pos = np.array([[0.0, 0, 0], [1, 1, 1], [2, -5, 3]])
    cube = bounding_cube(pos)
    ic = integer_coords(pos, cube)
    assert ic.max() <= (1 << 21) - 1
    assert (integer_coords(pos + 1e6, cube) == (1 << 21) - 1).all()


def _walk_leaves(tree):
    """Visit every leaf with the next/more links (more = c + 1)."""
    seen, c = [], 0
    while c < tree.n_cells:
        if tree.is_leaf[c]:
            seen.append(c)
            c = tree.next[c]
        else:
            c += 1
    return seen


@pytest.mark.parametrize("multipole", ["monopole", "quadrupole"])
def test_tree_invariants(multipole):
    pos, _, mass = plummer(20_000, seed=2)
    mass = mass * np.random.default_rng(1).uniform(0.5, 1.5, len(mass))
    t = build_tree(pos, mass, theta=0.6, n_leaf=8, multipole=multipole)
    n = len(pos)
    assert (np.sort(t.order) == np.arange(n)).all()
    assert (np.diff(t.keys.astype(np.float64)) >= 0).all()
    leaves = _walk_leaves(t)
    assert sorted(leaves) == sorted(np.flatnonzero(t.is_leaf).tolist())
    covered = np.concatenate([np.arange(t.start[c], t.start[c] + t.count[c]) for c in leaves])
    assert (covered == np.arange(n)).all()        # leaves in walk order partition the particles
    assert t.count[t.is_leaf].max() <= 8
    assert (t.count[~t.is_leaf] > 8).all()
    assert t.depth <= MAX_LEVEL + 1
    # every cell: mass, centre of mass and containment against numpy on its particles
    rng = np.random.default_rng(5)
    for c in rng.choice(t.n_cells, 200, replace=False):
        sl = slice(t.start[c], t.start[c] + t.count[c])
        p, m = t.pos[sl], t.mass[sl]
        assert np.isclose(t.cell_mass[c], m.sum(), rtol=1e-12)
        com = (m[:, None] * p).sum(0) / m.sum()
        assert np.allclose(t.com[c], com, rtol=0, atol=1e-12)
        half = 0.5 * t.side[c] * (1 + 1e-9)
        assert (np.abs(p - t.centre[c]) <= half).all()
        s = np.linalg.norm(com - t.centre[c])
        assert np.isclose(t.s_eff[c], (t.side[c] / 0.6 + s) ** 2, rtol=1e-12)
        if multipole == "quadrupole":
            d = p - com
            r2 = (d * d).sum(1)
            q = np.array([(m * (3 * d[:, i] * d[:, j] - (i == j) * r2)).sum()
                          for i, j in [(0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2)]])
            assert np.allclose(t.quad[c], q, rtol=1e-9, atol=1e-14)
        if not t.is_leaf[c]:        # next skips exactly the subtree
            assert t.start[c] + t.count[c] == (t.start[t.next[c]] if t.next[c] < t.n_cells else n)


def test_coincident_particles_have_bounded_depth():
    pos = np.zeros((1000, 3))
    pos[500:] = 1e-14                      # below the key resolution
    t = build_tree(pos, np.ones(1000), n_leaf=16)
    assert t.depth == MAX_LEVEL + 1
    assert t.count[t.is_leaf].max() <= 16
    assert np.isclose(t.cell_mass[0], 1000.0)


def test_build_time_is_reasonable_for_1e6():
    # not a speed test (see docs/benchmarks.md): guards against a Python loop over cells
    pos, _, mass = plummer(1_000_000, seed=1)
    t = build_tree(pos, mass)
    assert sum(t.timings.values()) < 30.0
