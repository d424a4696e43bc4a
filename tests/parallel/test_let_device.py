"""The device LET selection and the sink groups of a tree holding a received LET
(hybridtree.parallel.device_let), against a second code path: a sequential walk with the
tree's next links over the same cells, on the host."""

from types import SimpleNamespace

import numpy as np
import pyopencl as cl
import pytest

from hybridtree.ics import plummer
from hybridtree.particles import Particles
from hybridtree.device.choice import get_runtime
from hybridtree.parallel.device_let import let_rows, local_sink_groups, select_on_device
from hybridtree.parallel.let import quadrupole_points, select_let
from hybridtree.state import DeviceState
from hybridtree.device.transfer import upload
from hybridtree.gravity.tree.device_build import DeviceArrays, build_device_tree

N = 12000
BOXES = np.array([[[0.3, -1.0, -1.0], [2.0, 1.0, 1.0]],       # touches the core
                  [[-5.0, -5.0, -5.0], [-0.5, 0.2, 5.0]],
                  [[3.0, 3.0, 3.0], [4.0, 4.0, 4.0]],          # far: a few cells
                  [[-0.05, -0.05, -0.05], [0.05, 0.05, 0.05]]])


@pytest.fixture(scope="module")
def rt():
    rt = get_runtime()
    if not rt.has_fp64:
        pytest.skip("the device LET needs double precision (cl_khr_fp64)")
    return rt


def _d2(lo: np.ndarray, hi: np.ndarray, p: np.ndarray) -> float:
    d = np.maximum(np.maximum(lo - p, 0.0), p - hi)
    return (d[0] * d[0] + d[1] * d[1]) + d[2] * d[2]


def _walk(h: dict, pos: np.ndarray, lo: np.ndarray, hi: np.ndarray, r_out: float | None):
    """The host walk a LET replaces: accept, skip or open each cell in pre-order; of an
    opened leaf, the hard LET takes the particles within r_out of the box."""
    d = np.maximum(np.maximum(lo - h["com"], 0.0), h["com"] - hi)
    d2 = (d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1]) + d[:, 2] * d[:, 2]
    cells, parts, i = [], [], 0
    while i < len(d2):
        if r_out is not None and d2[i] > (r_out + float(h["radius"][i])) ** 2:
            i = h["next"][i]
        elif d2[i] > h["s_eff"][i]:
            cells.append(i)
            i = h["next"][i]
        elif h["is_leaf"][i]:
            s, c = h["start"][i], h["count"][i]
            parts.extend(j for j in h["order"][s:s + c] if r_out is None
                         or _d2(lo, hi, pos[j]) <= r_out * r_out)
            i = h["next"][i]
        else:
            i += 1
    return np.array(cells, int), np.array(parts, int)


@pytest.mark.parametrize("multipole", ["monopole", "quadrupole"])
@pytest.mark.parametrize("r_out", [None, 0.2])
def test_device_let_is_the_walk_s_selection(rt, multipole, r_out):
    pos, _, mass = plummer(N, seed=3)
    d_pos, d_mass = upload(rt, [pos, mass], [None, None])
    tree = build_device_tree(rt, DeviceArrays(d_pos, d_mass, N), None, theta=0.5,
                             multipole=multipole)
    h = tree.to_host()
    let = select_on_device(tree, d_pos, d_mass, BOXES, r_out)
    sizes = []
    for b, (lo, hi) in enumerate(BOXES):
        cells, parts = _walk(h, pos, lo, hi, r_out)
        np.testing.assert_array_equal(let.cells[b][:, :3], h["com"][cells])
        np.testing.assert_array_equal(let.cells[b][:, 3], h["cell_mass"][cells])
        # particles travel with their exact float64 coordinates and masses
        np.testing.assert_array_equal(let.particles[b], np.column_stack([pos, mass])[parts])
        if multipole == "quadrupole":
            np.testing.assert_array_equal(let.quads[b], h["quad"][cells])
        sizes.append((len(cells), len(parts)))
    # the selection is not trivial: cells and particles for the near boxes, far fewer
    # entries for the far one (its own neighbourhood of the halo; none when hard)
    assert all(c > 0 and p > 0 for c, p in sizes[:2])
    assert sum(sizes[2]) < sum(sizes[0]) / 10
    assert (sum(sizes[2]) == 0) == (r_out is not None)
    rows, counts = let_rows(let)
    per_cell = 6 if multipole == "quadrupole" else 1
    assert list(counts) == [per_cell * c + p for c, p in sizes]
    assert rows[:, 3].sum() == pytest.approx(sum(
        let.cells[b][:, 3].sum() + let.particles[b][:, 3].sum() for b in range(len(BOXES))),
        rel=1e-12)


def test_quadrupole_rows_carry_the_cells_moments(rt):
    pos, _, mass = plummer(4000, seed=5)
    d_pos, d_mass = upload(rt, [pos, mass], [None, None])
    tree = build_device_tree(rt, DeviceArrays(d_pos, d_mass, 4000), None, theta=0.5,
                             multipole="quadrupole")
    let = select_on_device(tree, d_pos, d_mass, BOXES[2:3])
    cells, quads = let.cells[0], let.quads[0].astype(np.float64)
    assert len(cells) > 0
    qpos, qmass = quadrupole_points(cells[:, 3], cells[:, :3], quads)
    qpos, qmass = qpos.reshape(-1, 6, 3), qmass.reshape(-1, 6)
    np.testing.assert_allclose(qmass.sum(axis=1), cells[:, 3], rtol=1e-14)
    com = (qmass[:, :, None] * qpos).sum(axis=1) / cells[:, 3:4]
    np.testing.assert_allclose(com, cells[:, :3], atol=1e-12)
    d = qpos - cells[:, None, :3]
    q = np.einsum("cp,cpi,cpj->cij", qmass, d, d)
    trace = np.trace(q, axis1=1, axis2=2)
    traceless = 3 * q - trace[:, None, None] * np.eye(3)
    want = np.zeros((len(cells), 3, 3))
    for k, (i, j) in enumerate([(0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2)]):
        want[:, i, j] = want[:, j, i] = quads[:, k]
    # the device's float32 Q is traceless to its rounding; the points carry its traceless part
    want -= np.trace(want, axis1=1, axis2=2)[:, None, None] / 3 * np.eye(3)
    scale = np.abs(want).max()
    np.testing.assert_allclose(traceless, want, atol=1e-9 * scale)


def test_local_sink_groups_hold_every_local_particle_once(rt):
    pos, _, mass = plummer(6000, seed=9)
    n_local = 4000                  # the rest stands for a received LET
    d_pos, d_mass = upload(rt, [pos, mass], [None, None])
    tree = build_device_tree(rt, DeviceArrays(d_pos, d_mass, 6000), None, theta=0.5)
    g = local_sink_groups(tree, n_local, 64)
    ranges = np.empty((g.n_groups, 2), np.int32)
    cl.enqueue_copy(rt.queue, ranges, g.ranges)
    order = tree.to_host()["order"]
    members = np.concatenate([order[s:s + c] for s, c in ranges])
    local = members[members < n_local]
    assert np.array_equal(np.sort(local), np.arange(n_local))
    assert len(members) < 6000          # groups of LET entries alone are not walked
    for s, c in ranges:                 # every kept group holds a local particle
        assert (order[s:s + c] < n_local).any()


def test_reserve_keeps_the_particles(rt):
    pos, vel, mass = plummer(300, seed=1)
    p = Particles(pos, vel, mass, np.arange(1, 301, dtype=np.uint64))
    s = DeviceState(rt, p, ("hard", "soft"))
    s.reserve(1000)
    assert s.capacity >= 1000 and s.n == 300
    q = s.download()
    np.testing.assert_array_equal(q.pos, pos)
    np.testing.assert_array_equal(q.ids, p.ids)


def _host_view(h: dict, pos: np.ndarray, mass: np.ndarray) -> SimpleNamespace:
    """The device tree's cells as the host selection reads an Octree (parents from the
    pre-order levels, particles in tree order)."""
    level = h["level"]
    parent = np.full(len(level), -1)
    stack: list[int] = []
    for c, lv in enumerate(level):
        del stack[lv:]
        parent[c] = stack[-1] if stack else -1
        stack.append(c)
    return SimpleNamespace(com=h["com"], s_eff=h["s_eff"], radius=h["radius"].astype(np.float64),
                           is_leaf=h["is_leaf"], level=level, parent=parent, start=h["start"],
                           count=h["count"], n_cells=len(level), pos=pos[h["order"]],
                           mass=mass[h["order"]])


@pytest.mark.parametrize("r_out", [None, 0.2])
def test_device_let_is_the_host_selection_it_replaces(rt, r_out):
    """``let.select_let`` (the host selection of the host path) on the same cells."""
    pos, _, mass = plummer(N, seed=3)
    d_pos, d_mass = upload(rt, [pos, mass], [None, None])
    tree = build_device_tree(rt, DeviceArrays(d_pos, d_mass, N), None, theta=0.5)
    h = tree.to_host()
    view = _host_view(h, pos, mass)
    let = select_on_device(tree, d_pos, d_mass, BOXES, r_out)
    for b, (lo, hi) in enumerate(BOXES):
        cells, parts = select_let(view, lo, hi, r_out)
        np.testing.assert_array_equal(let.cells[b][:, :3], h["com"][cells])
        np.testing.assert_array_equal(let.particles[b][:, :3], view.pos[parts])
