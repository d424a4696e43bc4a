"""Runs of particles beyond the float32 forces' range (issue 54, item 3): refused before
any force and any file, in one line naming the particle and the range; first forces that
are not finite stop the run before its first snapshot; a step's non-finite values are
told apart as a particle out of range or a step too long."""

from pathlib import Path
from types import SimpleNamespace

import h5py
import numpy as np
import pytest

from tests.helpers import one_error_line, run_config
from hybridtree.cli import main
from hybridtree.config.units import Units
from hybridtree.gravity.settings import GravitySettings
from hybridtree.ics import plummer
from hybridtree.io.snapshot import write_snapshot
from hybridtree.parallel.comm import Comm
from hybridtree.particles import Particles
from hybridtree.run.guards import NumericalError, check_step

DT = 1 / 64
CONFIG = run_config(200, 9, 0.6, 8, 4, 4, DT)       # eps 0.02, output in "out"
FROM_FILE = CONFIG.replace('kind = "plummer"', 'kind = "file"\nfile = "ic.hdf5"')


def ics_file(path: Path, pos: np.ndarray, vel: np.ndarray, mass: np.ndarray) -> None:
    write_snapshot(path, Particles(pos, vel, mass, np.arange(1, len(mass) + 1,
                                                             dtype=np.uint64)),
                   0.0, Units(3.0856775814913673e21, 1.98841e43))


def test_a_far_particle_in_the_initial_conditions_is_refused_before_anything_is_written(
        tmp_path, monkeypatch, capsys):
    pos, vel, mass = plummer(200, seed=1)
    pos[7] = [1e14, 0.0, 0.0]
    ics_file(tmp_path / "ic.hdf5", pos, vel, mass)
    (tmp_path / "c.toml").write_text(FROM_FILE)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "c.toml", "--quiet"]) == 2
    line = one_error_line(capsys, "initial conditions", "particle ID 8 at (",
                          "too far from the others", "span of at most 3.436e+10",
                          "2^41 eps", "eps = 0.02")
    assert "time.dt" not in line
    assert not (tmp_path / "out").exists()


def test_a_cold_sphere_too_wide_for_float32_is_refused(tmp_path, monkeypatch, capsys):
    (tmp_path / "c.toml").write_text(CONFIG.replace('kind = "plummer"',
                                                    'kind = "cold_sphere"\nradius = 1e300'))
    monkeypatch.chdir(tmp_path)
    assert main(["run", "c.toml", "--quiet"]) == 2
    one_error_line(capsys, "initial conditions: the particles are spread too wide",
                   "particle ID", "span of at most", "use a larger softening")
    assert not (tmp_path / "out").exists()


def test_a_restart_snapshot_with_a_far_particle_is_refused(tmp_path, monkeypatch, capsys):
    (tmp_path / "c.toml").write_text(CONFIG.replace(f"t_end = {8 * DT}", f"t_end = {4 * DT}"))
    monkeypatch.chdir(tmp_path)
    assert main(["run", "c.toml", "--quiet"]) == 0
    snap = tmp_path / "out" / "snapshot_0001.hdf5"
    with h5py.File(snap, "r+") as f:
        ids = f["PartType1/ParticleIDs"][:]
        f["PartType1/Coordinates"][3] = [0.0, 0.0, -1e20]
    capsys.readouterr()
    assert main(["run", "--restart", str(snap), "--set", "output.dir=again",
                 "--set", "time.t_end=0.125"]) == 2
    one_error_line(capsys, "restart snapshot", f"particle ID {int(ids[3])} at (",
                   "-1e+20)", "span of at most")
    assert not (tmp_path / "again").exists()


def test_unsoftened_first_forces_that_overflow_stop_the_run_before_its_first_snapshot(
        tmp_path, monkeypatch, capsys):
    """eps = 0 bounds nothing: a pair of mass 1e4 1e-12 apart has m / r^3 = 1e40, beyond
    float32 (the direct method resolves it; the tree's sinks, relative to their group's
    centre in float32, see one point).  The run stopped only after step 0 had written
    snapshot_0000 with non-finite accelerations."""
    pos, vel, mass = plummer(200, seed=1)
    pos[5] = pos[4] + [1e-12, 0.0, 0.0]
    mass[4:6] = 1e4
    ics_file(tmp_path / "ic.hdf5", pos, vel, mass)
    (tmp_path / "c.toml").write_text(FROM_FILE.replace("eps = 0.02",
                                                       'eps = 0.0\nmethod = "direct"'))
    monkeypatch.chdir(tmp_path)
    assert main(["run", "c.toml", "--quiet"]) == 2
    one_error_line(capsys, "the first forces are not finite", "nothing was written")
    assert not list(tmp_path.glob("out/snapshot_*"))


class _Stepper:
    """What check_step asks of a stepper: one bad particle, the particles, the
    gravity settings."""

    def __init__(self, pos: np.ndarray):
        n = len(pos)
        self.p = Particles(pos, np.zeros((n, 3)), np.full(n, 1.0 / n),
                           np.arange(1, n + 1, dtype=np.uint64))
        self.engine = SimpleNamespace(g=GravitySettings(eps=0.01))

    def bad_ids(self):
        return [2]

    def particles(self):
        return self.p


def test_a_step_that_blows_up_says_which_cause_fits():
    pos = np.random.default_rng(1).normal(size=(50, 3))
    with pytest.raises(NumericalError, match="smaller time.dt or larger gravity.eps"):
        check_step(Comm(None), _Stepper(pos), 7, 0)
    pos[9] = [5e12, 0.0, 0.0]           # an escaper now beyond the range
    with pytest.raises(NumericalError) as info:
        check_step(Comm(None), _Stepper(pos), 7, 0)
    text = str(info.value)
    assert "step 7 produced non-finite" in text and "particle ID 10 at (5e+12, 0, 0)" in text
    assert "time.dt" not in text and "\n" not in text
