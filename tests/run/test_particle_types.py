"""GADGET particle types through a whole run (issue 32 item 1): a three-component file
(halo PartType1, disk PartType2, bulge PartType3 with its mass in the MassTable) keeps
every particle in its own type and ID through a run, a restart, the public API and two
processes (gathered and per-process files)."""

import math
import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

import hybridtree
from tests.helpers import mpiexec, one_error_line
from hybridtree.cli import main
from hybridtree.config import SCHEMA
from hybridtree.config.units import G_CGS, Units
from hybridtree.ics import plummer

ROOT = Path(__file__).resolve().parents[2]
DT = 1 / 64
COUNTS = {1: 300, 2: 200, 3: 100}
BULGE_MASS = 0.4 / 100 / 3           # the bulge's particles: one MassTable entry
# the file states no units: GADGET's kpc, 1e10 Msun and km/s; G = 1 velocities in km/s
V_KMS = np.sqrt(G_CGS * 1.989e43 / 3.085678e21) / 1e5
CONFIG = f"""
[ics]
kind = "file"
file = "galaxy.hdf5"
[gravity]
eps = 0.02
theta = 0.5
n_leaf = 8
[time]
dt = {DT}
t_end = {8 * DT}
[output]
dir = "out"
snapshot_dt = {4 * DT}
diag_every = 4
"""


def write_galaxy(path: Path, seed: int = 7) -> dict[int, np.ndarray]:
    """Three Plummer components, IDs shuffled over the types (no type can be told from
    its IDs); the bulge without a Masses dataset.  Returns the IDs of each type."""
    rng = np.random.default_rng(seed)
    n = sum(COUNTS.values())
    ids = rng.permutation(np.arange(1, n + 1, dtype=np.uint64) * 3 + 10)
    out, lo = {}, 0
    with h5py.File(path, "w") as f:
        h = f.create_group("Header").attrs
        counts = np.zeros(6, np.uint32)
        table = np.zeros(6)
        table[3] = BULGE_MASS
        for t, m in COUNTS.items():
            counts[t] = m
        h["NumPart_ThisFile"] = counts
        h["NumPart_Total"] = counts
        h["MassTable"] = table
        h["Time"] = 0.0
        h["NumFilesPerSnapshot"] = 1
        for t, m in COUNTS.items():
            pos, vel, mass = plummer(m, seed=seed + t)
            scale = {1: 1.0, 2: 0.5, 3: 0.2}[t]
            g = f.create_group(f"PartType{t}")
            g["Coordinates"] = pos * scale
            g["Velocities"] = vel / np.sqrt(scale) * V_KMS
            if t != 3:
                g["Masses"] = mass * {1: 0.4, 2: 0.2}[t]
            g["ParticleIDs"] = ids[lo:lo + m]
            out[t] = np.sort(ids[lo:lo + m])
            lo += m
    return out


def types_of(path: Path) -> dict[int, np.ndarray]:
    """The sorted IDs of each PartTypeN of a snapshot (every file of a set), checking the
    header's counts per type."""
    files = sorted(path.parent.glob(path.name.split(".")[0] + "*.hdf5"))
    ids: dict[int, list] = {}
    totals = None
    for q in files:
        with h5py.File(q, "r") as f:
            h = f["Header"].attrs
            totals = h["NumPart_Total"]
            for t in range(6):
                if f"PartType{t}" in f:
                    got = f[f"PartType{t}/ParticleIDs"][...]
                    assert h["NumPart_ThisFile"][t] == len(got)
                    assert len(f[f"PartType{t}/Coordinates"]) == len(got)
                    ids.setdefault(t, []).append(got)
                else:
                    assert h["NumPart_ThisFile"][t] == 0
    out = {t: np.sort(np.concatenate(v)) for t, v in ids.items()}
    assert {t: int(totals[t]) for t in range(6) if totals[t]} == {t: len(v) for t, v in out.items()}
    return out


@pytest.fixture
def galaxy(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.toml").write_text(CONFIG)
    return write_galaxy(tmp_path / "galaxy.hdf5")


def assert_same_types(got: dict, want: dict) -> None:
    assert sorted(got) == sorted(want)
    for t in want:
        assert np.array_equal(got[t], want[t]), t


def test_a_run_and_its_restart_keep_every_type(galaxy, tmp_path, capsys):
    assert main(["run", "c.toml", "--quiet"]) == 0
    for k in range(3):
        assert_same_types(types_of(tmp_path / "out" / f"snapshot_{k:04d}.hdf5"), galaxy)
    with h5py.File(tmp_path / "out" / "snapshot_0000.hdf5", "r") as f:
        # the MassTable's bulge mass, read and written back per particle (GADGET's
        # 1e10 Msun = 1.989e43 g of the file in the run's 1.98841e43 g)
        bulge = f["PartType3/Masses"][...]
        assert np.all(bulge == bulge[0])
        assert bulge[0] == pytest.approx(BULGE_MASS * 1.989e43 / 1.98841e43, rel=1e-12)
        assert np.all(f["PartType2/Masses"][...] > 0)
    # diagnostics_types.csv: each type at each report; the parts add up to the whole
    from hybridtree.analysis.diagnostics import read_diagnostics
    whole = read_diagnostics(tmp_path / "out" / "diagnostics.csv")
    parts = read_diagnostics(tmp_path / "out" / "diagnostics_types.csv")
    assert [(int(r["step"]), int(r["type"])) for r in parts] == \
        [(int(w["step"]), t) for w in whole for t in COUNTS]
    for w in whole:
        mine = [r for r in parts if r["step"] == w["step"]]
        assert [int(r["particles"]) for r in mine] == list(COUNTS.values())
        for key in ("kinetic", "potential"):
            assert sum(float(r[key]) for r in mine) == pytest.approx(float(w[key]), rel=1e-9)
        for key in ("lx", "ly", "lz"):
            assert sum(float(r[key]) for r in mine) == pytest.approx(float(w[key]), abs=1e-12)
        r50 = [float(r["r50"]) for r in mine]
        assert r50[0] > r50[1] > r50[2] > 0          # halo, disk, bulge: 1, 0.5, 0.2 scales
    assert main(["info", "out/snapshot_0002.hdf5"]) == 0
    info = capsys.readouterr().out
    for t, m in COUNTS.items():
        assert f"{m} PartType{t}" in info, info
        assert f"PartType{t}: {m} particles, mass" in info, info
    # a restart from the middle snapshot reads every type back and reaches the same end
    assert main(["run", "--restart", "out/snapshot_0001.hdf5", "--quiet",
                 "--set", "output.dir=again"]) == 0
    end = tmp_path / "again" / "snapshot_0002.hdf5"
    assert_same_types(types_of(end), galaxy)
    with h5py.File(end, "r") as a, h5py.File(tmp_path / "out" / "snapshot_0002.hdf5", "r") as b:
        for t in COUNTS:
            for key in ("ParticleIDs", "Coordinates", "Velocities", "Masses"):
                assert a[f"PartType{t}/{key}"][...].tobytes() == \
                    b[f"PartType{t}/{key}"][...].tobytes(), (t, key)


def test_the_api_takes_gives_and_saves_types(galaxy, tmp_path):
    sim = hybridtree.Simulation.from_snapshot("galaxy.hdf5", quiet=True, eps=0.02, dt=DT)
    by_type = {t: np.sort(sim.ids[sim.types == t]) for t in range(6) if (sim.types == t).any()}
    assert_same_types(by_type, galaxy)
    assert sim.types.dtype == np.uint8 and not sim.types.flags.writeable
    sim.evolve(2 * DT)
    sim.save("saved.hdf5")
    assert_same_types(types_of(tmp_path / "saved.hdf5"), galaxy)
    rng = np.random.default_rng(1)
    pos, vel, mass = plummer(64, seed=2)
    types = rng.integers(0, 6, 64)
    own = hybridtree.Simulation(pos, vel, mass, types=types, quiet=True, eps=0.05, dt=DT)
    assert np.array_equal(own.types, types)             # in the caller's order
    own.step()
    assert np.array_equal(own.types, types)
    with pytest.raises(ValueError, match="types must be"):
        hybridtree.Simulation(pos, vel, mass, types=np.full(64, 6), quiet=True)


@pytest.mark.mpi
@pytest.mark.parametrize("layout", ["single", "per_process"])
def test_two_processes_keep_every_type(galaxy, tmp_path, layout):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([mpiexec(), "-n", "2", sys.executable, "-m", "hybridtree", "run",
                           "c.toml", "--quiet", "--set", f'output.snapshot_files="{layout}"'],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for k in range(3):
        assert_same_types(types_of(tmp_path / "out" / (f"snapshot_{k:04d}.hdf5" if layout == "single"
                                                       else f"snapshot_{k:04d}.0.hdf5")), galaxy)
    from hybridtree.analysis.diagnostics import read_diagnostics
    rows = read_diagnostics(tmp_path / "out" / "diagnostics_types.csv")     # summed over both
    assert {(int(r["type"]), int(r["particles"])) for r in rows} == set(COUNTS.items())
    # the set restarts on one process with every type
    first = "snapshot_0001.hdf5" if layout == "single" else "snapshot_0001.0.hdf5"
    proc = subprocess.run([sys.executable, "-m", "hybridtree", "run", "--restart", f"out/{first}",
                           "--quiet", "--set", "output.dir=one"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert_same_types(types_of(sorted((tmp_path / "one").glob("snapshot_0002*"))[0]), galaxy)


def test_one_type_of_a_file_keeps_its_type(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.toml").write_text(CONFIG)
    write_galaxy(tmp_path / "galaxy.hdf5")
    assert main(["run", "c.toml", "--quiet", "--set", "ics.types=PartType3"]) == 0
    assert_same_types(types_of(tmp_path / "out" / "snapshot_0000.hdf5"),
                      {3: write_galaxy(tmp_path / "x.hdf5")[3]})


# --- GADGET-2 binary files (issue 32 item 3) -----------------------------------------

def binary_twin(tmp_path: Path, stem: str, fmt: int, endian: str, n_files: int = 2,
                double: bool = True) -> Path:
    """The galaxy of :func:`write_galaxy` again as a GADGET-2 binary set (its numbers
    as stored in the HDF5 file: GADGET's units, no h, not comoving)."""
    from hybridtree.io.gadget_binary import write_gadget2_snapshot
    from hybridtree.config.units import Units
    pos, vel, mass, ids, types = [], [], [], [], []
    with h5py.File(tmp_path / "galaxy.hdf5", "r") as f:
        for t in COUNTS:
            g = f[f"PartType{t}"]
            pos.append(g["Coordinates"][...])
            vel.append(g["Velocities"][...])
            mass.append(g["Masses"][...] if "Masses" in g else np.full(COUNTS[t], BULGE_MASS))
            ids.append(g["ParticleIDs"][...])
            types.append(np.full(COUNTS[t], t))
    # internal units with GADGET's kpc and 1e10 Msun: the file's numbers come out the same
    # (velocities: through V_KMS and back, to rounding)
    one = Units(3.085678e21, 1.989e43)
    return write_gadget2_snapshot(tmp_path / stem, np.concatenate(pos),
                                  np.concatenate(vel) / V_KMS,
                                  np.concatenate(mass), np.concatenate(ids), 0.0, units=one,
                                  types=np.concatenate(types), fmt=fmt, n_files=n_files,
                                  double=double, endian=endian, id_bytes=8)[0]


@pytest.mark.parametrize("fmt,endian,double", [(1, "<", True), (2, ">", True), (1, ">", False),
                                               (2, "<", False)])
def test_gadget2_binary_sets_read_as_their_hdf5_twins(galaxy, tmp_path, fmt, endian, double):
    from hybridtree.io.snapshot import read_particles
    first = binary_twin(tmp_path, "galaxy_bin", fmt, endian, double=double)
    assert first.name == "galaxy_bin.0" and (tmp_path / "galaxy_bin.1").is_file()
    raw = first.read_bytes()
    marker = 8 if fmt == 2 else 256
    assert raw[:4] == marker.to_bytes(4, "little" if endian == "<" else "big")
    want, t_want, _ = read_particles(tmp_path / "galaxy.hdf5")
    for name in ("galaxy_bin", "galaxy_bin.1"):          # the stem or any part: the whole set
        got, t_got, _ = read_particles(tmp_path / name)
        assert t_got == t_want == 0.0
        a, b = np.argsort(got.ids), np.argsort(want.ids)
        assert np.array_equal(got.ids[a], want.ids[b])
        assert np.array_equal(got.types[a], want.types[b])
        tol = 1e-15 if double else 1e-7
        for key in ("pos", "vel", "mass"):
            np.testing.assert_allclose(getattr(got, key)[a], getattr(want, key)[b], rtol=tol,
                                       atol=tol * np.abs(getattr(want, key)).max())


def test_output_gadget2_writes_each_snapshot_as_a_binary_twin(galaxy, tmp_path):
    from hybridtree.io.snapshot import read_particles
    assert main(["run", "c.toml", "--quiet", "--set", "output.gadget2=true"]) == 0
    run = Units(SCHEMA["units"]["length_cm"].default, SCHEMA["units"]["mass_g"].default)
    for k in range(3):
        # the twin in GADGET's units, read back into the run's
        got, t_got, _ = read_particles(tmp_path / "out" / f"snapshot_{k:04d}.gadget2", units=run)
        want, t_want, _ = read_particles(tmp_path / "out" / f"snapshot_{k:04d}.hdf5", units=run)
        assert t_got == pytest.approx(t_want, rel=1e-12)      # through GADGET's time unit
        a, b = np.argsort(got.ids), np.argsort(want.ids)
        assert np.array_equal(got.ids[a], want.ids[b])
        assert np.array_equal(got.types[a], want.types[b])
        for key in ("pos", "vel", "mass"):
            np.testing.assert_allclose(getattr(got, key)[a], getattr(want, key)[b],
                                       rtol=1e-13, atol=1e-13 * np.abs(getattr(want, key)).max())
    # the binary twins go with their snapshots: a restart in place from snapshot 1 needs
    # --overwrite for snapshot 2's twin too
    assert main(["run", "--restart", "out/snapshot_0001.hdf5", "--quiet"]) == 2
    assert main(["run", "--restart", "out/snapshot_0001.hdf5", "--quiet", "--overwrite"]) == 0
    assert (tmp_path / "out" / "snapshot_0002.gadget2").is_file()


def test_a_run_starts_from_a_binary_set(galaxy, tmp_path, capsys):
    binary_twin(tmp_path, "galaxy_bin", 2, ">")
    assert main(["run", "c.toml", "--quiet", "--set", "ics.file=galaxy_bin"]) == 0
    assert_same_types(types_of(tmp_path / "out" / "snapshot_0002.hdf5"), galaxy)
    assert main(["info", "galaxy_bin.0"]) == 0
    info = capsys.readouterr().out
    assert "300 PartType1" in info and "100 PartType3" in info, info


def test_the_picture_of_a_galaxy_has_a_column_per_type(galaxy, tmp_path):
    pytest.importorskip("matplotlib")
    from hybridtree.analysis.plot import projection_figure
    assert main(["run", "c.toml", "--quiet"]) == 0
    fig = projection_figure(tmp_path / "out" / "snapshot_0000.hdf5")
    maps = [ax for ax in fig.axes if ax.images]
    assert len(maps) == 6                  # face-on and edge-on, for each of 3 types
    titles = [ax.get_title() for ax in maps if ax.get_title()]
    assert titles == [f"PartType{t} ({name}), N = {n}" for (t, n), name in
                      zip(COUNTS.items(), ("halo", "disk", "bulge"))]
    # one colour scale: every panel's image shares the norm
    assert len({(ax.images[0].norm.vmin, ax.images[0].norm.vmax) for ax in maps}) == 1
    # each panel holds its own type's mass (within the square: the 98 % half-width)
    for ax, t in zip(maps[:3], COUNTS):
        img = ax.images[0]
        x0, x1, y0, y1 = img.get_extent()
        area = (x1 - x0) * (y1 - y0) / img.get_array().size
        shown = float(img.get_array().sum()) * area
        with h5py.File(tmp_path / "out" / "snapshot_0000.hdf5", "r") as f:
            total = float(f[f"PartType{t}/Masses"][...].sum())
        assert 0.8 * total < shown / 1e10 <= total * 1.000001, (t, shown, total)


# --- ics.kind = "galaxy" (issue 32 item 4; the generator's own tests: tests/ics/test_galaxy.py)

GALAXY = f"""
[ics]
kind = "galaxy"
model = "milky_way"
n = 3000
seed = 5
[gravity]
eps = 0.1
[time]
dt = 0.05
t_end = 0.1
[output]
dir = "out"
snapshot_dt = 0.1
"""


@pytest.mark.mpi
def test_a_galaxy_config_is_the_model_on_one_and_two_processes(tmp_path):
    from hybridtree.ics.galaxy import galaxy, galaxy_params
    from hybridtree.io.snapshot import read_snapshot
    (tmp_path / "g.toml").write_text(GALAXY)
    (tmp_path / "pc.toml").write_text(GALAXY.replace("[gravity]", "[units]\nlength_cm = "
                                                     "3.0856775814913673e18\n[gravity]")
                                      .replace("eps = 0.1", "eps = 100.0"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    runs = {}
    for name, cmd in (("one", [sys.executable]), ("two", [mpiexec(), "-n", "2", sys.executable]),
                      ("pc", [sys.executable])):
        proc = subprocess.run([*cmd, "-m", "hybridtree", "run", "pc.toml" if name == "pc" else
                               "g.toml", "--quiet", "--set", f"output.dir={name}"],
                              capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        s = read_snapshot(tmp_path / name / "snapshot_0000.hdf5").particles
        o = np.argsort(s.ids)
        runs[name] = (s.ids[o], s.pos[o], s.vel[o], s.mass[o], s.types[o])
    pos, vel, mass, ids, types = galaxy(galaxy_params({"model": "milky_way", "n": 3000}), seed=5)
    for name in ("one", "two"):
        i, x, v, m, t = runs[name]
        assert np.array_equal(i, ids) and np.array_equal(t, types)
        np.testing.assert_allclose(x, pos, rtol=0, atol=1e-13 * np.abs(pos).max())
        np.testing.assert_allclose(v, vel, rtol=0, atol=1e-13 * np.abs(vel).max())
        np.testing.assert_array_equal(m, mass)
    assert sorted(set(types.tolist())) == [1, 2, 3]
    # in parsecs: the same galaxy, positions x 1000, velocities / sqrt(1000) (the velocity
    # unit sqrt(G M / L) of a 1000 times shorter length is sqrt(1000) times larger)
    i, x, v, m, t = runs["pc"]
    np.testing.assert_allclose(x, pos * 1000, rtol=1e-9, atol=1e-9 * np.abs(pos).max() * 1000)
    np.testing.assert_allclose(v, vel / math.sqrt(1000), rtol=1e-9,
                               atol=1e-9 * np.abs(vel).max() / math.sqrt(1000))


def test_hybridtree_ic_galaxy_writes_the_model_by_type(tmp_path, monkeypatch, capsys):
    from hybridtree.ics.galaxy import galaxy, galaxy_params
    monkeypatch.chdir(tmp_path)
    assert main(["ic", "galaxy", "-n", "4000", "-o", "m31.hdf5", "--seed", "2",
                 "--set", "ics.model=m31"]) == 0
    assert "galaxy m31, 4000 particles" in capsys.readouterr().out
    pos, vel, mass, ids, types = galaxy(galaxy_params({"model": "m31", "n": 4000}), seed=2)
    assert_same_types(types_of(tmp_path / "m31.hdf5"),
                      {t: np.sort(ids[types == t]) for t in (1, 2, 3)})
    with h5py.File(tmp_path / "m31.hdf5", "r") as f:
        rows = np.argsort(f["PartType2/ParticleIDs"][...])
        disk = f["PartType2/Coordinates"][...][rows]
    np.testing.assert_allclose(disk, pos[types == 2], rtol=0, atol=1e-13 * np.abs(pos).max())
    assert main(["ic", "galaxy", "-n", "4000", "-o", "m33.hdf5", "--set", "ics.model=m33"]) == 2
    one_error_line(capsys, "ics.model")
    assert not (tmp_path / "m33.hdf5").exists()
