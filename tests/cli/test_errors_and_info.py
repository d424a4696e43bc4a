"""User-facing rough edges: ``info`` of a multi-file snapshot set, ``--debug`` before the
command, ``plot`` of a folder with nothing to plot, and the particle checks' messages."""

import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import one_error_line
from hybridtree.cli import main
from hybridtree.gravity import validate_particles
from hybridtree.io.snapshot import SnapshotError, write_snapshot
from hybridtree.particles import Particles
from hybridtree.config.units import Units

ROOT = Path(__file__).resolve().parents[2]
UNITS = Units(3.0856775814913673e21, 1.98841e43)
N = 90


def particles(n: int = N, seed: int = 3) -> Particles:
    rng = np.random.default_rng(seed)
    pos = rng.normal(size=(n, 3))
    vel = 0.1 * rng.normal(size=(n, 3))
    mass = np.full(n, 1.0 / n)
    # a stand-in potential: only its sum matters to ``info``
    pot = -1.0 / np.sqrt(1.0 + (pos ** 2).sum(axis=1))
    return Particles(pos, vel, mass, np.arange(1, n + 1, dtype=np.uint64), pot=pot)


def write_set(folder: Path, p: Particles, k: int, number: int = 2) -> list[Path]:
    """``snapshot_NNNN.0.hdf5`` ... ``.{k-1}.hdf5``, as ``output.snapshot_files =
    "per_process"`` writes them (uneven shares, one shared SetId)."""
    cuts = np.linspace(0, len(p), k + 1).astype(int)
    cuts[1] += 7                                   # parts of different sizes
    paths = []
    for rank in range(k):
        lo, hi = cuts[rank], cuts[rank + 1]
        part = Particles(p.pos[lo:hi], p.vel[lo:hi], p.mass[lo:hi], p.ids[lo:hi],
                         pot=p.pot[lo:hi])
        path = folder / f"snapshot_{number:04d}.{rank}.hdf5"
        write_snapshot(path, part, 0.25, UNITS, {"gravity.theta": 0.5},
                       {"Step": 8, "SnapshotNumber": number, "InitialEnergy": -0.1,
                        "SetId": 12345}, part=(rank, k, len(p)))
        paths.append(path)
    return paths


def summary_lines(text: str) -> list[str]:
    """``info``'s lines after the file name(s), which a set and one file share."""
    return [line for line in text.splitlines()[1:] if not line.startswith("files: ")]


# 1. info of a multi-file snapshot set

def test_info_of_any_part_or_the_stem_describes_the_whole_set(tmp_path, capsys):
    p = particles()
    (tmp_path / "one").mkdir()
    write_snapshot(tmp_path / "one" / "snapshot_0002.hdf5", p, 0.25, UNITS,
                   {"gravity.theta": 0.5},
                   {"Step": 8, "SnapshotNumber": 2, "InitialEnergy": -0.1})
    assert main(["info", str(tmp_path / "one" / "snapshot_0002.hdf5")]) == 0
    whole = capsys.readouterr().out
    assert f"particles: {N} PartType1 (total {N})" in whole
    assert "energy: kinetic" in whole and "potential" in whole and "2K/|W|" in whole

    paths = write_set(tmp_path, p, 3)
    for arg in [*paths, tmp_path / "snapshot_0002"]:
        assert main(["info", str(arg)]) == 0, arg
        out = capsys.readouterr().out
        assert "files: 3 parts, snapshot_0002.0.hdf5 ... snapshot_0002.2.hdf5" in out
        assert f"particles: {N} PartType1 (total {N})" in out
        assert "2K/|W|" in out                     # the potentials of all parts
        assert summary_lines(out) == summary_lines(whole)


def test_info_of_an_incomplete_set_is_one_error_line(tmp_path, capsys):
    paths = write_set(tmp_path, particles(), 3)
    paths[1].unlink()
    assert main(["info", str(paths[2])]) == 2
    one_error_line(capsys, "snapshot_0002.1.hdf5", "missing")
    assert main(["info", str(tmp_path / "snapshot_0007")]) == 2
    one_error_line(capsys, "snapshot_0007", "no such file")
    assert sorted(q.name for q in tmp_path.iterdir()) == ["snapshot_0002.0.hdf5",
                                                          "snapshot_0002.2.hdf5"]


# 2. --debug before or after the command

def test_debug_before_or_after_the_command_raises(tmp_path, capsys):
    missing = str(tmp_path / "missing.hdf5")
    assert main(["info", missing]) == 2
    one_error_line(capsys, "missing.hdf5")
    for argv in (["--debug", "info", missing], ["info", missing, "--debug"]):
        with pytest.raises(SnapshotError, match="no such file"):
            main(argv)


@pytest.mark.parametrize("debug_first", [True, False])
def test_debug_run_shows_a_traceback_from_the_command_line(tmp_path, debug_first):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = ["run", "missing.toml"]
    args = ["--debug", *args] if debug_first else [*args, "--debug"]

    def cli(argv):
        return subprocess.run([sys.executable, "-m", "hybridtree", *argv], capture_output=True,
                              text=True, env=env, cwd=tmp_path, timeout=120)

    plain = cli(["run", "missing.toml"])
    assert plain.returncode == 2
    assert plain.stderr.count("\n") == 1 and plain.stderr.startswith("hybridtree: error: ")
    assert "missing.toml" in plain.stderr and "Traceback" not in plain.stderr
    debug = cli(args)
    assert debug.returncode == 1
    assert "Traceback (most recent call last)" in debug.stderr
    assert "missing.toml" in debug.stderr
    assert list(tmp_path.iterdir()) == []


# 3. plot of a run folder with nothing to plot

def test_plot_without_snapshot_or_diagnostics_rows_is_an_error(tmp_path, capsys):
    # a run that stopped before its first report: the header only, no snapshot
    (tmp_path / "diagnostics.csv").write_text("step,time,rel_energy_error,r10,r50,r90\n")
    (tmp_path / "run.log").write_text("")
    assert main(["plot", str(tmp_path)]) == 2
    one_error_line(capsys, f"nothing to plot in {tmp_path}", "no snapshot")
    assert sorted(q.name for q in tmp_path.iterdir()) == ["diagnostics.csv", "run.log"]

    # an empty folder, too
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["plot", str(empty)]) == 2
    one_error_line(capsys, f"nothing to plot in {empty}")
    assert list(empty.iterdir()) == []


def test_plot_skips_empty_diagnostics_when_there_is_a_snapshot(tmp_path, capsys):
    (tmp_path / "diagnostics.csv").write_text("step,time,rel_energy_error,r10,r50,r90\n")
    write_snapshot(tmp_path / "snapshot_0000.hdf5", particles(), 0.0, UNITS)
    assert main(["plot", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "snapshot_0000_xy.png" in out and "diagnostics.png" not in out
    assert sorted(q.name for q in tmp_path.iterdir()) == [
        "diagnostics.csv", "snapshot_0000.hdf5", "snapshot_0000_xy.png"]


# 4. the particle checks' messages

def test_negative_mass_message_prints_a_plain_number():
    pos = np.zeros((3, 3))
    with pytest.raises(ValueError) as info:
        validate_particles(pos, np.array([1.0, -1e-5, 1.0]))
    msg = str(info.value)
    assert msg == "mass[1] = -1e-05 is negative or not finite (1 bad particle(s))"
    assert "np." not in msg and "float64" not in msg


@pytest.mark.parametrize("which", ["positions", "masses"])
def test_complex_input_is_rejected(which):
    pos, mass = np.zeros((4, 3)), np.ones(4)
    if which == "positions":
        pos = pos + 1e-3j
    else:
        mass = mass.astype(complex)
    with warnings.catch_warnings():
        warnings.simplefilter("error")           # no ComplexWarning on the way
        with pytest.raises(ValueError, match=f"^{which} must be real numbers, got complex"):
            validate_particles(pos, mass)
    # a list of Python complex numbers, and a complex scalar mass, too
    with pytest.raises(ValueError, match="complex"):
        validate_particles([[1j, 0, 0]], [1.0])
    with pytest.raises(ValueError, match="^masses must be real numbers"):
        validate_particles(np.zeros((2, 3)), 1 + 0j)
