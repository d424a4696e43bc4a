"""Contradictory starts and restarts are refused in one line (exit 2) and a restart names
the settings it changed or ignored; the messages about start times and restart folders
say what is true (issue 54)."""

import h5py
import numpy as np
import pytest

import hybridtree
from hybridtree.cli import main
from tests.helpers import one_error_line, run_config

DT = 1 / 64
CONFIG_FILES = {"small.toml": run_config(200, 4, 0.6, 10, 5, 5, DT)}
SPHERE = ["--set", "ics.kind=cosmo_sphere", "--set", "ics.n_grid=8", "--set", "ics.box=60",
          "--set", "ics.radius=30", "--set", "cosmology.enabled=true",
          "--set", "cosmology.z_start=9", "--set", "cosmology.z_end=2",
          "--set", "cosmology.steps=4", "--set", "gravity.eps=2.0",
          "--set", "units.length_cm=3.0856775814913673e24", "--set", "units.mass_g=1.98841e43"]


def names(folder):
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("ics", [["--set", "ics.kind=plummer"], ["--set", "ics.kind=galaxy"],
                                 ["--set", "ics.kind=file", "--set", "ics.file=out/snapshot_0000.hdf5"]],
                         ids=["plummer", "galaxy", "isolated-file"])
def test_cosmology_with_isolated_initial_conditions_is_refused(here, capsys, ics):
    """cosmology.enabled = true with a Plummer sphere ran it as an expanding universe
    (dE/E 8.4, exit 0); with a file of an isolated run: a traceback (t must be finite)."""
    assert main(["run", "small.toml", "--quiet"]) == 0
    assert main(["run", "small.toml", "--set", "cosmology.enabled=true", "--set",
                 "output.dir=cosmic", *ics]) == 2
    one_error_line(capsys, "cosmology.enabled", "cosmological")
    assert not (here / "cosmic").exists()


def test_a_restart_cannot_switch_cosmology_or_boundaries(here, capsys):
    """An isolated run restarted with cosmology.enabled = true ran from t = 0.25 to
    t = 2856 (dE/E 3.9e5, exit 0); the reverse, and a periodic box's ics.kind, likewise."""
    assert main(["run", "small.toml", "--quiet"]) == 0
    before = names(here / "out")
    assert main(["run", "--restart", "out", "--set", "cosmology.enabled=true"]) == 2
    one_error_line(capsys, "cosmology.enabled = true", "isolated", "new run")
    assert main(["run", "small.toml", "--quiet", "--set", "output.dir=sphere", *SPHERE]) == 0
    assert main(["run", "--restart", "sphere", "--set", "cosmology.enabled=false"]) == 2
    one_error_line(capsys, "cosmology.enabled = false", "cosmological", "new run")
    assert main(["run", "--restart", "sphere", "--set", "cosmology.z_end=0",
                 "--set", "ics.kind=cosmo_box"]) == 2
    one_error_line(capsys, "ics.kind = 'cosmo_box'", "cosmo_sphere", "boundaries")
    assert main(["run", "--restart", "sphere", "--set", "cosmology.z_end=0",
                 "--set", "cosmology.omega_m=0.25"]) == 2
    one_error_line(capsys, "cosmology.omega_m = 0.25", "0.3")
    assert names(here / "out") == before


def test_a_restart_names_the_settings_it_changed_and_ignored(here, capsys):
    """Changed physics (old -> new) and ignored ics.* in one warning, in run.log and on
    stdout (and as a Python warning through the API)."""
    assert main(["run", "small.toml", "--quiet", "--set", f"time.t_end={5 * DT}"]) == 0
    capsys.readouterr()
    assert main(["run", "--restart", "out", "--set", f"time.t_end={10 * DT}",
                 "--set", "gravity.theta=0.5", "--set", "ics.n=999",
                 "--set", "ics.seed=4"]) == 0
    out = capsys.readouterr().out
    line = next(s for s in out.splitlines() if s.startswith("warning: restart:"))
    for needle in ("gravity.theta 0.6 -> 0.5", f"time.t_end {5 * DT!r} -> {10 * DT!r}",
                   "ignored", "ics.n = 999 (the run keeps 200)"):
        assert needle in line, line
    assert "ics.seed" not in line             # the same as the snapshot's: nothing to say
    assert line in (here / "out" / "run.log").read_text()
    with h5py.File(here / "out" / "snapshot_0002.hdf5", "r") as f:
        assert len(f["PartType1/Coordinates"]) == 200
        assert f["Parameters"].attrs["ics.n"] == 200
    with pytest.warns(RuntimeWarning, match="gravity.theta 0.5 -> 0.4"):
        sim = hybridtree.Simulation.from_snapshot(here / "out" / "snapshot_0002.hdf5",
                                                  theta=0.4, quiet=True)
    sim.close()


def test_finished_runs_continue_to_a_later_end(here, capsys):
    """A finished isolated run and a finished cosmological sphere, restarted from their
    folders with a later end, continue (a cosmological one gave a traceback)."""
    assert main(["run", "small.toml", "--quiet"]) == 0
    assert main(["run", "--restart", "out", "--quiet", "--set", f"time.t_end={15 * DT}"]) == 0
    with h5py.File(here / "out" / "snapshot_0003.hdf5", "r") as f:
        assert f["Header"].attrs["Time"] == 15 * DT
    assert main(["run", "small.toml", "--quiet", "--set", "output.dir=sphere", *SPHERE]) == 0
    assert main(["run", "--restart", "sphere", "--quiet", "--set", "cosmology.z_end=1"]) == 0
    with h5py.File(here / "sphere" / "snapshot_0002.hdf5", "r") as f:
        assert f["Header"].attrs["Redshift"] == 1.0
        assert f["RunState"].attrs["Step"] > 4
    # the same end again: nothing left to do, nothing more written
    assert main(["run", "--restart", "sphere", "--quiet", "--set", "cosmology.z_end=1"]) == 0
    assert not (here / "sphere" / "snapshot_0003.hdf5").exists()


def test_an_end_before_the_start_says_so(here, capsys):
    """time.t_end before the snapshot's time: not 'not a whole number of steps'."""
    assert main(["run", "small.toml", "--quiet"]) == 0
    assert main(["run", "--restart", "out/snapshot_0002.hdf5", "--set", "output.dir=o2",
                 "--set", f"time.t_end={5 * DT}"]) == 2
    msg = one_error_line(capsys, "before the start time", f"{10 * DT:.10g}", f"{5 * DT:.10g}")
    assert "whole number" not in msg


def test_a_saved_state_restarted_into_a_folder_of_another_run(here, capsys):
    """A state saved beside another run's snapshots: the message says what is there and
    the choices, not that the folder holds later states of the run continued."""
    assert main(["run", "small.toml", "--quiet"]) == 0
    with hybridtree.Simulation.from_config("small.toml", quiet=True) as sim:
        sim.step(2)
        sim.save(here / "out" / "state.hdf5")
    assert main(["run", "--restart", "out/state.hdf5"]) == 2
    msg = one_error_line(capsys, "snapshot_0000.hdf5", "state.hdf5 (step 2)",
                         "numbers its snapshots on from 0", "output.dir", "--overwrite")
    assert "later" not in msg and "--restart out" not in msg


def test_a_folder_stopped_before_its_first_snapshot_says_a_rerun_works(here, capsys):
    (here / "out").mkdir()
    (here / "out" / "run.log").write_text("start: ...\n")
    assert main(["run", "--restart", "out"]) == 2
    one_error_line(capsys, "no complete snapshot", "before writing its first snapshot",
                   "hybridtree run CONFIG", "no --overwrite needed")
    # and it is true: the same config runs in that folder as it is
    assert main(["run", "small.toml", "--quiet"]) == 0
    assert (here / "out" / "snapshot_0002.hdf5").exists()
