"""Issue 56 item 4, the host side at 2^30: single-precision snapshots
(``output.double_precision = false``: float32 floats, ``Flag_DoublePrecision`` 0, no
restart from them) and snapshots of a device state streamed a chunk of rows at a time
(the host holds one chunk, the file is the one written in one piece)."""

import h5py
import numpy as np
import pyopencl as cl
import pytest

import hybridtree
from hybridtree.cli import main
from hybridtree.config.units import Units
from hybridtree.ics import plummer
from hybridtree.io.snapshot import read_snapshot, write_snapshot
from hybridtree.particles import Particles
from hybridtree.state.device import DeviceState
from tests.helpers import one_error_line, run_config

DT = 1 / 64
CONFIG_FILES = {"small.toml": run_config(300, 4, 0.6, 4, 2, 2, DT)}
FLOATS = ("Coordinates", "Velocities", "Masses", "Potential", "Acceleration")


def _particles(n: int, seed: int = 3) -> Particles:
    rng = np.random.default_rng(seed)
    # far from the origin too: float32 keeps 24 bits of any magnitude
    pos = rng.normal(size=(n, 3)) * np.array([1.0, 1e3, 1e-3])
    return Particles(pos, rng.normal(size=(n, 3)), rng.uniform(0.5, 1.5, n) / n,
                     rng.permutation(n).astype(np.uint64) + 1, rng.normal(size=(n, 3)),
                     -rng.uniform(size=n), rng.choice([1, 2], n).astype(np.uint8))


def test_a_single_precision_snapshot_holds_the_values_rounded_to_float32(tmp_path):
    p, units = _particles(4000), Units(1.0, 1.0)
    f64 = write_snapshot(tmp_path / "f64.hdf5", p, 0.5, units)
    f32 = write_snapshot(tmp_path / "f32.hdf5", p, 0.5, units, double=False)
    rows = {t: p.types == t for t in (1, 2)}
    with h5py.File(f32, "r") as f, h5py.File(f64, "r") as g:       # plain h5py
        assert f["Header"].attrs["Flag_DoublePrecision"] == 0
        assert g["Header"].attrs["Flag_DoublePrecision"] == 1
        for t, mine in rows.items():
            want = {"Coordinates": p.pos, "Velocities": p.vel, "Masses": p.mass,
                    "Potential": p.pot, "Acceleration": p.acc}
            for name in FLOATS:
                d, e = f[f"PartType{t}/{name}"], g[f"PartType{t}/{name}"]
                assert d.dtype == np.float32 and e.dtype == np.float64, name
                assert np.array_equal(d[:], want[name][mine].astype(np.float32)), name
                assert np.array_equal(e[:], want[name][mine]), name
                assert dict(d.attrs) == dict(e.attrs), name       # the same units
            ids = f[f"PartType{t}/ParticleIDs"]
            assert ids.dtype == np.uint64 and np.array_equal(ids[:], p.ids[mine])
        # the floats take half the room: 52 bytes a particle against 96 (IDs stay 8)
        for name in ("Coordinates", "Velocities"):
            assert (f[f"PartType1/{name}"].id.get_storage_size() * 2
                    == g[f"PartType1/{name}"].id.get_storage_size())
    assert f32.stat().st_size < 0.6 * f64.stat().st_size
    snap = read_snapshot(f32)                    # our reader: float64 of the float32 bits
    order = np.argsort(snap.particles.ids)
    ref = np.argsort(p.ids)
    for got, want in ((snap.particles.pos, p.pos), (snap.particles.vel, p.vel),
                      (snap.particles.mass, p.mass), (snap.particles.pot, p.pot),
                      (snap.particles.acc, p.acc)):
        assert got.dtype == np.float64
        assert np.array_equal(got[order], want[ref].astype(np.float32).astype(np.float64))
    # 2^-24 of each coordinate's size, whatever its magnitude
    err = np.abs(snap.particles.pos[order] - p.pos[ref]) / np.abs(p.pos[ref])
    assert err.max() <= 2.0 ** -24


def test_a_restart_from_a_single_precision_snapshot_is_refused(here, capsys):
    """A restart from float32 positions is not the run continued bit for bit: refused in
    one line that says what to do; a new run from its particles (ics.kind = file) works."""
    assert main(["run", "small.toml", "--quiet", "--set", "output.double_precision=false"]) == 0
    with h5py.File(here / "out" / "snapshot_0001.hdf5", "r") as f:
        assert f["PartType1/Coordinates"].dtype == np.float32
    assert main(["run", "--restart", "out", "--set", "time.t_end=0.125"]) == 2
    one_error_line(capsys, "single precision", "output.double_precision = false",
                   "ics.kind=file")
    assert main(["run", "small.toml", "--quiet", "--set", "output.dir=again", "--set",
                 "ics.kind=file", "--set", "ics.file=out/snapshot_0001.hdf5"]) == 0


def test_a_restart_point_is_double_precision_whatever_the_setting(here):
    with hybridtree.Simulation.from_config("small.toml", quiet=True, output="sig", settings={
            "output.double_precision": False}) as sim:
        sim.step(1)
        sim._output.snapshot(1, wait=True, restart=True)
    with h5py.File(here / "sig" / "restart.hdf5", "r") as f:
        assert f["Header"].attrs["Flag_DoublePrecision"] == 1
        assert all(f[f"PartType1/{name}"].dtype == np.float64 for name in FLOATS)
    assert main(["run", "--restart", "sig/restart.hdf5", "--quiet"]) == 0


@pytest.mark.parametrize("parts", [("full",), ("soft", "hard")])
def test_download_rows_are_the_rows_of_download(runtime, parts):
    p = _particles(1000)
    s = DeviceState(runtime, p, parts)
    rng = np.random.default_rng(5)
    for part in parts[1:]:          # a hybrid run's two parts: their sum comes down
        cl.enqueue_copy(runtime.queue, s.acc[part], rng.normal(size=(1000, 3)))
    whole = s.download()
    bits = [s.download_rows(lo, min(lo + 300, 1000)) for lo in range(0, 1000, 300)]
    for name in ("pos", "vel", "mass", "ids", "acc", "pot", "types"):
        got = np.concatenate([getattr(b, name) for b in bits])
        assert got.dtype == getattr(whole, name).dtype
        assert np.array_equal(got, getattr(whole, name)), name
    assert len(s.download_rows(1000, 1000)) == 0


def test_type_counts_come_a_chunk_at_a_time(runtime, monkeypatch):
    from hybridtree.state import device
    p = _particles(1000)
    s = DeviceState(runtime, p, ("full",))
    want = np.bincount(p.types, minlength=6)
    assert np.array_equal(s.type_counts(), want)
    monkeypatch.setattr(device, "TYPE_ROWS", 300)
    assert np.array_equal(s.type_counts(), want)


def _same_files(a, b) -> None:
    """Every group, dataset (dtype and bits) and attribute of ``a`` and ``b`` alike (but
    the setting output.dir: the runs write to two folders)."""
    with h5py.File(a, "r") as f, h5py.File(b, "r") as g:
        def visit(name, obj):
            other = g[name]
            assert dict(obj.attrs).keys() == dict(other.attrs).keys(), name
            for k, v in obj.attrs.items():
                if k != "output.dir":
                    assert np.array_equal(np.asarray(v), np.asarray(other.attrs[k])), (name, k)
            if isinstance(obj, h5py.Dataset):
                assert obj.dtype == other.dtype and np.array_equal(obj[:], other[:]), name
        f.visititems(visit)
        assert sorted(f) == sorted(g)


def test_a_device_state_snapshot_is_streamed_and_the_same_file(tmp_path, monkeypatch):
    """At most ROWS particles on the host at once (no whole download), written in the
    foreground; the files those written from one whole download, bit for bit."""
    from hybridtree.io import hdf5_columns
    monkeypatch.setenv("HYBRIDTREE_STATE", "device")
    pos, vel, mass = plummer(2000, seed=4)
    types = np.random.default_rng(1).choice([1, 2], 2000)      # rows of a type cross chunks
    hybrid = {"hybrid.enabled": True, "hybrid.r_in": 0.02, "hybrid.r_out": 0.1,
              "hybrid.n_hard": 2}       # an acceleration of two parts

    def run(folder, settings):
        with hybridtree.Simulation(pos, vel, mass, types=types, dt=DT, snapshot_dt=2 * DT,
                                   output=tmp_path / folder, quiet=True,
                                   settings=settings) as sim:
            sim.step(3)
    for name, settings in (("plain", {}), ("hybrid", hybrid)):
        run(f"{name}_whole", settings)
        rows, whole = [], []
        monkeypatch.setattr(hdf5_columns, "ROWS", 700)
        monkeypatch.setattr(DeviceState, "download", lambda *a, **k: whole.append(1))
        real = DeviceState.download_rows

        def counted(self, lo, hi):
            rows.append(hi - lo)
            return real(self, lo, hi)
        monkeypatch.setattr(DeviceState, "download_rows", counted)
        run(f"{name}_streamed", settings)
        monkeypatch.undo()
        monkeypatch.setenv("HYBRIDTREE_STATE", "device")
        assert not whole and max(rows) == 700 and sum(rows) == 3 * 2000, rows   # 3 files
        for k in range(3):
            _same_files(tmp_path / f"{name}_whole" / f"snapshot_{k:04d}.hdf5",
                        tmp_path / f"{name}_streamed" / f"snapshot_{k:04d}.hdf5")
