"""FOF halos (hybridtree.analysis.halos): friends of friends against constructed groups and brute
force, the GADGET-4 FOF catalogue of a cosmological snapshot, mass functions (colossus)."""

import math
import os

import h5py
import numpy as np
import pytest

from hybridtree.analysis.halos import (HaloCatalogue, catalogue_name, cosmology_params, find_halos,
                              friends_of_friends, linking_length, mass_function,
                              mean_separation, reference_mass_function, write_catalogue)
from tests.helpers import clumps_across_faces

KPC_CM = 3.0856775814913673e21
MSUN_G = 1.98841e33


def canonical(labels):
    """Labels renumbered 0.. in the order of each group's first particle."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    return np.argsort(np.argsort(first))[inverse]


def partition(groups, n):
    """Labels of n particles where ``groups`` lists the members of each group of two or
    more (all other particles alone), canonical numbering."""
    lab = np.arange(n)
    for g in groups:
        lab[np.asarray(g)] = min(g)
    return canonical(lab)


# --------------------------------------------------------------------------------------
# (a) constructed groups

def star_clump(rng, centre, n, link, kind):
    """The centre plus n - 1 points within 0.95 link of it: all linked to the centre, so one
    group; Gaussian (sigma 0.4 link, resampled beyond 0.95 link) or uniform in the ball."""
    pts = [np.asarray(centre, float)]
    while len(pts) < n:
        if kind == "gauss":
            d = rng.normal(scale=0.4 * link, size=3)
        else:
            d = rng.uniform(-link, link, 3)
        if np.linalg.norm(d) <= 0.95 * link:
            pts.append(centre + d)
    return np.array(pts)


def lattice_clump(rng, centre, radius, link):
    """A jittered cubic lattice (spacing 0.6 link, jitter <= 0.05 link a coordinate) inside
    a sphere: lattice neighbours are <= 0.6 + 0.1 sqrt(3) < link apart, so one group."""
    k = int(radius / (0.6 * link)) + 1
    g = np.arange(-k, k + 1) * 0.6 * link
    p = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    p = p[np.linalg.norm(p, axis=1) <= radius]
    return centre + p + rng.uniform(-0.05 * link, 0.05 * link, p.shape)


def constructed(seed=3, link=1.0):
    """Clumps of known membership (star clumps, Gaussian and uniform, and lattice clumps)
    10+ link apart, and background points on a lattice of spacing 3 link away from them."""
    rng = np.random.default_rng(seed)
    clumps = []
    centres = [(0, 0, 0), (15, 0, 0), (0, 15, 0), (0, 0, 15), (15, 15, 15), (-15, 5, 5)]
    sizes = [60, 25, 8, 2, None, None]
    for i, (c, size) in enumerate(zip(centres, sizes)):
        c = np.asarray(c, float) * link
        if size is None:
            clumps.append(lattice_clump(rng, c, (2.0 + i - 4) * link * 1.5, link))
        else:
            clumps.append(star_clump(rng, c, size, link, "gauss" if i % 2 else "uniform"))
    g = np.arange(-30, 31, 3.0) * link
    bg = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3) + 0.5 * link
    near = np.min([np.linalg.norm(bg - np.asarray(c) * link, axis=1) for c in centres], axis=0)
    bg = bg[near > 9 * link]
    pos = np.concatenate(clumps + [bg])
    groups, start = [], 0
    for c in clumps:
        groups.append(list(range(start, start + len(c))))
        start += len(c)
    return pos, groups


@pytest.mark.parametrize("chunk", [1 << 16, 97, 1000])
def test_fof_recovers_constructed_groups_exactly(chunk):
    pos, groups = constructed()
    perm = np.random.default_rng(0).permutation(len(pos))       # any input order
    inv = np.argsort(perm)
    labels = friends_of_friends(pos[perm], 1.0, chunk=chunk)[inv]
    assert labels.dtype == np.int64
    assert np.array_equal(canonical(labels), partition(groups, len(pos)))
    sizes = np.bincount(labels)
    assert sorted(sizes[sizes > 1].tolist()) == sorted(len(g) for g in groups)
    # labels come numbered by first particle: particle 0's group is 0, and so on
    lab = friends_of_friends(pos, 1.0, chunk=chunk)
    assert lab[0] == 0 and np.array_equal(lab, canonical(lab))


@pytest.mark.parametrize("chunk", [1 << 16, 7])
def test_fof_chains_link_below_and_split_above_the_link(chunk):
    link = 0.37
    direction = np.array([1.0, 2.0, -0.5]) / np.linalg.norm([1.0, 2.0, -0.5])
    k = np.arange(40)[:, None]
    linked = friends_of_friends(k * 0.9 * link * direction + 3.0, link, chunk=chunk)
    assert np.all(linked == 0)
    split = friends_of_friends(k * 1.1 * link * direction + 3.0, link, chunk=chunk)
    assert np.array_equal(split, np.arange(40))
    # exactly one link apart (integer spacing, exact in floating point) is linked, as in
    # GADGET-4 (neighbours at distance <= the linking length)
    exact = friends_of_friends(np.c_[np.arange(10.0), np.zeros(10), np.zeros(10)], 1.0,
                               chunk=chunk)
    assert np.all(exact == 0)


def test_fof_edge_cases():
    assert len(friends_of_friends(np.zeros((0, 3)), 1.0)) == 0
    assert np.array_equal(friends_of_friends(np.zeros((5, 3)), 1e-9), np.zeros(5))
    assert np.array_equal(friends_of_friends([[0, 0, 0.0]], 1.0), [0])
    with pytest.raises(ValueError):
        friends_of_friends(np.zeros((3, 2)), 1.0)
    with pytest.raises(ValueError):
        friends_of_friends(np.zeros((3, 3)), 0.0)
    with pytest.raises(ValueError):
        friends_of_friends(np.array([[0, 0, np.nan]]), 1.0)


# --------------------------------------------------------------------------------------
# (b) brute force

def brute_force_fof(pos, link, box=None):
    """O(N²) distances (nearest images in a periodic ``box``), union-find over every
    linked pair."""
    parent = list(range(len(pos)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    sep = pos[:, None, :] - pos[None, :, :]
    if box is not None:
        sep -= box * np.round(sep / box)
    d2 = (sep ** 2).sum(-1)
    for i, j in zip(*np.nonzero(np.triu(d2 <= link * link, 1))):
        a, b = find(i), find(j)
        if a != b:
            parent[max(a, b)] = min(a, b)
    return canonical(np.array([find(i) for i in range(len(pos))]))


@pytest.mark.parametrize("seed,clustered", [(1, False), (2, True)])
def test_fof_matches_brute_force_union_find(seed, clustered):
    rng = np.random.default_rng(seed)
    n = 2000
    if clustered:
        centres = rng.uniform(0, 10, (15, 3))
        pos = np.concatenate([centres[rng.integers(0, 15, n // 2)]
                              + rng.normal(scale=0.4, size=(n // 2, 3)),
                              rng.uniform(0, 10, (n - n // 2, 3))])
    else:
        pos = rng.uniform(0, 10, (n, 3))
    link = 0.75 * 10 / n ** (1 / 3)        # near percolation: groups of every size
    ref = brute_force_fof(pos, link)
    sizes = np.bincount(ref)
    assert sizes.max() > 20 and (sizes == 1).sum() > 100        # a non-trivial test
    for chunk in (1 << 16, 150, 1):
        assert np.array_equal(friends_of_friends(pos, link, chunk=chunk), ref), chunk


@pytest.mark.parametrize("seed", [3, 4])
def test_periodic_fof_matches_brute_force_on_nearest_images(seed):
    """Clumps straddling faces, edges and corners of a periodic box of side 10 (and
    positions given outside it by whole boxes): the groups of the O(N²) nearest-image
    union-find, for every slab size; shifting the whole box changes nothing."""
    pos, link, box, rng = clumps_across_faces(seed)
    n = len(pos)
    ref = brute_force_fof(np.mod(pos, box), link, box)
    assert np.bincount(ref).max() > 100                # the clumps across faces are linked
    assert not np.array_equal(brute_force_fof(pos, link), ref)
    for chunk in (1 << 16, 150, 7):
        assert np.array_equal(friends_of_friends(pos + box * rng.integers(-2, 3, (n, 3)),
                                                 link, chunk=chunk, box=box), ref), chunk
    shifted = friends_of_friends(np.mod(pos + 3.3, box), link, box=box)
    assert np.array_equal(shifted, ref)
    with pytest.raises(ValueError, match="half the box"):
        friends_of_friends(pos, 6.0, box=box)


# --------------------------------------------------------------------------------------
# (c) catalogue of a cosmological snapshot

A, H = 0.5, 0.7
UNITS = {"UnitLength_in_cm": KPC_CM, "UnitMass_in_g": 1e10 * MSUN_G,
         "UnitVelocity_in_cm_per_s": 1e5}
M_PART = 0.05           # 1e10 Msun/h: 5e8 Msun/h particles
OMEGA_M = 0.3


def link_kpc_h(b=0.2):
    return linking_length(b, M_PART, OMEGA_M, H, UNITS["UnitMass_in_g"],
                          UNITS["UnitLength_in_cm"])


def symmetric_clump(centre, n_shells, link, bulk, sigma_u):
    """Points at centre ± 0.45 link · k along each axis and at the centre (k = 1..n_shells),
    in ± pairs, so that the centre of mass is the centre; velocities bulk ± a random part,
    also in ± pairs, so that the mean is bulk exactly."""
    rng = np.random.default_rng(int(abs(centre[0])) + n_shells)
    offsets = [np.zeros(3)]
    for k in range(1, n_shells + 1):
        for ax in range(3):
            e = np.zeros(3)
            e[ax] = 0.45 * link * k
            offsets += [e, -e]
    off = np.array(offsets)
    half = rng.normal(scale=sigma_u, size=((len(off) - 1) // 2, 3))
    du = np.zeros_like(off)
    du[1::2], du[2::2] = half, -half
    return centre + off, bulk + du


def write_cosmo_snapshot(folder, clumps, n_files=2, number=7, ids_from=1000):
    """A GADGET-style cosmological snapshot set snapshot_NNNN.K.hdf5 (h5py, by hand):
    comoving Coordinates (kpc/h), Masses (1e10 Msun/h), Velocities u = v_pec / sqrt(a)."""
    pos = np.concatenate([c[0] for c in clumps])
    u = np.concatenate([c[1] for c in clumps])
    n = len(pos)
    ids = np.arange(ids_from, ids_from + n, dtype=np.uint64)
    perm = np.random.default_rng(5).permutation(n)        # snapshot order is arbitrary
    pos, u, ids = pos[perm], u[perm], ids[perm]
    cuts = np.linspace(0, n, n_files + 1).astype(int)
    paths = []
    for k in range(n_files):
        lo, hi = cuts[k], cuts[k + 1]
        name = (f"snapshot_{number:04d}.{k}.hdf5" if n_files > 1
                else f"snapshot_{number:04d}.hdf5")
        path = folder / name
        with h5py.File(path, "w") as f:
            h = f.create_group("Header").attrs
            h["NumPart_ThisFile"] = np.array([0, hi - lo, 0, 0, 0, 0], np.uint64)
            h["NumPart_Total"] = np.array([0, n, 0, 0, 0, 0], np.uint64)
            h["MassTable"] = np.zeros(6)
            h["Time"], h["Redshift"] = A, 1 / A - 1
            h["HubbleParam"], h["Omega0"], h["OmegaLambda"] = H, OMEGA_M, 1 - OMEGA_M
            h["BoxSize"] = 0.0
            h["NumFilesPerSnapshot"] = n_files
            for key, v in UNITS.items():
                h[key] = v
            g = f.create_group("PartType1")
            g["Coordinates"] = pos[lo:hi]
            g["Velocities"] = u[lo:hi]
            g["Masses"] = np.full(hi - lo, M_PART)
            g["ParticleIDs"] = ids[lo:hi]
            un = f.create_group("Units").attrs
            for key, v in UNITS.items():
                un[key] = v
            p = f.create_group("Parameters").attrs
            p["cosmology.sigma8"], p["cosmology.n_s"], p["cosmology.omega_b"] = 0.8, 0.96, 0.045
            p["gravity.theta"] = 0.6
            f.create_group("RunState").attrs["SnapshotNumber"] = number
        paths.append(path)
    return paths, ids, perm


@pytest.fixture
def cosmo_snapshot(tmp_path):
    link = link_kpc_h()
    v_pec = [np.array([100.0, -50.0, 20.0]), np.array([-300.0, 0.0, 75.0]),
             np.array([0.0, 10.0, -10.0]), np.array([5.0, 5.0, 5.0])]
    centres = [np.array([1200.0, -800.0, 300.0]), np.array([-2500.0, 1800.0, -40.0]),
               np.array([50.0, 2900.0, 2200.0]), np.array([-900.0, -2600.0, 1500.0])]
    shells = [6, 9, 3, 4]           # 37, 55, 19 and 25 particles
    # velocities in the file: u = v_pec / sqrt(a)
    clumps = [symmetric_clump(c, s, link, v / math.sqrt(A), 30.0)
              for c, s, v in zip(centres, shells, v_pec)]
    # a loner far from everything
    clumps.append((np.array([[5000.0, 5000.0, 5000.0]]), np.zeros((1, 3))))
    paths, ids, perm = write_cosmo_snapshot(tmp_path, clumps)
    starts = np.cumsum([0] + [len(c[0]) for c in clumps])
    ids_before = np.empty_like(ids)
    ids_before[perm] = ids                                  # IDs in the clumps' order
    members = [np.sort(ids_before[starts[i]:starts[i + 1]]) for i in range(len(clumps))]
    return {"paths": paths, "centres": centres, "v_pec": v_pec, "members": members,
            "lens": [len(c[0]) for c in clumps], "link": link, "folder": tmp_path}


def test_mean_separation_matches_critical_density():
    # rho_crit,0 = 3 (100 km/s/Mpc)^2 / (8 pi G) = 2.7754e11 h^2 Msun/Mpc^3 (G = 4.30092e-9
    # Mpc (km/s)^2 / Msun); with masses in Msun/h and lengths in Mpc/h h drops out
    rho = 3 * 100.0 ** 2 / (8 * math.pi * 4.30092e-9)
    for h in (0.5, 0.7, 1.0):
        d = mean_separation(1e10, 0.3, h, MSUN_G, 1e3 * KPC_CM)
        assert d == pytest.approx((1e10 / (0.3 * rho)) ** (1 / 3), rel=1e-5)
    assert linking_length(0.2, 1e10, 0.3, 0.7, MSUN_G, 1e3 * KPC_CM) == pytest.approx(
        0.2 * (1e10 / (0.3 * rho)) ** (1 / 3), rel=1e-5)


def test_find_halos_and_catalogue_round_trip(cosmo_snapshot):
    s = cosmo_snapshot
    cat = find_halos(s["paths"][1], b=0.2, min_len=20)      # any part of the set
    assert isinstance(cat, HaloCatalogue)
    assert cat.link == pytest.approx(s["link"], rel=1e-12)
    assert cat.cosmological and cat.time == A and cat.number == 7
    assert cat.n_particles == sum(s["lens"])
    # the 19-particle clump and the loner fall below min_len; ordered by length
    order = [1, 0, 3]
    assert cat.group_len.tolist() == [s["lens"][i] for i in order]
    out = write_catalogue(s["folder"], cat, s["paths"][0])
    assert out == s["folder"] / "fof_tab_007.hdf5" == s["folder"] / catalogue_name(7)
    assert not [p for p in os.listdir(s["folder"]) if p.endswith(".tmp")]
    with h5py.File(out, "r") as f:
        hd, g = f["Header"].attrs, f["Group"]
        n, nids = 3, sum(s["lens"][i] for i in order)
        for key, value in (("Ngroups_ThisFile", n), ("Ngroups_Total", n),
                           ("Nids_ThisFile", nids), ("Nids_Total", nids),
                           ("Nsubhalos_ThisFile", 0), ("Nsubhalos_Total", 0)):
            assert hd[key] == value and hd[key].dtype == np.uint64, key
        assert hd["NumFiles"] == 1 and hd["NumFiles"].dtype == np.int32
        assert hd["Time"] == A and hd["Redshift"] == pytest.approx(1.0)
        assert (hd["HubbleParam"], hd["Omega0"], hd["OmegaLambda"], hd["BoxSize"]) == \
            (H, OMEGA_M, 1 - OMEGA_M, 0.0)
        assert hd["LinkingLength"] == pytest.approx(s["link"], rel=1e-12)
        length = g["GroupLen"][...]
        assert g["GroupLen"].dtype == np.int32 and g["GroupLenType"].dtype == np.int32
        assert length.sum() == nids == len(f["IDs/ID"])
        assert np.array_equal(g["GroupLenType"][:, 1], length)
        assert g["GroupLenType"][...].sum() == nids
        mass = g["GroupMass"][...]
        assert g["GroupMass"].dtype == np.float64
        np.testing.assert_allclose(mass, length * M_PART, rtol=1e-13)
        np.testing.assert_allclose(g["GroupMassType"][:, 1], mass, rtol=1e-13)
        gpos, gvel = g["GroupPos"][...], g["GroupVel"][...]
        assert gpos.shape == gvel.shape == (3, 3) and gpos.dtype == np.float64
        for k, i in enumerate(order):
            # centre of mass: comoving, in the file's kpc/h
            np.testing.assert_allclose(gpos[k], s["centres"][i], rtol=0, atol=1e-10)
            # GADGET-4: GroupVel = mean of a^2 dx/dt = a v_pec = a^(3/2) u
            np.testing.assert_allclose(gvel[k], A * s["v_pec"][i], rtol=1e-12, atol=1e-10)
        np.testing.assert_allclose(g["GroupAscale"][...], A)
        ids, off = f["IDs/ID"][...], np.r_[0, np.cumsum(length)[:-1]]
        assert f["IDs/ID"].dtype == np.uint64
        for k, i in enumerate(order):
            assert np.array_equal(ids[off[k]:off[k] + length[k]], s["members"][i])
        # parameters and units copied from the snapshot, GADGET-4's Config flags
        p = f["Parameters"].attrs
        assert p["cosmology.sigma8"] == 0.8 and p["gravity.theta"] == 0.6
        assert p["HubbleParam"] == H and p["Omega0"] == OMEGA_M
        assert f["Units"].attrs["UnitLength_in_cm"] == KPC_CM
        assert f["Config"].attrs["FOF_LINKLENGTH"] == 0.2
        assert f["Config"].attrs["FOF_GROUP_MIN_LEN"] == 20
        assert "Subhalo" not in f
    np.testing.assert_allclose(cat.peculiar_velocity()[0], s["v_pec"][1], rtol=1e-12)
    assert np.array_equal(cat.members(0), s["members"][1])
    np.testing.assert_allclose(cat.masses_msun_h(), cat.group_mass * 1e10, rtol=1e-12)
    with pytest.raises(FileExistsError):
        write_catalogue(s["folder"], cat)
    assert write_catalogue(s["folder"], cat, overwrite=True) == out
    named = write_catalogue(s["folder"] / "mine.hdf5", cat)
    assert named.name == "mine.hdf5"


def test_min_len_and_explicit_link(cosmo_snapshot):
    s = cosmo_snapshot
    stem = s["folder"] / "snapshot_0007"
    assert find_halos(stem, min_len=1).group_len.tolist() == [55, 37, 25, 19, 1]
    assert find_halos(stem, min_len=19).group_len.tolist() == [55, 37, 25, 19]
    assert find_halos(stem, min_len=26).group_len.tolist() == [55, 37]
    assert len(find_halos(stem, min_len=56)) == 0
    # a link shorter than the clumps' spacing (0.45 of the b = 0.2 link) splits everything
    cat = find_halos(stem, link=0.4 * s["link"], min_len=2)
    assert len(cat) == 0 and cat.b is None
    empty = write_catalogue(s["folder"] / "empty.hdf5", cat)
    with h5py.File(empty, "r") as f:
        assert f["Header"].attrs["Ngroups_Total"] == 0 and f["Group/GroupPos"].shape == (0, 3)
    with pytest.raises(ValueError):
        find_halos(stem, min_len=0)


def test_ties_in_length_ordered_by_smallest_id(tmp_path):
    link = link_kpc_h()
    a, _ = symmetric_clump(np.array([0.0, 0, 0]), 4, link, np.zeros(3), 1.0)
    b, _ = symmetric_clump(np.array([3000.0, 0, 0]), 4, link, np.zeros(3), 1.0)
    paths, ids, perm = write_cosmo_snapshot(tmp_path, [(a, np.zeros_like(a)),
                                                       (b, np.zeros_like(b))], n_files=1)
    cat = find_halos(paths[0])
    assert cat.group_len.tolist() == [25, 25]
    assert cat.members(0).min() == 1000 and cat.members(1).min() == 1025
    np.testing.assert_allclose(cat.group_pos[1], [3000.0, 0, 0], atol=1e-10)


def test_non_cosmological_file_needs_a_link(tmp_path):
    path = tmp_path / "snapshot_0001.hdf5"
    pos = np.r_[np.zeros((1, 3)), 0.1 * np.eye(3), [[5.0, 5, 5]]]
    with h5py.File(path, "w") as f:
        h = f.create_group("Header").attrs
        h["Time"], h["Omega0"], h["HubbleParam"], h["NumFilesPerSnapshot"] = 2.5, 0.0, 1.0, 1
        g = f.create_group("PartType1")
        g["Coordinates"], g["Velocities"] = pos, np.ones((5, 3))
        g["Masses"], g["ParticleIDs"] = np.ones(5), np.arange(1, 6, dtype=np.uint64)
    with pytest.raises(ValueError, match="link"):
        find_halos(path)
    cat = find_halos(path, link=0.2, min_len=2)
    assert not cat.cosmological and cat.scale_factor == 1.0
    assert cat.group_len.tolist() == [4] and cat.number == 1
    np.testing.assert_allclose(cat.group_pos[0], [0.025] * 3, atol=1e-15)
    np.testing.assert_allclose(cat.group_vel[0], [1.0] * 3)        # a = 1: the mean velocity
    with h5py.File(path, "r+") as f:            # periodic: the group wraps the corner
        f["Header"].attrs["BoxSize"] = 10.0
        f["PartType1/Coordinates"][...] = np.mod(pos - 0.05, 10.0)
    cat = find_halos(path, link=0.2, min_len=2)
    assert cat.group_len.tolist() == [4] and cat.box_size == 10.0
    np.testing.assert_allclose(cat.group_pos[0], [9.975] * 3, atol=1e-12)


# --------------------------------------------------------------------------------------
# (d) mass functions

COSMO = {"omega_m": 0.3, "omega_lambda": 0.7, "h": 0.7, "sigma8": 0.8, "n_s": 0.96,
         "omega_b": 0.045}


def test_reference_mass_function_is_sane(tmp_path, monkeypatch):
    from colossus.cosmology import cosmology
    monkeypatch.setenv("HOME", str(tmp_path))           # colossus must write no cache
    before = cosmology.current_cosmo
    m = np.array([1e13])
    st = reference_mass_function(COSMO, 0.0, m, "sheth99")
    tinker = reference_mass_function(COSMO, 0.0, m, "tinker08")
    # dn/dlnM at 1e13 Msun/h today: about 4e-4 (h/Mpc)^3
    assert 2e-4 < st[0] < 1e-3 and 2e-4 < tinker[0] < 1e-3
    assert abs(st[0] / tinker[0] - 1) < 0.3
    masses = np.geomspace(1e11, 1e15, 9)
    curve = reference_mass_function(COSMO, 0.0, masses)
    assert np.all(np.diff(curve) < 0)                    # falls with mass
    high_z = reference_mass_function(COSMO, 1.0, masses)
    assert high_z[-1] < 0.05 * curve[-1]                 # clusters are rare at z = 1
    assert os.listdir(tmp_path) == []
    assert cosmology.current_cosmo is before
    with pytest.raises(ValueError, match="sigma8"):
        reference_mass_function({k: v for k, v in COSMO.items() if k != "sigma8"}, 0, m)


def test_cosmology_from_the_snapshot(cosmo_snapshot):
    p = cosmology_params(cosmo_snapshot["paths"][0])
    assert p == pytest.approx({"omega_m": OMEGA_M, "omega_lambda": 1 - OMEGA_M, "h": H,
                               "sigma8": 0.8, "n_s": 0.96, "omega_b": 0.045})
    cat = find_halos(cosmo_snapshot["paths"][0])
    assert cosmology_params(cat) == p
    assert cosmology_params({"Om0": 0.3, "Ode0": 0.7, "H0": 70.0}, sigma8=0.8, n_s=0.96,
                            omega_b=0.045) == pytest.approx(COSMO)
    ref = reference_mass_function(cat, 1.0, np.array([1e12]))
    assert ref[0] == pytest.approx(reference_mass_function(COSMO, 1.0, np.array([1e12]))[0],
                                   rel=1e-12)


def test_mass_function_reproduces_a_known_dn_dlnm():
    # halos drawn from the Sheth-Tormen dn/dlnM in V = 1e8 (Mpc/h)^3 by stratified inverse
    # sampling of the cumulative count (every bin holds its expected count to +-1)
    volume = 1e8
    lnm = np.linspace(np.log(1e12), np.log(1e15), 20001)
    dn = reference_mass_function(COSMO, 0.0, np.exp(lnm))
    cum = np.r_[0, np.cumsum(0.5 * (dn[1:] + dn[:-1]) * np.diff(lnm))] * volume
    masses = np.exp(np.interp(np.arange(int(cum[-1])) + 0.5, cum, lnm))
    edges = np.geomspace(1e12, 1e14, 11)
    mf = mass_function(masses, volume, edges)
    expected = np.diff(np.interp(np.log(edges), lnm, cum)) / volume / np.diff(np.log(edges))
    assert mf.counts.min() > 1000
    np.testing.assert_allclose(mf.dndlnm, expected, rtol=2e-3)
    np.testing.assert_allclose(mf.mass, np.sqrt(edges[1:] * edges[:-1]))
    np.testing.assert_allclose(mf.error, np.sqrt(mf.counts) / volume / np.diff(np.log(edges)))
    # and it is the model's dn/dlnM at the bin centres, to the curvature within a bin
    np.testing.assert_allclose(mf.dndlnm, reference_mass_function(COSMO, 0.0, mf.mass),
                               rtol=0.02)
    auto = mass_function(masses, volume, 5)
    assert auto.counts.sum() == len(masses) and len(auto.edges) == 6
