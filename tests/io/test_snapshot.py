"""Snapshots: GADGET-4 layout, round trips, pynbody, atomic writes, reading foreign files."""

import errno
import os
import warnings

import h5py
import numpy as np
import pytest

from hybridtree.config import validate
from hybridtree.io import hdf5_write as snapmod
from hybridtree.io.snapshot import SnapshotError, read_particles, read_snapshot, write_snapshot
from hybridtree.particles import Particles
from hybridtree.config.units import G_CGS, Units

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

    real = snapmod.unit_dataset
    monkeypatch.setattr(snapmod, "unit_dataset", broken)
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


# --- any part or the stem of a multi-file set -----------------------------------------

def write_set(folder, p, k, number=2):
    """Snapshot ``number`` of ``p`` as ``k`` files ``snapshot_NNNN.K.hdf5`` (uneven)."""
    cuts = np.linspace(0, len(p), k + 1).astype(int)
    cuts[1] += 5
    paths = []
    for rank in range(k):
        lo, hi = cuts[rank], cuts[rank + 1]
        part = Particles(p.pos[lo:hi], p.vel[lo:hi], p.mass[lo:hi], p.ids[lo:hi],
                         p.acc[lo:hi], p.pot[lo:hi])
        paths.append(write_snapshot(folder / f"snapshot_{number:04d}.{rank}.hdf5", part, 0.5,
                                    UNITS, {}, {"Step": 4, "SnapshotNumber": number,
                                                "InitialEnergy": -0.2, "SetId": 77},
                                    part=(rank, k, len(p))))
    return paths


def test_readers_take_any_part_or_the_stem_as_the_whole_set(tmp_path):
    p = particles(n=120)
    paths = write_set(tmp_path, p, 3)
    for arg in [*paths, tmp_path / "snapshot_0002", str(tmp_path / "snapshot_0002")]:
        q, t, units = read_particles(arg)
        snap = read_snapshot(arg)
        assert t == snap.time == 0.5 and units == snap.units == UNITS
        for name in ("pos", "vel", "mass", "ids"):
            assert np.array_equal(getattr(q, name), getattr(p, name)), (arg, name)
            assert np.array_equal(getattr(snap.particles, name), getattr(p, name)), (arg, name)
        assert np.array_equal(snap.particles.acc, p.acc)
        assert np.array_equal(snap.particles.pot, p.pot)
    one = write_snapshot(tmp_path / "snapshot_0005.hdf5", p, 1.0, UNITS)
    assert read_snapshot(tmp_path / "snapshot_0005").path == str(tmp_path / "snapshot_0005")
    assert np.array_equal(read_particles(one.with_suffix(""))[0].pos, p.pos)
    with pytest.raises(SnapshotError, match=r"snapshot_0007: no such file \(nor "
                                            r"snapshot_0007.hdf5 or snapshot_0007.0.hdf5\)"):
        read_snapshot(tmp_path / "snapshot_0007")


# --- write errors inside HDF5 ------------------------------------------------------------

@pytest.mark.parametrize("failure, expected", [
    (OSError(errno.EDQUOT, os.strerror(errno.EDQUOT)), "the disk is full (Disk quota exceeded)"),
    (OSError(errno.EIO, os.strerror(errno.EIO)), "the write failed (Input/output error)"),
    (KeyboardInterrupt(), None)], ids=["quota", "io_error", "interrupt"])
@pytest.mark.parametrize("nth", [1, 10, 40])
def test_a_failing_write_inside_hdf5_is_raised_once_the_file_is_closed(tmp_path, monkeypatch,
                                                                        failure, expected, nth):
    """The nth of the ~47 writes HDF5 makes for this file fails (early data, late data,
    the metadata written while closing): the error comes out of write_snapshot, as a
    SnapshotWriteError naming the snapshot or as the interrupt, and no file is left."""
    real, calls = os.pwrite, []

    def pwrite(fd, data, offset):
        calls.append(offset)
        if len(calls) == nth:
            raise failure
        return real(fd, data, offset)

    monkeypatch.setattr(os, "pwrite", pwrite)
    path = tmp_path / "snapshot_0001.hdf5"
    if expected is None:
        with pytest.raises(KeyboardInterrupt):
            write_snapshot(path, particles(), 0.0, UNITS)
    else:
        with pytest.raises(snapmod.SnapshotWriteError) as info:
            write_snapshot(path, particles(), 0.0, UNITS)
        assert str(info.value) == f"writing {path}: {expected}; the snapshot was not written"
    assert len(calls) >= nth and list(tmp_path.iterdir()) == []


# --- a really full file system ----------------------------------------------------------

FULL_DISK_SCRIPT = r"""
import json, os, sys
import numpy as np
from hybridtree.io.snapshot import SnapshotWriteError, write_snapshot
from hybridtree.particles import Particles
from hybridtree.config.units import Units

folder = sys.argv[1]
units = Units(3.0856775814913673e21, 1.98841e43)


def attempt(n, fill=0):
    for name in os.listdir(folder):
        os.unlink(os.path.join(folder, name))
    if fill:
        try:
            with open(os.path.join(folder, "filler"), "wb") as f:
                f.write(bytes(fill))
        except OSError:
            pass
    rng = np.random.default_rng(n)
    p = Particles(rng.normal(size=(n, 3)), rng.normal(size=(n, 3)), np.full(n, 1.0 / n),
                  np.arange(1, n + 1, dtype=np.uint64), rng.normal(size=(n, 3)),
                  rng.normal(size=n))
    try:
        write_snapshot(os.path.join(folder, "snapshot_0001.hdf5"), p, 1.0, units)
        error = None
    except SnapshotWriteError as exc:
        error = str(exc)
    left = sorted(set(os.listdir(folder)) - {"filler"})
    print(json.dumps({"n": n, "fill": fill, "error": error, "left": left}), flush=True)


for n in (100, 1500, 2000, 3000, 5000, 100000):
    attempt(n)
attempt(10, fill=1 << 20)
"""


def test_a_really_full_file_system_is_a_clean_error(tmp_path):
    """On a 200 kB tmpfs (a private mount namespace: root and unshare needed), snapshots
    that fill it while HDF5 writes data and while it closes the file (which crashed the
    process with exit 139 through HDF5's own driver) and one onto a full disk."""
    import json
    import shutil
    import subprocess
    import sys
    folder = tmp_path / "full"
    folder.mkdir()

    def in_tmpfs(*command):
        """``command`` with a 200 kB tmpfs on ``folder``, seen by it alone."""
        return subprocess.run(["unshare", "--mount", "sh", "-c",
                               'mount -t tmpfs -o size=200k tmpfs "$0" && exec "$@"',
                               str(folder), *command],
                              capture_output=True, text=True, timeout=120)

    probe = in_tmpfs("true") if shutil.which("unshare") else None
    if probe is None or probe.returncode != 0:
        why = probe.stderr.strip() if probe is not None else "no unshare command"
        pytest.skip(f"cannot mount a small tmpfs in a private mount namespace (needs root "
                    f"and unshare): {why}")
    run = in_tmpfs(sys.executable, "-c", FULL_DISK_SCRIPT, str(folder))
    assert run.returncode == 0, (run.returncode, run.stderr[-3000:])
    assert "Traceback" not in run.stderr and "dealloc" not in run.stderr, run.stderr[-3000:]
    results = [json.loads(line) for line in run.stdout.splitlines()]
    assert [r["n"] for r in results] == [100, 1500, 2000, 3000, 5000, 100000, 10]
    assert results[0] == {"n": 100, "fill": 0, "error": None, "left": ["snapshot_0001.hdf5"]}
    message = (f"writing {folder / 'snapshot_0001.hdf5'}: the disk is full (No space left on "
               f"device); the snapshot was not written")
    for r in results[2:]:
        assert r["error"] == message and r["left"] == [], r
    assert results[1]["left"] == ([] if results[1]["error"] else ["snapshot_0001.hdf5"])
