"""Issue 58's faster FOF and catalogue (hybridtree.analysis.halos) give the same groups
and the same catalogue order as before: the slabs by bins against one k-d tree over all
particles and against scipy's connected components of every linked pair (random and
clustered sets, a clump denser than a slab, open and periodic); no sort of the
coordinates or of the labels; the catalogue's order against a plain reference, duplicate
IDs included."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from hybridtree.analysis.halos import friends_of_friends
from hybridtree.analysis.halos import catalogue as catalogue_module
from hybridtree.analysis.halos import fof as fof_module


def canonical(labels: np.ndarray) -> np.ndarray:
    """Labels renumbered 0.. in the order of each group's first particle."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    return np.argsort(np.argsort(first))[inverse]


def components(pos: np.ndarray, link: float, box: float | None = None) -> np.ndarray:
    """FOF groups as scipy's connected components of every pair within ``link`` (a
    periodic k-d tree for a box): an independent path."""
    p = np.mod(pos, box) if box is not None else pos
    if box is not None:
        p[p >= box] = 0.0
    pairs = cKDTree(p, boxsize=box).query_pairs(link, output_type="ndarray")
    n = len(pos)
    graph = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    return canonical(connected_components(graph, directed=False)[1])


def clustered(seed: int, n: int, side: float) -> np.ndarray:
    """Gaussian clumps of every size, one very dense (more particles within a linking
    length than a slab holds), and a uniform background."""
    rng = np.random.default_rng(seed)
    k = 40
    centres = rng.uniform(0, side, (k, 3))
    size = rng.integers(1, 6, k).astype(float)
    which = rng.integers(0, k, n // 2)
    clumps = centres[which] + rng.normal(size=(n // 2, 3)) * (0.05 * size[which])[:, None]
    dense = centres[0] + rng.normal(scale=0.01, size=(n // 8, 3))
    return np.concatenate([clumps, dense, rng.uniform(0, side, (n - n // 2 - n // 8, 3))])


@pytest.mark.parametrize("seed", [5, 6, 7])
@pytest.mark.parametrize("periodic", [False, True])
def test_fof_slabs_equal_one_tree_and_connected_components(seed, periodic):
    side = 10.0
    pos = clustered(seed, 12000, side)
    link = 0.6 * side / len(pos) ** (1 / 3)
    box = side if periodic else None
    ref = components(pos, link, box)
    sizes = np.bincount(ref)
    assert sizes.max() > 1500 and (sizes == 1).sum() > 1000     # a non-trivial test
    one_tree = friends_of_friends(pos, link, chunk=10 ** 9, box=box)
    assert np.array_equal(one_tree, ref)
    for chunk in (4000, 500, 1):
        assert np.array_equal(friends_of_friends(pos, link, chunk=chunk, box=box), ref), chunk


def test_fof_slabs_cover_every_pair_at_bin_edges():
    """Particles exactly one linking length apart across every bin boundary, along the
    slab axis: each pair is linked (distance <= link), whatever the slab size."""
    link = 0.25
    x = np.arange(400) * link                   # a chain: each neighbour exactly link away
    pos = np.stack([x, np.zeros_like(x), np.zeros_like(x)], axis=1)
    for chunk in (1, 3, 50, 10 ** 6):
        assert np.array_equal(friends_of_friends(pos, link, chunk=chunk),
                              np.zeros(len(pos), np.int64)), chunk
    apart = pos * (1 + 1e-9)
    assert len(np.unique(friends_of_friends(apart, link, chunk=7))) == len(pos)


def test_fof_sorts_no_coordinates_and_no_labels(monkeypatch):
    """The slabs come from a counting order of int16 bins and the labels from the roots
    without np.unique: O(N) outside the k-d trees (a float sort of 16.7 M coordinates
    and one of the labels were seconds of ``hybridtree halos``)."""
    sorted_kinds = []
    argsort, unique = np.argsort, np.unique

    def spy_argsort(a, *args, **kwargs):
        sorted_kinds.append(np.asarray(a).dtype)
        return argsort(a, *args, **kwargs)

    def spy_unique(*args, **kwargs):
        sorted_kinds.append("unique")
        return unique(*args, **kwargs)
    pos = clustered(8, 6000, 10.0)
    link = 0.6 * 10.0 / len(pos) ** (1 / 3)
    ref = components(pos, link)
    monkeypatch.setattr(np, "argsort", spy_argsort)
    monkeypatch.setattr(np, "unique", spy_unique)
    labels = friends_of_friends(pos, link, chunk=500)
    monkeypatch.undo()
    assert np.array_equal(labels, ref)
    assert sorted_kinds and all(k == np.int16 for k in sorted_kinds), sorted_kinds
    assert fof_module._MAX_BINS <= np.iinfo(np.int16).max


def reference_order(labels, ids, min_len):
    """The catalogue's member order, plainly: groups of >= min_len by length
    (descending), then smallest ID, then label (ties of both: duplicate IDs); members by
    ID, ties by row."""
    groups = {}
    for row, lab in enumerate(labels):
        groups.setdefault(int(lab), []).append(row)
    kept = [(lab, rows) for lab, rows in groups.items() if len(rows) >= min_len]
    kept = [(lab, sorted(rows, key=lambda r: (int(ids[r]), r))) for lab, rows in kept]
    kept.sort(key=lambda g: (-len(g[1]), int(ids[g[1][0]]), g[0]))
    return [rows for _, rows in kept]


@pytest.mark.parametrize("duplicates", [False, True])
def test_catalogue_order_equals_a_plain_reference(duplicates):
    rng = np.random.default_rng(11)
    n = 5000
    labels = canonical(rng.integers(0, 400, n) * (rng.random(n) < 0.7)
                       + (rng.random(n) >= 0.7) * np.arange(1000, 1000 + n))
    ids = rng.permutation(n).astype(np.uint64) + 10
    if duplicates:
        ids[rng.integers(0, n, 600)] = ids[rng.integers(0, n, 600)]
    snap = {"ids": ids, "mass": rng.random(n) + 0.5, "pos": rng.uniform(0, 50, (n, 3)),
            "vel": rng.normal(size=(n, 3)), "type": rng.integers(0, 3, n).astype(np.int8)}
    cat = catalogue_module._catalogue(labels, snap, 5, 1.0, None)
    groups = reference_order(labels, ids, 5)
    assert len(groups) > 100
    assert cat["group_len"].tolist() == [len(g) for g in groups]
    rows = np.concatenate(groups)
    assert np.array_equal(cat["ids"], ids[rows])
    lens = np.array([len(g) for g in groups])
    first = np.r_[0, np.cumsum(lens)[:-1]]
    assert np.array_equal(cat["offsets"], first)
    mass = snap["mass"][rows]
    assert np.array_equal(cat["group_mass"], np.add.reduceat(mass, first))
    gid = np.repeat(np.arange(len(groups)), lens)
    len_type = np.zeros((len(groups), 6), np.int64)
    np.add.at(len_type, (gid, snap["type"][rows]), 1)
    assert np.array_equal(cat["group_len_type"], len_type)
