"""Periodic-box ICs: GADGET-2 binary (formats 1 and 2) written and read back, its byte
layout checked against GADGET-2's by hand, GADGET-style HDF5 files (GADGET-4, monofonIC)
read to values computed here independently, and the errors for files that are not boxes."""

import struct

import h5py
import numpy as np
import pytest

from hybridtree.config.units import MPC_CM, MSUN_1E10_G, Units
from hybridtree.io.box_ics import box_ics_files, read_box_ics
from hybridtree.io.gadget_binary import write_gadget2

U = Units(MPC_CM, MSUN_1E10_G)          # internal: Mpc, 10^10 Msun, G = 1
KPC_H, MPC_H, M10_H, KMS = 3.085678e21, 3.085678e24, 1.989e43, 1e5    # GADGET's units
A, H, OM, OL = 0.02, 0.7, 0.3, 0.7


def box_particles(n1=200, n2=100, box=50.0, seed=1, big_ids=False):
    """Type 1 of equal masses, type 2 of unequal ones, shuffled together."""
    rng = np.random.default_rng(seed)
    n = n1 + n2
    types = rng.permutation(np.repeat([1, 2], [n1, n2])).astype(np.int8)
    mass = np.where(types == 1, 0.25, rng.uniform(1.0, 2.0, n))
    ids = rng.permutation(n).astype(np.uint64) + (np.uint64(2 ** 40) if big_ids else 1)
    return dict(pos=rng.uniform(0, box, (n, 3)), vel=rng.normal(0, 0.3, (n, 3)), mass=mass,
                ids=ids, box=box, types=types)


def write(stem, p, **kw):
    return write_gadget2(stem, p["pos"], p["vel"], p["mass"], p["ids"], p["box"], A, OM, OL, H,
                         units=U, types=p["types"], **kw)


def check_same(ics, p, rtol):
    order = np.argsort(p["types"], kind="stable")
    assert np.array_equal(ics.types, p["types"][order])
    assert np.array_equal(ics.ids, p["ids"][order])
    np.testing.assert_allclose(ics.pos, p["pos"][order], rtol=0, atol=rtol * p["box"])
    np.testing.assert_allclose(ics.vel, p["vel"][order], rtol=rtol, atol=rtol)
    np.testing.assert_allclose(ics.mass, p["mass"][order], rtol=rtol)
    assert ics.box == pytest.approx(p["box"], rel=1e-14)
    assert (ics.a, ics.omega_m, ics.omega_lambda, ics.h) == (A, OM, OL, H)
    assert ics.pos.dtype == ics.vel.dtype == ics.mass.dtype == np.float64
    assert ics.ids.dtype == np.uint64 and ics.types.dtype == np.int8
    assert ((ics.pos >= 0) & (ics.pos < ics.box)).all()


@pytest.mark.parametrize("fmt", [1, 2])
@pytest.mark.parametrize("id_bytes", [4, 8])
@pytest.mark.parametrize("double", [False, True])
def test_binary_round_trip(tmp_path, fmt, id_bytes, double):
    p = box_particles(big_ids=id_bytes == 8)
    write(tmp_path / "ics", p, fmt=fmt, id_bytes=id_bytes, double=double)
    ics = read_box_ics(tmp_path / "ics", U)
    check_same(ics, p, 1e-12 if double else 2e-6)
    assert f"format {fmt}" in ics.source and f"ID {id_bytes * 8}-bit" in ics.source
    assert f"POS {64 if double else 32}-bit" in ics.source


def test_binary_layout_is_gadget2s(tmp_path):
    """Bytes checked by hand against GADGET-2's header and record layout."""
    pos, vel = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), np.array([[1.0, -1, 0], [0, 2, 3]])
    write_gadget2(tmp_path / "f1", pos, vel, np.array([0.5, 0.5]), np.array([7, 9]), 10.0, A,
                  OM, OL, H, units=U)
    raw = (tmp_path / "f1").read_bytes()
    assert struct.unpack("<i", raw[:4])[0] == 256 == struct.unpack("<i", raw[260:264])[0]
    hd = raw[4:260]
    assert struct.unpack("<6i", hd[:24]) == (0, 2, 0, 0, 0, 0)
    m_file = 0.5 * MSUN_1E10_G * H / M10_H
    assert struct.unpack("<6d", hd[24:72])[1] == pytest.approx(m_file, rel=1e-15)
    assert struct.unpack("<2d", hd[72:88]) == pytest.approx((A, 1 / A - 1))
    assert struct.unpack("<6I", hd[96:120]) == (0, 2, 0, 0, 0, 0)
    assert struct.unpack("<i", hd[124:128])[0] == 1
    box, om, ol, h = struct.unpack("<4d", hd[128:160])
    assert box == pytest.approx(10.0 * MPC_CM * H / KPC_H) and (om, ol, h) == (OM, OL, H)
    rest = raw[264:]
    assert struct.unpack("<i", rest[:4])[0] == 24                      # POS: 2 x 3 float32
    x = np.frombuffer(rest[4:28], "<f4").reshape(2, 3)
    np.testing.assert_allclose(x, pos * MPC_CM * H / KPC_H, rtol=1e-7)
    u = np.frombuffer(rest[36:60], "<f4").reshape(2, 3)
    v_kms = vel * U.velocity_cm_per_s / KMS
    np.testing.assert_allclose(u, v_kms / np.sqrt(A), rtol=1e-6)
    assert np.frombuffer(rest[68:76], "<u4").tolist() == [7, 9]
    assert len(rest) == 3 * 8 + 24 + 24 + 8                           # no MASS block

    write_gadget2(tmp_path / "f2", pos, vel, np.array([0.5, 0.7]), np.array([7, 9]), 10.0, A,
                  OM, OL, H, units=U, fmt=2)
    raw = (tmp_path / "f2").read_bytes()
    assert struct.unpack("<i4sii", raw[:16]) == (8, b"HEAD", 264, 8)
    at, blocks = 0, []
    while at < len(raw):            # <8> label <n + 8> <8>  <n> data <n>
        _, label, nextblock, _ = struct.unpack("<i4sii", raw[at:at + 16])
        n = struct.unpack("<i", raw[at + 16:at + 20])[0]
        assert nextblock == n + 8 and raw[at + 20 + n:at + 24 + n] == raw[at + 16:at + 20]
        blocks.append((label, n))
        at += 24 + n
    assert blocks == [(b"HEAD", 256), (b"POS ", 24), (b"VEL ", 24), (b"ID  ", 8), (b"MASS", 8)]


def test_music_style_set_of_three_files_in_mpc(tmp_path):
    p = box_particles(n1=301, n2=97, box=100.0, big_ids=True)
    files = write(tmp_path / "ics_gadget.dat", p, n_files=3, id_bytes=8,
                  unit_length_cm=MPC_H)
    assert [f.name for f in files] == [f"ics_gadget.dat.{k}" for k in range(3)]
    for name in ("ics_gadget.dat", "ics_gadget.dat.2"):
        assert box_ics_files(tmp_path / name) == files
        ics = read_box_ics(tmp_path / name, U, length_unit_cm=MPC_H)
        check_same(ics, p, 2e-6)
        assert ics.source.endswith("3 files")
    as_kpc = read_box_ics(tmp_path / "ics_gadget.dat", U)           # GADGET's default kpc/h
    assert as_kpc.box == pytest.approx(p["box"] / 1000, rel=1e-6)


def test_byte_swapped_file(tmp_path):
    p = box_particles()
    for fmt in (1, 2):
        write(tmp_path / f"be{fmt}", p, fmt=fmt, endian=">", double=True)
        assert (tmp_path / f"be{fmt}").read_bytes()[:4] == struct.pack(">i", 256 if fmt == 1
                                                                       else 8)
        ics = read_box_ics(tmp_path / f"be{fmt}", U)
        check_same(ics, p, 1e-12)
        assert "big-endian" in ics.source


def write_hdf5(path, groups, *, box=50.0, n_files=1, total=None, units=True, params=True):
    """A GADGET-4-style file: Header, Parameters (cosmology and units, Mpc/h), PartTypeN."""
    with h5py.File(path, "w") as f:
        hd = f.create_group("Header").attrs
        counts = [len(groups[t]["Coordinates"]) if t in groups else 0 for t in range(6)]
        hd["NumPart_ThisFile"] = np.array(counts, np.uint32)
        hd["NumPart_Total"] = np.array(total or counts, np.uint32)
        hd["NumPart_Total_HighWord"] = np.zeros(6, np.uint32)
        hd["MassTable"] = np.array([0, 0.125, 0, 0, 0, 0], np.float64)
        hd["Time"], hd["Redshift"], hd["NumFilesPerSnapshot"] = A, 1 / A - 1, n_files
        if box is not None:
            hd["BoxSize"] = box
        if params:
            pa = f.create_group("Parameters").attrs
            pa["Omega0"], pa["OmegaLambda"], pa["HubbleParam"] = OM, OL, H
            if units:
                pa["UnitLength_in_cm"], pa["UnitMass_in_g"] = MPC_H, M10_H
                pa["UnitVelocity_in_cm_per_s"] = KMS
        for t, cols in groups.items():
            g = f.create_group(f"PartType{t}")
            for key, value in cols.items():
                g[key] = value


def hdf5_groups(seed, n0=5, n1=20, box=50.0):
    rng = np.random.default_rng(seed)
    gas = {"Coordinates": rng.uniform(0, box, (n0, 3)).astype(np.float32),
           "Velocities": rng.normal(0, 50, (n0, 3)).astype(np.float32),
           "ParticleIDs": np.arange(1000 * seed, 1000 * seed + n0, dtype=np.uint64),
           "Masses": rng.uniform(0.01, 0.02, n0)}
    dm = {"Coordinates": rng.uniform(0, box, (n1, 3)),
          "Velocities": rng.normal(0, 50, (n1, 3)),
          "ParticleIDs": np.arange(1000 * seed + 100, 1000 * seed + 100 + n1, dtype=np.uint64)}
    return {0: gas, 1: dm}


def expected(files):
    """Internal values worked out here: Mpc/h -> Mpc, u -> sqrt(a) u km/s, 1e10 Msun/h."""
    L, M, V = MPC_H / H / MPC_CM, M10_H / H / MSUN_1E10_G, np.sqrt(A) * KMS / U.velocity_cm_per_s
    out = {k: [] for k in ("pos", "vel", "mass", "ids", "types")}
    for t in (0, 1):
        for g in files:
            n = len(g[t]["Coordinates"])
            out["pos"].append(g[t]["Coordinates"].astype(np.float64) * L)
            out["vel"].append(g[t]["Velocities"].astype(np.float64) * V)
            out["mass"].append(g[t]["Masses"] * M if t == 0 else np.full(n, 0.125 * M))
            out["ids"].append(g[t]["ParticleIDs"])
            out["types"].append(np.full(n, t))
    return {k: np.concatenate(v) for k, v in out.items()}


def check_expected(ics, want, box=50.0):
    np.testing.assert_allclose(ics.pos, want["pos"], rtol=1e-13)
    np.testing.assert_allclose(ics.vel, want["vel"], rtol=1e-13)
    np.testing.assert_allclose(ics.mass, want["mass"], rtol=1e-13)
    assert np.array_equal(ics.ids, want["ids"]) and np.array_equal(ics.types, want["types"])
    assert ics.box == pytest.approx(box * MPC_H / H / MPC_CM, rel=1e-13)
    assert (ics.a, ics.omega_m, ics.omega_lambda, ics.h) == (A, OM, OL, H)


def test_gadget4_hdf5_with_parameters_group(tmp_path):
    g = hdf5_groups(1)
    write_hdf5(tmp_path / "ics.hdf5", g)
    for name in ("ics.hdf5", "ics"):
        ics = read_box_ics(tmp_path / name, U)
        check_expected(ics, expected([g]))
        assert ics.source == "GADGET HDF5"


@pytest.mark.parametrize("names", [["ics.0.hdf5", "ics.1.hdf5", "ics.2.hdf5"],
                                   ["ics.hdf5.0", "ics.hdf5.1", "ics.hdf5.2"]])
def test_multi_file_hdf5_set(tmp_path, names):
    gs = [hdf5_groups(k + 1, n0=3 + k, n1=10 + k) for k in range(3)]
    total = [3 + 4 + 5, 10 + 11 + 12, 0, 0, 0, 0]
    for name, g in zip(names, gs):
        write_hdf5(tmp_path / name, g, n_files=3, total=total)
    stem = names[0][:-2] if names[0].endswith(".0") else "ics"
    for path in (tmp_path / stem, tmp_path / names[1]):
        check_expected(read_box_ics(path, U), expected(gs))


def test_slightly_outside_is_wrapped(tmp_path):
    g = hdf5_groups(1)
    g[1]["Coordinates"][0] = [-0.5, 50.0, 50.25]
    write_hdf5(tmp_path / "ics.hdf5", g)
    ics = read_box_ics(tmp_path / "ics.hdf5", U)
    L = MPC_H / H / MPC_CM
    np.testing.assert_allclose(ics.pos[5], [49.5 * L, 0.0, 0.25 * L], rtol=1e-12)


def damaged(tmp_path, at, value):
    p = box_particles()
    write(tmp_path / "ics", p)
    raw = bytearray((tmp_path / "ics").read_bytes())
    raw[at:at + len(value)] = value
    (tmp_path / "ics").write_bytes(bytes(raw))
    return tmp_path / "ics"


@pytest.mark.parametrize("at, value, message", [
    (264 + 4 + 300 * 12, struct.pack("<i", 999), "inconsistent block sizes"),   # POS end marker
    (4 + 4, struct.pack("<i", 201), "inconsistent block sizes"),     # npart[1] one too many
    (4 + 128, struct.pack("<d", 0.0), "BoxSize is 0"),
    (4 + 72, struct.pack("<d", 0.5), "not the scale factor"),        # Time vs Redshift
])
def test_errors_of_damaged_binary_files(tmp_path, at, value, message):
    path = damaged(tmp_path, at, value)
    with pytest.raises(ValueError, match=message) as err:
        read_box_ics(path, U)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_truncated_and_foreign_files(tmp_path):
    p = box_particles()
    write(tmp_path / "ics", p)
    raw = (tmp_path / "ics").read_bytes()
    (tmp_path / "cut").write_bytes(raw[:-100])
    with pytest.raises(ValueError, match="truncated"):
        read_box_ics(tmp_path / "cut", U)
    (tmp_path / "notes.txt").write_text("BoxSize = 100\n" * 20)
    with pytest.raises(ValueError, match="neither a GADGET-2 binary file .* nor an HDF5"):
        read_box_ics(tmp_path / "notes.txt", U)
    with h5py.File(tmp_path / "other.hdf5", "w") as f:
        f["x"] = [1.0]
    with pytest.raises(ValueError, match="without a Header group"):
        read_box_ics(tmp_path / "other.hdf5", U)
    with pytest.raises(ValueError, match="no such file"):
        read_box_ics(tmp_path / "absent", U)


def test_missing_boxsize_and_box_outside(tmp_path):
    write_hdf5(tmp_path / "nobox.hdf5", hdf5_groups(1), box=None)
    with pytest.raises(ValueError, match="nobox.hdf5: BoxSize is absent"):
        read_box_ics(tmp_path / "nobox.hdf5", U)
    g = hdf5_groups(1)
    g[1]["Coordinates"][3, 1] = 125.0                       # 2.5 boxes
    write_hdf5(tmp_path / "far.hdf5", g)
    with pytest.raises(ValueError, match="1 particles of type 1 lie more than one box outside"):
        read_box_ics(tmp_path / "far.hdf5", U)
    p = box_particles()
    p["pos"][0] = [-60.0, 1, 1]
    write_gadget2(tmp_path / "far", p["pos"], p["vel"], p["mass"], p["ids"], 50.0, A, OM, OL,
                  H, units=U)
    raw = bytearray((tmp_path / "far").read_bytes())            # the writer wraps: unwrap
    raw[268:272] = struct.pack("<f", -60.0 * MPC_CM * H / KPC_H)
    (tmp_path / "far").write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="more than one box outside"):
        read_box_ics(tmp_path / "far", U)


def test_missing_piece_of_a_set(tmp_path):
    p = box_particles()
    write(tmp_path / "ics", p, n_files=3)
    (tmp_path / "ics.1").unlink()
    with pytest.raises(ValueError, match=r"ics.0: ics.1, file 1 of this 3-file set, is missing"):
        read_box_ics(tmp_path / "ics", U)
    gs = [hdf5_groups(k + 1) for k in range(2)]
    write_hdf5(tmp_path / "snap.0.hdf5", gs[0], n_files=2, total=[10, 40, 0, 0, 0, 0])
    with pytest.raises(ValueError, match="snap.1.hdf5, file 1 of this 2-file set, is missing"):
        read_box_ics(tmp_path / "snap.0.hdf5", U)
    write_hdf5(tmp_path / "snap.1.hdf5", gs[1], n_files=2, total=[10, 40, 0, 0, 0, 0])
    assert read_box_ics(tmp_path / "snap", U).ids.size == 50
    write_hdf5(tmp_path / "snap.0.hdf5", gs[0], n_files=2, total=[10, 41, 0, 0, 0, 0])
    with pytest.raises(ValueError, match="differ from the 2 files'"):
        read_box_ics(tmp_path / "snap", U)
