"""``hybridtree info`` of a cosmological sphere's snapshots: the energies its run's
diagnostics.csv has for the same step (the Λ term's -½ λ Σ m r² in the potential), the
scale factor and redshift, and the cosmology.* settings."""

import re

import h5py
import pytest

from hybridtree.analysis.diagnostics import read_diagnostics
from hybridtree.cli import main

# 16³ grid points in the sphere of radius 30 Mpc of a 60 Mpc cube (2176 particles), z = 49
# -> 0 in 8 steps uniform in ln a: coarse, but every step has a diagnostics row
CONFIG = """
[ics]
kind = "cosmo_sphere"
n_grid = 16
box = 60.0
radius = 30.0
seed = 1
[cosmology]
enabled = true
omega_m = 0.3
omega_lambda = 0.7
h = 0.7
z_start = 49.0
z_end = 0.0
steps = 8
stepping = "log_a"
[gravity]
eps = 0.04
[units]
length_cm = 3.0856775814913673e24
mass_g = 1.98841e43
[output]
dir = "out"
redshifts = "2.5"
diag_every = 1
"""
NUMBER = r"([-+0-9.e]+)"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    here = tmp_path_factory.mktemp("cosmo")
    (here / "c.toml").write_text(CONFIG)
    assert main(["run", str(here / "c.toml"), "--quiet", "--set",
                 f"output.dir={here / 'out'}"]) == 0
    return here / "out"


def info(capsys, path) -> str:
    capsys.readouterr()
    assert main(["info", str(path)]) == 0
    return capsys.readouterr().out


def test_info_energies_are_the_runs(run, capsys):
    rows = {int(r["step"]): r for r in read_diagnostics(run / "diagnostics.csv")}
    snaps = sorted(run.glob("snapshot_*.hdf5"))
    assert len(snaps) == 3                      # z = 49, the one nearest 2.5, z = 0
    for snap in snaps:
        with h5py.File(snap, "r") as f:
            step = int(f["RunState"].attrs["Step"])
        row = rows[step]
        text = info(capsys, snap)
        m = re.search(rf"energy: kinetic {NUMBER}, potential {NUMBER} \(gravity {NUMBER}, "
                      rf"Lambda term {NUMBER}\), total {NUMBER}, 2K/\|W\| {NUMBER}", text)
        assert m, text
        kin, pot, grav, lam, total, virial = map(float, m.groups())
        assert kin == pytest.approx(float(row["kinetic"]), rel=1e-9)
        assert pot == pytest.approx(float(row["potential"]), rel=1e-9)
        assert total == pytest.approx(float(row["total"]), rel=1e-8, abs=1e-9 * abs(grav))
        assert virial == pytest.approx(float(row["virial_ratio"]), abs=5.1e-6)   # 5 decimals
        assert grav + lam == pytest.approx(pot, rel=1e-9) and lam < 0 < kin


def test_info_says_a_and_z_and_the_cosmology_settings(run, capsys):
    for snap in sorted(run.glob("snapshot_*.hdf5")):
        with h5py.File(snap, "r") as f:
            a, z = f["Header"].attrs["Time"], f["Header"].attrs["Redshift"]
        text = info(capsys, snap)
        m = re.search(rf"cosmology: a = {NUMBER}, z = {NUMBER} ", text)
        assert m, text
        assert float(m.group(1)) == pytest.approx(a, rel=1e-5)
        assert float(m.group(2)) == pytest.approx(z, rel=1e-5, abs=1e-9)
        [settings] = [x for x in text.splitlines() if x.startswith("settings: ")]
        for item in ("cosmology.enabled=True", "cosmology.omega_lambda=0.7",
                     "cosmology.steps=8", "cosmology.z_start=49.0"):
            assert item in settings[len("settings: "):].split(", ")


def test_the_run_log_gives_a_z_and_gyr(run):
    """A cosmological run's report lines: a, z and the time in Gyr (not in its internal
    149-Gyr unit), and the energy error named for its norm |W|."""
    rows = read_diagnostics(run / "diagnostics.csv")
    lines = [x for x in (run / "run.log").read_text().splitlines() if x.startswith("step ")]
    assert len(lines) == len(rows)
    for line, row in zip(lines, rows):
        m = re.match(rf"step +{row['step']}  a {NUMBER} +z {NUMBER} +t {NUMBER} +Gyr E ", line)
        assert m, line
        a, z, _ = map(float, m.groups())
        assert a == pytest.approx(float(row["a"]), rel=1e-3)
        assert z == pytest.approx(1 / float(row["a"]) - 1, rel=1e-3, abs=1e-9)
        assert " dE/|W| " in line and " dE/E " not in line
    # the energy warning with the same norm: said where |dE/W| first passes 0.01
    errors = [abs(float(r["rel_energy_error"])) for r in rows]
    warnings = [x for x in (run / "run.log").read_text().splitlines() if x.startswith("warning:")]
    if max(errors) > 0.01:
        first = next(r["step"] for r, e in zip(rows, errors) if e > 0.01)
        assert len(warnings) == 1 and "dE/|W| = " in warnings[0]
        assert f"at step {first} " in warnings[0]
    else:
        assert not warnings
    with h5py.File(sorted(run.glob("snapshot_*.hdf5"))[-1], "r") as f:
        gyr = f["Header"].attrs["Time_GYR"]            # the writer's age at z = 0
    assert float(re.search(rf" t {NUMBER} +Gyr", lines[-1]).group(1)) == pytest.approx(gyr, rel=1e-3)


def test_ic_help_does_not_say_a_cosmological_sphere_is_at_rest(run, capsys):
    """Its centre of mass moves (the realization's bulk flow): ``ic --help`` says so."""
    from hybridtree.io.snapshot import read_particles
    p, _, _ = read_particles(run / "snapshot_0000.hdf5", "all")
    v_cm = p.mass @ p.vel / p.mass.sum()
    v_rms = (p.mass @ (p.vel ** 2).sum(axis=1) / p.mass.sum()) ** 0.5
    assert (v_cm ** 2).sum() ** 0.5 > 1e-3 * v_rms         # not at rest
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["ic", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "centre of mass at rest at the origin)" not in text
    assert "cosmo_sphere centred on the origin" in text and "bulk velocity" in text
