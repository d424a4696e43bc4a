"""The device tree build (cl/treebuild.cl) against the numpy build, cell by cell."""

import numpy as np
import pyopencl as cl
import pytest
from tests.helpers import rel_err

from hybridtree.gravity import accelerations, direct_reference
from hybridtree.ics import plummer
from hybridtree.gravity.tree import MAX_LEVEL, build_tree, leaf_ranges, split_cells
from hybridtree.device.kernels import launch
from hybridtree.gravity.tree import device_build, device_sources
from hybridtree.gravity.tree.device_build import (build_device_tree, device_cube, device_groups,
                                                  extent_work_group)
from hybridtree.gravity.tree.octree import packed_leaf_ranges
from hybridtree.gravity.walk import sink_groups


def _clump(n=3000):
    pos, _, mass = plummer(n, seed=3)
    pos[: n // 3] = pos[0]                  # coincident: pseudo-children below level 21
    return pos, mass


def _grid():
    g = np.arange(12, dtype=np.float64)
    pos = np.stack(np.meshgrid(g, g, g, indexing="ij"), axis=-1).reshape(-1, 3)
    return pos, np.full(len(pos), 1.0 / len(pos))


def _far_clumps():
    rng = np.random.default_rng(4)
    pos = rng.normal(size=(400, 3))
    pos[200:] += 1e10
    return pos, np.full(400, 1.0 / 400)


CLUMP_CENTRE = np.array([0.05, 0.5, 0.5])


def _diagonal():
    """The root's children 3 (x < 0, y > 0, z > 0: 60 sparse particles) and 4 (x > 0,
    y < 0, z < 0: 2 particles near the centre) are Morton-consecutive leaves of groups of
    64, diagonally opposite; a box around both holds the dense clump of child 7 between
    them (the cusp's inner halo in docs/history.md §27); the corners fix the cube."""
    rng = np.random.default_rng(6)
    sparse = rng.uniform([-0.5, 0.0, 0.0], [0.0, 1.0, 1.0], size=(60, 3))
    near = np.array([[0.1, -0.05, -0.1], [0.05, -0.1, -0.05]])
    clump = CLUMP_CENTRE + 0.01 * rng.normal(size=(2000, 3))
    corners = np.array([[-1.0, -1.0, -1.0], [1.0, 1.0, 1.0]])
    pos = np.concatenate([sparse, near, clump, corners])
    return pos, np.full(len(pos), 1.0 / len(pos))


def _plummer(n):
    pos, _, mass = plummer(n, seed=5)
    return pos, mass


CASES = {
    "plummer": (lambda: _plummer(20_000), 16, "quadrupole"),
    "plummer_leaf1": (lambda: _plummer(3000), 1, "monopole"),
    "clump": (_clump, 8, "quadrupole"),
    "grid": (_grid, 16, "monopole"),
    "far_clumps": (_far_clumps, 4, "monopole"),
    "one": (lambda: (np.array([[0.3, -2.0, 5.0]]), np.array([2.0])), 16, "monopole"),
    "three": (lambda: _plummer(3), 1, "quadrupole"),
    "diagonal": (_diagonal, 16, "monopole"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_device_tree_equals_host_tree(runtime, case):
    make, n_leaf, multipole = CASES[case]
    pos, mass = make()
    cube = device_cube(pos)
    d = build_device_tree(runtime, pos, mass, theta=0.6, n_leaf=n_leaf, multipole=multipole,
                          cube=cube).to_host()
    h = build_tree(pos, mass, theta=0.6, n_leaf=n_leaf, multipole=multipole, cube=cube)
    assert np.array_equal(d["keys"], h.keys)
    assert np.array_equal(d["order"], h.order)
    for name in ("start", "count", "level", "is_leaf", "next"):
        assert np.array_equal(d[name], getattr(h, name)), name
    assert h.depth <= MAX_LEVEL + 1
    np.testing.assert_allclose(d["cell_mass"], h.cell_mass, rtol=2e-6)
    # centre of mass: float32 hi/lo sums relative to each cell's centre
    scale = h.side + 1e-7 * np.abs(h.com - cube.centre).max(axis=1)
    assert np.all(np.abs(d["com"] - h.com).max(axis=1) <= 1e-5 * scale)
    np.testing.assert_allclose(d["s_eff"], h.s_eff, rtol=1e-5)
    # the hard walk's bounding radius must enclose the cell (host radius, rounded up)
    assert np.all(d["radius"] >= h.radius * (1 - 1e-6))
    if multipole == "quadrupole":
        size = (h.cell_mass * (h.side + np.linalg.norm(h.com - h.centre, axis=1)) ** 2)[:, None]
        assert np.all(np.abs(d["quad"] - h.quad) <= 1e-4 * size + 1e-30)


@pytest.mark.parametrize("case", ["plummer", "clump", "grid", "far_clumps", "one", "diagonal"])
@pytest.mark.parametrize("pack", [True, False])
@pytest.mark.parametrize("early", [False, True], ids=["late", "early"])
def test_device_groups_equal_host_groups(runtime, case, pack, early, monkeypatch):
    """``early``: the build counts the groups' first split with its cells (group_sizes),
    and device_groups reads no count of it back."""
    pos, mass = CASES[case][0]()
    cube = device_cube(pos)
    tree = build_device_tree(runtime, pos, mass, cube=cube,
                             group_sizes=(1, 7, 64) if early else ())
    h = build_tree(pos, mass, cube=cube)
    reads = []
    read_small = device_build.read_small
    monkeypatch.setattr(device_build, "read_small",
                        lambda *a, **k: reads.append(1) or read_small(*a, **k))
    for i, n_group in enumerate((1, 7, 64)):
        g = device_groups(tree, n_group, pack)
        assert len(reads) == (0 if early else i + 1), reads
        ranges = np.empty((g.n_groups, 2), np.int32)
        cl.enqueue_copy(runtime.queue, ranges, g.ranges)
        start, count = sink_groups(h.keys, n_group, pack)
        assert np.array_equal(ranges[:, 0], start) and np.array_equal(ranges[:, 1], count)
        half = np.empty((g.n_groups, 4), np.float32)
        centre = np.empty((g.n_groups, 4), np.float32)
        cl.enqueue_copy(runtime.queue, half, g.half)
        cl.enqueue_copy(runtime.queue, centre, g.hi)
        owner = np.repeat(np.arange(g.n_groups), count)
        inside = np.abs(h.pos - cube.centre - centre[owner, :3]) <= half[owner, :3]
        assert inside.all(), "every sink lies inside its group's box"


def test_packed_groups_are_runs_of_sibling_leaves():
    """Packing merges only leaves of one parent, never past n_group, and fills groups
    more than 1.5 times as well as the plain split on a Plummer sphere (1.65 measured)."""
    for make in (lambda: _plummer(50_000), _clump):
        pos, mass = make()
        h = build_tree(pos, mass)
        start, count, level, parent, is_leaf = split_cells(h.keys, 64)
        o = np.argsort(start[is_leaf], kind="stable")
        ls, lc, lp = start[is_leaf][o], count[is_leaf][o], parent[is_leaf][o]
        gs, gc = packed_leaf_ranges(h.keys, 64)
        assert gc.max() <= 64 and gc.sum() == len(pos)
        assert np.array_equal(gs, np.concatenate([[0], np.cumsum(gc)[:-1]]))
        assert np.isin(gs, ls).all()                   # groups are whole leaves
        owner = np.searchsorted(gs, ls, side="right") - 1
        for g in np.unique(owner[np.diff(np.append(owner, -1)) == 0]):   # merged groups
            assert len(np.unique(lp[owner == g])) == 1, "a group spans two parents"
    pos, mass = _plummer(50_000)
    keys = build_tree(pos, mass).keys
    assert packed_leaf_ranges(keys, 64)[1].mean() > 1.5 * leaf_ranges(keys, 64)[1].mean()


def _groups_holding(pos, mass, point):
    """For each packed group of 64 (host) whose particles' box holds ``point``: whether
    the group has particles within 0.1 of it."""
    h = build_tree(pos, mass)
    gs, gc = packed_leaf_ranges(h.keys, 64)
    out = []
    for s, c in zip(gs, gc):
        p = h.pos[s:s + c]
        if np.all(p.min(axis=0) <= point) and np.all(point <= p.max(axis=0)):
            out.append(bool(np.any(np.linalg.norm(p - point, axis=1) < 0.1)))
    return out


def test_packed_groups_do_not_reach_across_a_dense_sibling(monkeypatch):
    """A group's box may not exceed its leaves' boxes together (PACK_UNION): the two
    sparse leaves either side of the clump stay apart, so no group without clump
    particles holds the clump's centre in its box (without the rule, one of them did)."""
    from hybridtree.gravity.tree import octree
    pos, mass = _diagonal()
    assert all(_groups_holding(pos, mass, CLUMP_CENTRE))
    monkeypatch.setattr(octree, "PACK_UNION", (100, 1))
    assert not all(_groups_holding(pos, mass, CLUMP_CENTRE))


def test_device_cube_is_a_power_of_two_that_holds_everything():
    pos, _ = _far_clumps()
    cube = device_cube(pos)
    assert np.log2(cube.side).is_integer()
    assert np.all(pos >= cube.corner) and np.all(pos < cube.corner + cube.side)
    assert device_cube(np.zeros((5, 3))).side == 1.0


@pytest.mark.parametrize("multipole", ["monopole", "quadrupole"])
def test_device_build_forces_match_direct_summation(multipole):
    pos, mass = _plummer(20_000)
    ref, ref_pot = direct_reference(pos, mass, 0.01)
    errs = {}
    for build in ("host", "device"):
        f = accelerations(pos, mass, 0.01, theta=0.5, multipole=multipole, build=build)
        errs[build] = np.median(rel_err(f.acc, ref))
        assert np.median(np.abs(f.pot / ref_pot - 1)) < 1e-3
    limit = 6e-4 if multipole == "monopole" else 2e-4
    assert errs["device"] < limit
    assert errs["device"] < 1.3 * errs["host"]


def test_device_build_rejects_a_cube_that_is_not_a_power_of_two(runtime):
    from hybridtree.gravity.tree.morton import Cube
    pos, mass = _plummer(10)
    with pytest.raises(ValueError, match="power-of-two"):
        build_device_tree(runtime, pos, mass, cube=Cube(np.full(3, -3.0), 6.0))


@pytest.mark.parametrize("make", [_far_clumps, lambda: _plummer(5000)], ids=["far", "plummer"])
def test_upload_on_device_gives_the_host_bits(runtime, make):
    """The float64 extent and hi/lo split of cl/prepare.cl equal the host's, bit for bit."""
    if not runtime.has_fp64:
        pytest.skip("the device has no double precision: the host path is the only one")
    pos, mass = make()
    pos = pos + np.array([1e3, -2e3, 5.0])          # off-centre: lo parts matter
    host = build_device_tree(runtime, pos, mass, prepare_on_device=False)
    dev = build_device_tree(runtime, pos, mass, prepare_on_device=True)
    assert np.array_equal(host.cube.corner, dev.cube.corner) and host.cube.side == dev.cube.side
    for name in ("src_hi", "src_lo"):
        a, b = np.empty((len(pos), 4), np.float32), np.empty((len(pos), 4), np.float32)
        cl.enqueue_copy(runtime.queue, a, getattr(host, name))
        cl.enqueue_copy(runtime.queue, b, getattr(dev, name))
        assert np.array_equal(a.view(np.uint32), b.view(np.uint32)), name
    # the keys: treebuild.cl morton_keys of the host's pairs, prepare.cl split_keys here
    for name, dtype in (("keys", np.uint64), ("order", np.uint32)):
        a, b = np.empty(len(pos), dtype), np.empty(len(pos), dtype)
        cl.enqueue_copy(runtime.queue, a, getattr(host, name))
        cl.enqueue_copy(runtime.queue, b, getattr(dev, name))
        assert np.array_equal(a, b), name


def _point(n=50):
    return np.tile([[3.0, -1.0, 2.5]], (n, 1)), np.full(n, 1.0 / n)


def _power_extent():
    """An extent whose (1 + 1e-6)-fold is a power of two up to rounding."""
    pos, mass = _plummer(300)
    pos = np.clip(pos, 0.0, 4.0 / (1.0 + 1e-6))
    pos[0, 0], pos[1, 0] = 0.0, 4.0 / (1.0 + 1e-6)
    return pos, mass


@pytest.mark.parametrize("make", [_far_clumps, lambda: _plummer(5000), _point,
                                  lambda: _point(1), _power_extent],
                         ids=["far", "plummer", "point", "one", "power"])
def test_the_cube_found_on_the_device_is_the_hosts(runtime, make, monkeypatch):
    """cl/prepare.cl extent_cube gives device_cube's corner and side bit for bit, and the
    build reads nothing of it back until the cube is asked for."""
    if not runtime.has_fp64:
        pytest.skip("the device has no double precision: the host path is the only one")
    pos, mass = make()
    reads = []                          # the extent's (device_extent), none
    read_small = device_sources.read_small
    monkeypatch.setattr(device_sources, "read_small",
                        lambda *a, **k: reads.append(1) or read_small(*a, **k))
    tree = build_device_tree(runtime, pos, mass, prepare_on_device=True)
    assert tree.host_cube is None and not reads         # nor the cube's
    want = device_cube(pos)
    assert np.array_equal(tree.cube.corner, want.corner) and tree.cube.side == want.side
    assert np.array_equal(tree.cube.centre, want.centre)
    host = build_device_tree(runtime, pos, mass, prepare_on_device=False).to_host()
    for name, value in tree.to_host().items():
        np.testing.assert_array_equal(value, host[name], err_msg=name)


@pytest.mark.parametrize("m", [1, 7, 300, 1000])
def test_extent_reduces_its_own_rows_in_place(runtime, m):
    """cl/prepare.cl extent over its own rows (one work-group, in place): m work-group
    boxes (more than one work-group's worth, signed zeros and infinities among them) into
    the first row, as numpy's min and max."""
    if not runtime.has_fp64:
        pytest.skip("prepare.cl needs double precision")
    rng = np.random.default_rng(m)
    rows = rng.normal(scale=1e3, size=(m, 6))
    rows[::5, :3], rows[::7, 3:] = np.inf, -np.inf      # groups that saw no particle
    rows[0, 0] = -0.0
    wg = extent_work_group(runtime.info)
    part = runtime.to_device(rows)
    launch(runtime, "prepare.cl", "extent", wg, np.int32(m), np.int32(6), np.int32(3), part,
           part, defines={"WG": wg}, local=wg, fixed=True)
    got = np.empty(6)
    cl.enqueue_copy(runtime.queue, got, part)
    assert np.array_equal(got[:3], rows[:, :3].min(axis=0))
    assert np.array_equal(got[3:], rows[:, 3:].max(axis=0))
