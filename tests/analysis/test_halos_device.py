"""Friends of friends on the device (hybridtree.analysis.halos.fof_device, cl/fof.cl,
issue 58) against the host's k-d tree path, which stays the reference: the same labels
(membership and numbering) on clustered open and periodic sets, groups across the
periodic faces, edges and corners, one particle, no particle, all particles in one
group; pairs 1e-5 inside and outside the linking length; the same catalogue, to the bit,
from find_halos; ``hybridtree halos`` links on the device ``hybridtree pk`` uses."""

from __future__ import annotations

import numpy as np
import pytest

from hybridtree.analysis.halos import find_halos, friends_of_friends
from hybridtree.analysis.power_device import analysis_runtime
from tests.analysis.test_halos import brute_force_fof, cosmo_snapshot  # noqa: F401
from tests.analysis.test_halos_fast import clustered, components
from tests.helpers import clumps_across_faces


@pytest.fixture(scope="module")
def rt():
    runtime = analysis_runtime()
    if runtime is None:
        pytest.skip("no OpenCL device")
    return runtime


def both(pos, link, rt, box=None):
    """(host labels, device labels), the device path checked to have run."""
    from hybridtree.analysis.halos import fof_device
    assert fof_device.usable(rt, len(pos))
    return (friends_of_friends(pos, link, box=box),
            friends_of_friends(pos, link, box=box, runtime=rt))


@pytest.mark.parametrize("periodic", [False, True])
@pytest.mark.parametrize("seed", [5, 8])
def test_device_fof_equals_host_on_clustered_sets(rt, seed, periodic):
    side = 10.0
    pos = clustered(seed, 12000, side)
    link = 0.6 * side / len(pos) ** (1 / 3)
    box = side if periodic else None
    host, device = both(pos, link, rt, box)
    sizes = np.bincount(host)
    assert sizes.max() > 1500 and (sizes == 1).sum() > 1000     # a non-trivial test
    assert device.dtype == np.int64
    assert np.array_equal(device, host)
    assert np.array_equal(device, components(pos, link, box))


@pytest.mark.parametrize("seed", [3, 4])
def test_device_fof_links_across_faces_edges_and_corners(rt, seed):
    """Clumps on a face, an edge and a corner of a periodic box, positions given whole
    boxes away: the nearest-image O(N²) union-find's groups, as on the host."""
    pos, link, box, rng = clumps_across_faces(seed)
    n = len(pos)
    ref = brute_force_fof(np.mod(pos, box), link, box)
    assert np.bincount(ref).max() > 100
    host, device = both(pos + box * rng.integers(-2, 3, (n, 3)), link, rt, box)
    assert np.array_equal(device, ref) and np.array_equal(host, ref)
    # a coarse grid (a link near half the box: 2 cells a side, both images of a cell)
    wide = 4.9
    assert np.array_equal(friends_of_friends(pos[:300], wide, box=box, runtime=rt),
                          brute_force_fof(np.mod(pos[:300], box), wide, box))


def test_device_fof_edge_cases(rt):
    """No particle, one particle (open and periodic), all in one group, a chain across
    the periodic face closing on itself."""
    assert len(friends_of_friends(np.zeros((0, 3)), 1.0, runtime=rt)) == 0
    assert np.array_equal(friends_of_friends([[0.5, 0.5, 0.5]], 1.0, runtime=rt), [0])
    assert np.array_equal(friends_of_friends([[9.9, 0.5, 0.5]], 1.0, box=10.0, runtime=rt),
                          [0])
    one = np.random.default_rng(1).normal(scale=0.1, size=(3000, 3))
    assert np.array_equal(friends_of_friends(one, 0.5, runtime=rt), np.zeros(3000))
    assert np.array_equal(friends_of_friends(np.zeros((7, 3)), 1e-9, runtime=rt),
                          np.zeros(7))
    # a ring: steps of 10 / 22 along x around the box, in shuffled order
    x = np.arange(22) * (10.0 / 22)
    ring = np.c_[x, np.full_like(x, 3.0), np.full_like(x, 7.0)]
    ring = ring[np.random.default_rng(2).permutation(len(ring))]
    assert np.array_equal(friends_of_friends(ring, 0.5, box=10.0, runtime=rt),
                          np.zeros(len(ring)))
    assert np.array_equal(friends_of_friends(ring, 0.44, box=10.0, runtime=rt),
                          np.arange(len(ring)))


def test_device_fof_precision_at_the_link(rt):
    """Chains of spacing link × (1 ∓ 1e-5), in any direction, far from the origin: linked
    and split as on the host (the device's float32 distances are good to ~1e-6)."""
    link = 0.37
    direction = np.array([1.0, 2.0, -0.5]) / np.linalg.norm([1.0, 2.0, -0.5])
    k = np.arange(200)[:, None]
    for factor, want in ((1 - 1e-5, np.zeros(200)), (1 + 1e-5, np.arange(200))):
        pos = k * factor * link * direction + 1000.0
        host, device = both(pos, link, rt)
        assert np.array_equal(host, want) and np.array_equal(device, want), factor
        box = 400.0
        host, device = both(np.mod(pos, box), link, rt, box)
        assert np.array_equal(host, want) and np.array_equal(device, want), factor


def test_device_grid_is_bounded_and_wide_enough():
    from hybridtree.analysis.halos.fof_device import MAX_CELLS, cells_and_offsets, grid
    rng = np.random.default_rng(0)
    pos = rng.uniform(0, 100.0, (1000, 3))
    for box, link in ((100.0, 0.01), (None, 0.01), (100.0, 30.0)):
        lo, w, shape = grid(pos, link, box)   # 10^12 cells a link wide: too many
        assert np.prod(shape) <= 16 * 1000 + 27 and w >= link
        if box is not None:
            assert shape[0] * w == pytest.approx(box) and shape[0] == shape[1] == shape[2]
        key, offset = cells_and_offsets(pos, lo, w, shape)
        cell = np.stack(np.unravel_index(key.astype(np.int64), shape[::-1])[::-1], axis=1)
        assert np.all(cell == np.minimum(np.floor((pos - lo) / w), np.array(shape) - 1))
        assert np.allclose(lo + cell * w + offset, pos, rtol=0, atol=1e-5 * w)
    assert grid(pos, 30.0, 100.0)[2] == (3, 3, 3)
    assert MAX_CELLS < 2 ** 31


def test_find_halos_on_the_device_gives_the_hosts_catalogue(rt, cosmo_snapshot):
    host = find_halos(cosmo_snapshot["paths"][0], min_len=3)
    device = find_halos(cosmo_snapshot["paths"][0], min_len=3, runtime=rt)
    assert len(host) == 4
    for key in ("group_len", "group_len_type", "group_mass", "group_mass_type",
                "group_pos", "group_vel", "ids", "offsets"):
        assert np.array_equal(getattr(device, key), getattr(host, key)), key


def test_halos_command_links_on_the_device(rt, cosmo_snapshot, tmp_path, monkeypatch):
    """``hybridtree halos`` takes the device ``hybridtree pk`` takes (a CPU device only
    where the user names one: the host is faster there), and writes the host's
    catalogue."""
    import h5py

    from hybridtree.analysis.halos import fof_device
    from hybridtree.cli import main
    calls = []
    real = fof_device.device_roots

    def counted(*args, **kwargs):
        calls.append(len(args[1]))
        return real(*args, **kwargs)
    monkeypatch.setattr(fof_device, "device_roots", counted)
    snap = str(cosmo_snapshot["paths"][0])
    host = find_halos(snap, min_len=3)
    n = sum(cosmo_snapshot["lens"])

    def run(name: str) -> None:
        assert main(["halos", snap, "-o", str(tmp_path / name), "--min-len", "3"]) == 0
        with h5py.File(tmp_path / name, "r") as f:
            assert np.array_equal(f["Group/GroupLen"][...], host.group_len)
            assert np.array_equal(f["Group/GroupPos"][...], host.group_pos)
            assert np.array_equal(f["IDs/ID"][...], host.ids)
    if rt.info.kind == "cpu":
        for name in ("HYBRIDTREE_DEVICE", "PYOPENCL_CTX"):
            monkeypatch.delenv(name, raising=False)
        run("auto.hdf5")
        assert calls == []                  # the automatic choice: the host's trees
        monkeypatch.setenv("HYBRIDTREE_DEVICE", "cpu")
    run("device.hdf5")
    assert calls == [n]
