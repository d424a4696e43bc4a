"""Plain ``yt.load`` of hybridtree's files through its ``yt.frontends`` entry point
(hybridtree/io/yt_frontend.py): a snapshot's particle projection and phase plot hold its
total mass in physical units, with real mass units on the colour bar; a cosmological
snapshot is comoving with h (also without Λ); a FOF catalogue's groups in physical units.
The entry point is registered as installing the package does (setup.cfg's declaration,
loaded by yt's own ``importlib.metadata.entry_points`` call), or really installed (slow)."""

import configparser
import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hybridtree.config.units import Units
from hybridtree.io.gadget_units import hubble_rate
from hybridtree.io.snapshot import write_snapshot
from hybridtree.particles import Particles

yt = pytest.importorskip("yt", reason="yt is not installed: the yt frontend is untested")
yt.set_log_level(40)

ROOT = Path(__file__).resolve().parents[2]
KPC_CM, MSUN_G = 3.0856775814913673e21, 1.98841e33
DEFAULT = Units(KPC_CM, 1e10 * MSUN_G)
PARSEC = Units(3.0857e18, 3e5 * MSUN_G)
N = 200


def declared_entry_point() -> importlib.metadata.EntryPoint:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    name, value = cfg["options.entry_points"]["yt.frontends"].strip().split("=")
    return importlib.metadata.EntryPoint(name.strip(), value.strip(), "yt.frontends")


@pytest.fixture
def frontend(monkeypatch):
    """yt sees hybridtree's entry point as an installed package declares it."""
    real = importlib.metadata.entry_points
    ep = declared_entry_point()
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda **kw: [ep] if kw.get("group") == "yt.frontends" else real(**kw))
    return ep


def particles(n: int = N, seed: int = 3, scale: float = 1.0) -> Particles:
    rng = np.random.default_rng(seed)
    return Particles(scale * rng.normal(size=(n, 3)), rng.normal(size=(n, 3)),
                     rng.uniform(0.5, 1.5, n) / n, np.arange(1, n + 1, dtype=np.uint64))


@pytest.mark.parametrize("units", [DEFAULT, PARSEC], ids=["kpc", "pc"])
def test_plain_yt_load_projects_a_snapshot_with_its_whole_mass(tmp_path, frontend, units):
    p = particles()
    path = write_snapshot(tmp_path / "snapshot_0003.hdf5", p, 1.0, units)
    ds = yt.load(str(path))
    assert type(ds).__name__ == "HybridtreeHDF5Dataset"
    total_g = p.mass.sum() * units.mass_g
    assert float(ds.r[:].sum(("all", "particle_mass")).to("g")) == pytest.approx(total_g,
                                                                                 rel=1e-9)
    # a projection over the whole (open-boundary) domain holds every particle's mass
    plot = yt.ParticleProjectionPlot(ds, "z", ("all", "particle_mass"), width=(1.0, "unitary"))
    image = plot.frb["all", "particle_mass"]
    assert image.units.dimensions == ds.unit_system["mass"].units.dimensions
    assert np.nansum(image.to("g").d) == pytest.approx(total_g, rel=1e-9)
    plot.render()
    label = plot.plots["all", "particle_mass"].cb.ax.get_ylabel()
    assert "code" not in label and r"\rm{g}" in label, label
    # the file's own field too (yt alone shows it in code_mass)
    raw = yt.ParticleProjectionPlot(ds, "z", ("PartType1", "Masses"), width=(1.0, "unitary"))
    raw.render()
    label = raw.plots["PartType1", "Masses"].cb.ax.get_ylabel()
    assert "code" not in label and r"\rm{g}" in label, label
    assert np.nansum(raw.frb["PartType1", "Masses"].to("g").d) == pytest.approx(total_g, rel=1e-9)
    # a phase plot of position and velocity whose bins hold every particle
    ad = ds.all_data()
    fields = [("all", "particle_position_x"), ("all", "particle_velocity_x")]
    extrema = {f: (float(ad[f].min()) - 1, float(ad[f].max()) + 1) for f in fields}
    prof = yt.create_profile(ad, fields, ("all", "particle_mass"), weight_field=None,
                             extrema={f: (lo, hi) for f, (lo, hi) in extrema.items()},
                             units={f: str(ad[f].units) for f in fields},
                             logs={f: False for f in fields}, n_bins=16)
    assert float(prof["all", "particle_mass"].sum().to("g")) == pytest.approx(total_g, rel=1e-9)
    phase = yt.PhasePlot.from_profile(prof)
    phase.render()
    assert "code" not in phase.plots["all", "particle_mass"].cb.ax.get_ylabel()


@pytest.mark.parametrize("omega_lambda", [0.7, 0.0], ids=["lcdm", "matter_only"])
def test_a_cosmological_snapshot_is_comoving_with_h(tmp_path, frontend, omega_lambda):
    a, h = 0.5, 0.7
    q = particles(scale=100.0)
    rng = np.random.default_rng(9)
    p = Particles(q.pos, q.vel, q.mass, q.ids, rng.normal(size=(N, 3)), -rng.uniform(1, 2, N))
    cosmo = {"a": a, "h": h, "omega_m": 1.0 - omega_lambda, "omega_lambda": omega_lambda}
    path = write_snapshot(tmp_path / "snapshot_0004.hdf5", p, 0.3, DEFAULT, cosmology=cosmo)
    ds = yt.load(str(path))
    assert type(ds).__name__ == "HybridtreeHDF5Dataset"
    assert ds.cosmological_simulation and ds.hubble_constant == pytest.approx(h)
    assert ds.current_redshift == pytest.approx(1 / a - 1)
    ad = ds.all_data()
    order = np.argsort(ad["all", "particle_index"].d)
    x = ad["all", "particle_position_x"][order]
    np.testing.assert_allclose(x.to("cm").d, p.pos[:, 0] * KPC_CM, rtol=1e-9)   # physical
    np.testing.assert_allclose(x.to("kpccm/h").d, p.pos[:, 0] * h / a, rtol=1e-9)
    m = ad["all", "particle_mass"][order]
    np.testing.assert_allclose(m.to("g").d, p.mass * DEFAULT.mass_g, rtol=1e-9)
    np.testing.assert_allclose(m.to("g/h").d, p.mass * DEFAULT.mass_g * h, rtol=1e-9)
    # yt's velocities are the peculiar ones: v - H(a) r
    v_pec = p.vel - hubble_rate(a, h, 1.0 - omega_lambda, omega_lambda, DEFAULT.time_s) * p.pos
    vx = ad["all", "particle_velocity_x"][order].to("cm/s").d
    np.testing.assert_allclose(vx, v_pec[:, 0] * DEFAULT.velocity_cm_per_s, rtol=1e-9)
    # potentials and accelerations are physical in every snapshot (yt alone: code units
    # times a, and none for Acceleration)
    v2 = DEFAULT.velocity_cm_per_s ** 2
    np.testing.assert_allclose(ad["PartType1", "Potential"][order].to("cm**2/s**2").d,
                               p.pot * v2, rtol=1e-12)
    np.testing.assert_allclose(ad["PartType1", "Acceleration"][order].to("cm/s**2").d,
                               p.acc * v2 / KPC_CM, rtol=1e-12)
    plot = yt.ParticleProjectionPlot(ds, "x", ("all", "particle_mass"), width=(1.0, "unitary"))
    total = np.nansum(plot.frb["all", "particle_mass"].to("g").d)
    assert total == pytest.approx(p.mass.sum() * DEFAULT.mass_g, rel=1e-9)


def test_a_fof_catalogue_loads_with_its_groups_in_physical_units(tmp_path, frontend):
    from hybridtree.analysis.halos import find_halos, write_catalogue
    a, h, mpc = 0.5, 0.7, Units(1e3 * KPC_CM, 1e10 * MSUN_G)
    rng = np.random.default_rng(2)
    centres = np.array([[1.0, 0, 0], [-1, 1, 0], [0, -1, 1]])
    pos = np.concatenate([rng.normal(scale=0.004, size=(n, 3)) + c
                          for c, n in zip(centres, (40, 30, 20))] + [rng.uniform(-3, 3, (30, 3))])
    p = Particles(pos, rng.normal(size=pos.shape) * 0.1, np.full(len(pos), 1e-3),
                  np.arange(1, len(pos) + 1, dtype=np.uint64))
    snap = write_snapshot(tmp_path / "snapshot_0004.hdf5", p, 0.3, mpc, run_state={
        "SnapshotNumber": 4}, cosmology={"a": a, "h": h, "omega_m": 0.3, "omega_lambda": 0.7})
    cat = find_halos(snap, min_len=10, link=0.03)
    assert list(cat.group_len) == [40, 30, 20]
    ds = yt.load(str(write_catalogue(tmp_path, cat)))
    assert type(ds).__name__ == "HybridtreeFOFDataset"
    ad = ds.all_data()
    np.testing.assert_allclose(ad["Group", "particle_mass"].to("g").d,
                               cat.group_mass / h * mpc.mass_g, rtol=1e-9)
    np.testing.assert_allclose(ad["Group", "particle_position_x"].to("cm").d,
                               cat.group_pos[:, 0] * a / h * mpc.length_cm, rtol=1e-9)
    np.testing.assert_allclose(ad["Group", "particle_velocity_x"].to("cm/s").d,
                               cat.group_vel[:, 0] / a * mpc.velocity_cm_per_s, rtol=1e-9)
    assert list(ad["Group", "GroupLen"].d) == [40, 30, 20]


def test_only_hybridtree_files_are_taken(tmp_path):
    from hybridtree.io.yt import is_hybridtree_file
    foreign = tmp_path / "gadget.hdf5"
    import h5py
    with h5py.File(foreign, "w") as f:
        f.create_group("Header").attrs["BoxSize"] = 0.0
        f.create_group("PartType1")
    (tmp_path / "text.hdf5").write_text("not hdf5")
    snap = write_snapshot(tmp_path / "snapshot_0000.hdf5", particles(), 0.0, DEFAULT)
    assert is_hybridtree_file(snap, "snapshot") and not is_hybridtree_file(snap, "catalogue")
    for other in (foreign, tmp_path / "text.hdf5", tmp_path, tmp_path / "missing.hdf5"):
        assert not is_hybridtree_file(other, "snapshot")
        assert not is_hybridtree_file(other, "catalogue")


@pytest.mark.slow
def test_an_installed_package_gives_yt_load_the_frontend(tmp_path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "--no-build-isolation", "--target", str(target), str(ROOT)],
                   check=True, cwd=tmp_path)
    path = write_snapshot(tmp_path / "snapshot_0001.hdf5", particles(), 1.0, DEFAULT)
    code = ("import yt; yt.set_log_level(40); ds = yt.load(%r); "
            "p = yt.ParticleProjectionPlot(ds, 'z', ('all', 'particle_mass')); "
            "print(type(ds).__name__, p.frb['all', 'particle_mass'].units)" % str(path))
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": str(target)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["HybridtreeHDF5Dataset", "g"]
