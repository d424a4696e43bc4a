"""Snapshots: GADGET-4 layout, round trips, pynbody, atomic writes, reading foreign files."""

import warnings

import h5py
import numpy as np
import pytest

from hybridtree.config import validate
from hybridtree.io import snapshot as snapmod
from hybridtree.io.snapshot import (Particles, SnapshotError, read_particles, read_snapshot,
                                    write_snapshot)
from hybridtree.units import G_CGS, Units

UNITS = Units(3.0856775814913673e21, 1.98841e43)


def particles(n=500, seed=0, forces=True):
    rng = np.random.default_rng(seed)
    p = Particles(rng.normal(size=(n, 3)), rng.normal(size=(n, 3)), rng.uniform(0.5, 1.5, n) / n,
                  np.arange(1, n + 1, dtype=np.uint64))
    if forces:
        p.acc, p.pot = rng.normal(size=(n, 3)), -rng.uniform(1, 2, n)
    return p


def test_units_follow_from_G_equal_one():
    u = UNITS
    assert u.gravitational_constant == pytest.approx(1.0, rel=1e-12)
    assert u.velocity_cm_per_s / 1e5 == pytest.approx(207.39, rel=1e-4)      # km/s
    assert u.time_s / 3.15576e13 == pytest.approx(4.7148, rel=1e-4)          # Myr
    assert G_CGS == 6.67430e-8


def test_round_trip_is_exact_and_layout_is_gadget4(tmp_path):
    p = particles()
    s = validate({"gravity": {"theta": 0.7}})
    path = write_snapshot(tmp_path / "snapshot_0003.hdf5", p, 1.25, UNITS, s.flat(),
                          {"Step": 160, "SnapshotNumber": 3, "InitialEnergy": -0.25})
    snap = read_snapshot(path)
    for name in ("pos", "vel", "mass", "ids", "acc", "pot"):
        assert np.array_equal(getattr(snap.particles, name), getattr(p, name)), name
    assert snap.time == 1.25 and snap.units == UNITS
    assert snap.parameters["gravity.theta"] == 0.7 and snap.parameters["gravity.precise"] is True
    assert snap.run_state == {"Step": 160, "SnapshotNumber": 3, "InitialEnergy": -0.25}
    with h5py.File(path, "r") as f:
        h = f["Header"].attrs
        assert list(h["NumPart_ThisFile"]) == [0, 500, 0, 0, 0, 0]
        assert list(h["NumPart_Total"]) == [0, 500, 0, 0, 0, 0]
        assert list(h["NumPart_Total_HighWord"]) == [0] * 6
        assert list(h["MassTable"]) == [0.0] * 6
        for key, value in {"Time": 1.25, "Redshift": 0.0, "BoxSize": 0.0, "NumFilesPerSnapshot": 1,
                           "Omega0": 0.0, "OmegaLambda": 0.0, "HubbleParam": 1.0,
                           "Flag_DoublePrecision": 1}.items():
            assert h[key] == value, key
        g = f["PartType1"]
        for name in ("Coordinates", "Velocities", "ParticleIDs", "Masses", "Potential",
                     "Acceleration"):
            assert len(g[name]) == 500
        assert g["Coordinates"].dtype == np.float64 and g["ParticleIDs"].dtype == np.uint64
        u = f["Units"].attrs
        assert u["UnitLength_in_cm"] == UNITS.length_cm and u["UnitMass_in_g"] == UNITS.mass_g
        assert u["UnitVelocity_in_cm_per_s"] == UNITS.velocity_cm_per_s
        assert u["UnitTime_in_s"] == UNITS.time_s
        assert u["GravitationalConstant"] == pytest.approx(1.0, rel=1e-12)
        assert set(s.flat()) <= set(f["Parameters"].attrs)


def test_pynbody_opens_it_in_physical_units_without_warnings(tmp_path):
    pynbody = pytest.importorskip("pynbody")
    p = particles()
    path = write_snapshot(tmp_path / "snapshot_0000.hdf5", p, 2.0, UNITS, validate({}).flat())
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # any warning (units, cosmology) fails
        f = pynbody.load(str(path))
        pos = f["pos"].in_units("kpc")
        vel = f["vel"].in_units("km s**-1")
        mass = f["mass"].in_units("Msol")
        phi = f["phi"].in_units("km**2 s**-2")
        t = f.properties["time"].in_units("Myr")
        iord = np.asarray(f["iord"])
    order = np.argsort(iord)
    assert np.allclose(pos[order], p.pos, rtol=1e-12)
    assert np.allclose(vel[order], p.vel * 207.3865, rtol=1e-6)
    assert np.allclose(mass[order], p.mass * 1e10 * 1.98841e33 / 1.98847e33, rtol=1e-4)
    assert np.allclose(phi[order], p.pot * 207.3865 ** 2, rtol=1e-6)
    assert t == pytest.approx(2.0 * 4.71483, rel=1e-4)


def test_existing_file_is_not_overwritten(tmp_path):
    path = write_snapshot(tmp_path / "s.hdf5", particles(), 0.0, UNITS)
    before = path.read_bytes()
    with pytest.raises(FileExistsError, match="--overwrite"):
        write_snapshot(path, particles(seed=1), 1.0, UNITS)
    assert path.read_bytes() == before
    write_snapshot(path, particles(seed=1), 1.0, UNITS, overwrite=True)
    assert read_snapshot(path).time == 1.0


def test_a_failed_write_leaves_nothing_under_the_final_name(tmp_path, monkeypatch):
    def broken(group, name, *args, **kwargs):
        if name == "Masses":
            raise OSError("disk full (simulated)")
        return real(group, name, *args, **kwargs)

    real = snapmod._dataset
    monkeypatch.setattr(snapmod, "_dataset", broken)
    with pytest.raises(OSError, match="disk full"):
        write_snapshot(tmp_path / "snapshot_0001.hdf5", particles(), 0.0, UNITS)
    assert list(tmp_path.iterdir()) == []


def test_foreign_file_all_types_flattened_with_mass_table_and_unit_conversion(tmp_path):
    path = tmp_path / "gadget.hdf5"
    with h5py.File(path, "w") as f:
        h = f.create_group("Header").attrs
        h["MassTable"] = [0.0, 0.0, 2.0, 0.0, 0.0, 0.0]
        h["Time"] = 0.5
        f.create_group("PartType1").create_dataset("Coordinates", data=np.ones((3, 3)))
        f["PartType1"].create_dataset("Masses", data=[1.0, 2.0, 3.0])
        f["PartType1"].create_dataset("ParticleIDs", data=[7, 8, 9])
        f.create_group("PartType2").create_dataset("Coordinates", data=np.full((2, 3), 2.0))
        f["PartType2"].create_dataset("Velocities", data=np.full((2, 3), 3.0))
        pa = f.create_group("Parameters").attrs          # GADGET-4 keeps units here
        pa["UnitLength_in_cm"] = 3.0856775814913673e18   # 1 pc
        pa["UnitMass_in_g"] = 1.98841e33                 # 1 Msun
        pa["UnitVelocity_in_cm_per_s"] = 1e5             # km/s
    p, t, file_units = read_particles(path, "all", UNITS)
    assert len(p) == 5
    assert np.allclose(p.pos[:3], 1e-3) and np.allclose(p.pos[3:], 2e-3)
    assert np.allclose(p.mass, np.array([1, 2, 3, 2, 2]) * 1e-10)
    assert np.allclose(p.vel[3:], 3.0 / 207.3865, rtol=1e-5) and np.all(p.vel[:3] == 0)
    assert len(set(p.ids.tolist())) == 5           # IDs missing for PartType2: renumbered
    assert t == pytest.approx(0.5 * (3.0856775814913673e18 / 1e5) / UNITS.time_s)
    one, _, _ = read_particles(path, "PartType1")
    assert len(one) == 3 and list(one.ids) == [7, 8, 9]
    with pytest.raises(SnapshotError, match="no group 'PartType4'"):
        read_particles(path, "PartType4")


@pytest.mark.parametrize("content, message", [
    (None, "no such file"), (b"not hdf5", "not a readable HDF5 file")])
def test_unreadable_files_are_clear_errors(tmp_path, content, message):
    path = tmp_path / "x.hdf5"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(SnapshotError, match=message):
        read_particles(path)
