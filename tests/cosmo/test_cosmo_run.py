"""Cosmological runs: an expanding sphere in physical coordinates with the Λ term.

A homogeneous sphere cut from a lattice at the cosmic mean density, moving with the
Hubble flow, must expand with the background a(t) (Friedmann's equation is Newton's
for such a sphere); its energy with the Λ term's potential is conserved; its snapshots
follow GADGET's cosmological convention, and our readers, pynbody and yt get the run's
physical positions, velocities and masses back."""

import numpy as np
import pytest

import hybridtree
from hybridtree.cosmo.background import Cosmology
from hybridtree.io.snapshot import read_snapshot
from hybridtree.config.units import Units

MPC_CM = 3.0856775814913673e24
MSUN_G = 1.98841e33
UNITS = Units(MPC_CM, 1e10 * MSUN_G)          # 1 Mpc, 1e10 Msun
COSMO = dict(omega_m=0.3, omega_lambda=0.7, omega_b=0.045, h=0.7, sigma8=0.8, n_s=0.96)


def lattice_sphere(radius: float, spacing: float, z: float):
    """Physical positions, Hubble-flow velocities and masses of a lattice sphere of
    comoving ``radius`` at the cosmic mean matter density, at redshift ``z``."""
    bg = Cosmology(omega_m=0.3, omega_l=0.7, omega_b=0.045, h=0.7, sigma8=0.8, n_s=0.96,
                   units=UNITS)
    g = np.arange(-radius, radius + spacing / 2, spacing)
    q = np.stack(np.meshgrid(g, g, g, indexing="ij"), axis=-1).reshape(-1, 3)
    q = q[np.linalg.norm(q, axis=1) < radius]
    a = 1.0 / (1.0 + z)
    pos = a * q
    vel = float(bg.H(a)) * pos
    mass = np.full(len(q), bg.particle_mass(spacing))
    return pos, vel, mass, bg


def settings(steps: int, z_start: float, **more) -> dict:
    s = {f"cosmology.{k}": v for k, v in COSMO.items()}
    s.update({"cosmology.enabled": True, "cosmology.z_start": z_start, "cosmology.z_end": 0.0,
              "cosmology.steps": steps, "units.length_cm": UNITS.length_cm,
              "units.mass_g": UNITS.mass_g, "gravity.eps": 0.005, "gravity.theta": 0.4})
    s.update(more)
    return s


@pytest.mark.parametrize("stepping, steps", [("log_a", 64), ("time", 192)])
def test_a_homogeneous_sphere_expands_with_the_background(stepping, steps):
    """z = 9 -> 0 (a grows 10 times).  Steps uniform in t are long while a grows fastest,
    so they need more of them for the same error (64 log-a steps: 0.25 % short in radius;
    64 time steps: 2 %, 256: 0.23 %)."""
    pos, vel, mass, bg = lattice_sphere(6.0, 0.5, 9.0)
    sim = hybridtree.Simulation(pos, vel, mass, quiet=True,
                                settings=settings(steps, 9.0, **{"cosmology.stepping": stepping}))
    assert sim.a == pytest.approx(0.1) and sim.t == pytest.approx(float(bg.t_of_a(0.1)))
    r0 = np.median(np.linalg.norm(sim.pos, axis=1))
    e0 = sim.energy()
    sim.evolve(z=0.0)
    assert sim.a == 1.0 and sim.redshift == 0.0 and sim.steps == steps
    assert sim.t == pytest.approx(float(bg.t_of_a(1.0)), rel=1e-12)
    # the median radius grew with a (the lattice's edge is the only perturbation)
    r1 = np.median(np.linalg.norm(sim.pos, axis=1))
    assert r1 / r0 == pytest.approx(10.0, rel=0.005)
    # and the velocities are the Hubble flow of today
    v_r = np.einsum("ij,ij->i", sim.vel, sim.pos) / np.linalg.norm(sim.pos, axis=1)
    ratio = np.median(v_r / np.linalg.norm(sim.pos, axis=1)) / float(bg.H(1.0))
    assert ratio == pytest.approx(1.0, rel=0.01)
    # energy with the Λ potential: conserved to a small fraction of |W|
    e1 = sim.energy()
    assert abs(e1["total"] - e0["total"]) < 3e-3 * abs(e0["potential"])
    # the reported error is normalised by the gravitational |W| alone (the Λ term's
    # -½ λ Σ m r², part of E, is taken back out of energy()'s potential)
    lam = sim._stepper.scheme.external
    assert lam > 0
    w = e1["potential"] + 0.5 * lam * float(np.sum(mass * np.sum(sim.pos ** 2, axis=1)))
    assert 0 < -w < -e1["potential"]
    assert sim.energy_error == pytest.approx((e1["total"] - e0["total"]) / abs(w), rel=1e-6)
    d = sim.diagnostics
    assert d["a"][0] == pytest.approx(0.1) and d["a"][-1] == 1.0


def test_without_the_lambda_term_the_sphere_lags_behind():
    """A check that the Λ term acts: with Ω_Λ = 0.7 in the background but the sphere's
    Λ acceleration missing, the sphere would expand less; with it, as the background."""
    pos, vel, mass, bg = lattice_sphere(6.0, 0.5, 3.0)
    sim = hybridtree.Simulation(pos, vel, mass, quiet=True, settings=settings(48, 3.0))
    sim._stepper.scheme.external = 0.0          # the term off: the control
    r0 = np.median(np.linalg.norm(sim.pos, axis=1))
    sim.evolve(z=0.0)
    lag = np.median(np.linalg.norm(sim.pos, axis=1)) / r0
    assert lag < 4.0 * 0.97      # a grew by 4; without Λ's push the sphere falls short


def test_cosmological_snapshots_read_back_physical_in_our_readers_pynbody_and_yt(tmp_path):
    pynbody = pytest.importorskip("pynbody")
    pytest.importorskip("yt")
    from hybridtree.io import load_yt
    pos, vel, mass, bg = lattice_sphere(4.0, 0.5, 4.0)
    # peculiar velocities of a few per cent of the Hubble velocity at the edge
    vel = vel + np.random.default_rng(3).normal(scale=0.03 * float(bg.H(0.2)) * 0.8,
                                                size=vel.shape)
    out = tmp_path / "run"
    with hybridtree.Simulation(pos, vel, mass, quiet=True, output=out,
                               settings=settings(8, 4.0, **{"output.redshifts": "2"})) as sim:
        sim.evolve(z=0.0)
        end = sim.particles()
    names = sorted(p.name for p in out.glob("snapshot_*"))
    assert names == ["snapshot_0000.hdf5", "snapshot_0001.hdf5", "snapshot_0002.hdf5"]
    path = out / "snapshot_0002.hdf5"
    s = read_snapshot(path)
    order = np.argsort(s.particles.ids)
    np.testing.assert_allclose(s.particles.pos[order], end.pos, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(s.particles.vel[order], end.vel, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(s.particles.mass[order], end.mass, rtol=1e-14)
    assert s.time == pytest.approx(float(bg.t_of_a(1.0)), rel=1e-12)
    # an earlier snapshot, at z ~ 2: physical values depend on a there
    mid = read_snapshot(out / "snapshot_0001.hdf5")
    with __import__("h5py").File(out / "snapshot_0001.hdf5", "r") as f:
        a_mid = float(f["Header"].attrs["Time"])
        assert f["Header"].attrs["Redshift"] == pytest.approx(1 / a_mid - 1)
        assert f["Header"].attrs["HubbleParam"] == 0.7
    assert 0.25 < a_mid < 0.45
    mid_pos_cm = mid.particles.pos * MPC_CM
    # pynbody: physical positions in Mpc, masses in Msun, peculiar velocities
    sp = pynbody.load(str(out / "snapshot_0001.hdf5"))
    sp.physical_units()
    o = np.argsort(np.asarray(sp["iord"]))
    ids = np.sort(mid.particles.ids)
    mo = np.argsort(mid.particles.ids)
    np.testing.assert_allclose(np.asarray(sp["pos"].in_units("cm"))[o], mid_pos_cm[mo],
                               rtol=1e-6)
    np.testing.assert_allclose(np.asarray(sp["mass"].in_units("g"))[o],
                               mid.particles.mass[mo] * UNITS.mass_g, rtol=1e-6)
    assert len(ids) == len(sp)
    # velocities: GADGET's convention stores peculiar ones, which pynbody gives
    pec = (mid.particles.vel - float(bg.H(a_mid)) * mid.particles.pos)[mo]
    assert np.abs(pec).max() > 0.01 * float(bg.H(a_mid)) * 4.0 * a_mid
    np.testing.assert_allclose(np.asarray(sp["vel"].in_units("cm s**-1"))[o],
                               pec * UNITS.velocity_cm_per_s, rtol=1e-6,
                               atol=1e-9 * np.abs(pec).max() * UNITS.velocity_cm_per_s)
    # yt (through load_yt): physical positions
    ds = load_yt(out / "snapshot_0001.hdf5")
    ad = ds.all_data()
    yid = np.asarray(ad["PartType1", "particle_index"]).astype(np.int64)
    ypos = np.asarray(ad["PartType1", "particle_position"].to("cm"))[np.argsort(yid)]
    np.testing.assert_allclose(ypos, mid_pos_cm[mo], rtol=1e-6)
    assert float(ds.current_redshift) == pytest.approx(1 / a_mid - 1, rel=1e-9)


def test_linear_growth_of_the_displacements_follows_d():
    """A cosmological sphere from z = 49 to z = 9: inside its inner half, where the
    vacuum outside has not yet acted, the displacements from the grid grow as D(a)
    (linear theory) within 5 %."""
    from hybridtree.ics.cosmological import cosmo_sphere, lagrangian_positions
    bg = Cosmology(omega_m=0.3, omega_l=0.7, omega_b=0.045, h=0.7, sigma8=0.8, n_s=0.96,
                   units=UNITS)
    n, box, radius, z0 = 32, 256.0, 128.0, 49.0
    a0 = 1 / (1 + z0)
    pos, vel, mass, ids = cosmo_sphere(n, box, radius, a0, bg, seed=4)
    q = lagrangian_positions(ids, n, box)
    sim = hybridtree.Simulation(pos, vel, mass, ids, quiet=True,
                                settings=settings(48, z0, **{"cosmology.z_end": 9.0,
                                                             "gravity.eps": 0.4,
                                                             "cosmology.stepping": "log_a"}))
    inner = np.linalg.norm(q, axis=1) < radius / 2
    psi0 = pos / a0 - q
    sim.evolve(z=9.0)
    psi1 = sim.pos / sim.a - q
    growth = np.sqrt((psi1[inner] ** 2).sum() / (psi0[inner] ** 2).sum())
    expected = float(bg.growth(sim.a) / bg.growth(a0))
    assert growth == pytest.approx(expected, rel=0.05)
    # and the direction: the displacement field keeps its pattern (linear theory)
    corr = (psi1[inner] * psi0[inner]).sum() / np.sqrt((psi1[inner] ** 2).sum()
                                                       * (psi0[inner] ** 2).sum())
    assert corr > 0.95


def test_a_hybrid_run_expands_with_the_background_too():
    """The Λ term rides with the soft kicks of the hybrid tree's nested steps."""
    pos, vel, mass, bg = lattice_sphere(5.0, 0.5, 3.0)
    sim = hybridtree.Simulation(pos, vel, mass, quiet=True,
                                settings=settings(32, 3.0, **{"cosmology.stepping": "log_a",
                                                              "hybrid.enabled": True,
                                                              "hybrid.r_in": 0.02,
                                                              "hybrid.r_out": 0.2,
                                                              "hybrid.n_hard": 2}))
    r0 = np.median(np.linalg.norm(sim.pos, axis=1))
    sim.evolve(z=0.0)
    assert np.median(np.linalg.norm(sim.pos, axis=1)) / r0 == pytest.approx(4.0, rel=0.005)


@pytest.mark.mpi
def test_a_cosmological_run_on_two_processes_agrees_with_one(tmp_path):
    """The same config under mpiexec -n 2 ends where one process ends (to the tree's
    accuracy), with the same snapshots at the same redshifts."""
    import os
    import subprocess
    import sys
    from tests.helpers import ROOT, mpiexec
    config = tmp_path / "c.toml"
    config.write_text("""
[ics]
kind = "cosmo_sphere"
n_grid = 20
box = 40.0
radius = 20.0
seed = 5
[cosmology]
enabled = true
z_start = 20.0
steps = 24
stepping = "log_a"
[gravity]
eps = 0.05
theta = 0.5
[units]
length_cm = 3.0856775814913673e24
mass_g = 1.98841e43
[output]
dir = "out"
redshifts = [2.0]
""")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    ends = []
    for k in (1, 2):
        here = tmp_path / f"k{k}"
        here.mkdir()
        cmd = [sys.executable, "-m", "hybridtree", "run", str(config), "--quiet"]
        if k > 1:
            cmd = [mpiexec(), "-n", str(k), *cmd]
        proc = subprocess.run(cmd, cwd=here, env=env, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        names = sorted(p.name for p in (here / "out").glob("snapshot_*"))
        assert names == ["snapshot_0000.hdf5", "snapshot_0001.hdf5", "snapshot_0002.hdf5"]
        s = read_snapshot(here / "out" / "snapshot_0001.hdf5")
        o = np.argsort(s.particles.ids)
        ends.append((s.particles.pos[o], s.time))
    assert ends[0][1] == ends[1][1]
    # at z = 2 (the snapshot asked for): the same particles to the tree's accuracy; a
    # few in the first halos already differ more (close encounters amplify differences)
    scale = np.abs(ends[0][0]).max()
    d = np.linalg.norm(ends[1][0] - ends[0][0], axis=1) / scale
    assert np.median(d) < 1e-4 and np.quantile(d, 0.99) < 1e-3


def test_ic_and_halos_commands(tmp_path, monkeypatch, capsys):
    """hybridtree ic cosmo_sphere writes the sphere a run would start from; a run from
    that file (ics.kind = file) equals the run from the generator; hybridtree halos writes
    a GADGET-4 FOF catalogue of its last snapshot."""
    import h5py
    from hybridtree.cli import main
    monkeypatch.chdir(tmp_path)
    common = ["--set", "ics.box=40", "--set", "ics.radius=20", "--set", "cosmology.z_start=20",
              "--set", "units.length_cm=3.0856775814913673e24", "--set", "units.mass_g=1.98841e43"]
    assert main(["ic", "cosmo_sphere", "-n", "20", "-o", "ics.hdf5", "--seed", "5", *common]) == 0
    run = ["--set", "cosmology.enabled=true", "--set", "cosmology.z_start=20",
           "--set", "cosmology.steps=16", "--set", "cosmology.stepping=\"log_a\"",
           "--set", "gravity.eps=0.05", "--set", "units.length_cm=3.0856775814913673e24",
           "--set", "units.mass_g=1.98841e43", "--quiet"]
    (tmp_path / "gen.toml").write_text('[ics]\nkind = "cosmo_sphere"\nn_grid = 20\nbox = 40.0\n'
                                       'radius = 20.0\nseed = 5\n[output]\ndir = "gen"\n')
    (tmp_path / "file.toml").write_text('[ics]\nkind = "file"\nfile = "ics.hdf5"\n'
                                        '[output]\ndir = "file"\n')
    assert main(["run", "gen.toml", *run]) == 0
    assert main(["run", "file.toml", *run]) == 0
    a = read_snapshot(tmp_path / "gen" / "snapshot_0001.hdf5")
    b = read_snapshot(tmp_path / "file" / "snapshot_0001.hdf5")
    assert a.time == pytest.approx(b.time, rel=1e-12)
    np.testing.assert_allclose(b.particles.pos, a.particles.pos, rtol=1e-9, atol=1e-9)
    capsys.readouterr()
    assert main(["halos", "gen/snapshot_0001", "--min-len", "5"]) == 0
    assert "fof_tab_001.hdf5" in capsys.readouterr().out
    with h5py.File(tmp_path / "gen" / "fof_tab_001.hdf5", "r") as f:
        n = int(f["Header"].attrs["Ngroups_Total"])
        assert n == len(f["Group/GroupLen"]) and (f["Group/GroupLen"][...] >= 5).all()
        assert f["Header"].attrs["Redshift"] == pytest.approx(0.0)
