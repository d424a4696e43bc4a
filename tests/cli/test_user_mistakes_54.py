"""User mistakes of issue 54 (items 4, 6, 7, 8) at the command line, each run as the user
runs it (a subprocess): one line ``hybridtree: error: ...`` saying what is wrong and
what to do, exit status 2, no traceback, nothing left behind; and ``hybridtree ic
--config`` writes the run's own first snapshot."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs"


def cli(argv: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    full = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    for name in ("HYBRIDTREE_FAULT", "HYBRIDTREE_CL_OPTIONS", "PYOPENCL_COMPILER_OUTPUT"):
        if name not in env:
            full.pop(name, None)
    return subprocess.run([sys.executable, "-m", "hybridtree", *argv], capture_output=True,
                          text=True, env=full, cwd=cwd, timeout=300)


def one_line(res: subprocess.CompletedProcess, *needles: str) -> str:
    """The one error line of a user error (exit status 2), holding every needle."""
    assert res.returncode == 2, (res.returncode, res.stderr[-3000:])
    err = res.stderr
    assert "Traceback" not in err and "internal error" not in err, err
    assert err.count("\n") == 1 and err.startswith("hybridtree: error: "), err
    for needle in needles:
        assert needle in err, err
    return err.strip()[len("hybridtree: error: "):]


def short_run(config: str, out: Path, *sets: str) -> list[str]:
    return ["run", str(CONFIGS / config), "--set", f"output.dir={out}",
            *[a for s in sets for a in ("--set", s)]]


# --- item 4: a truncation that keeps almost no mass -------------------------------------

def test_a_hernquist_truncated_to_nothing_is_one_line(tmp_path):
    out = tmp_path / "out"
    res = cli(short_run("hernquist.toml", out, "ics.r_max=1e-300", "ics.n=100"), tmp_path)
    msg = one_line(res, "r_max = 1e-300", "r_max >= 0.1112")
    assert "fraction 0 " in msg
    assert not out.exists()


# --- item 7: tracebacks that were user mistakes -----------------------------------------

def test_a_galaxy_of_fewer_particles_than_components_is_one_line(tmp_path):
    out = tmp_path / "out"
    res = cli(short_run("galaxy_mw.toml", out, "ics.n=2"), tmp_path)
    one_line(res, "n = 2", "3 components", "n >= 3")
    assert not out.exists()


def test_a_pm_mesh_the_device_cannot_hold_is_one_line(tmp_path):
    out = tmp_path / "out"
    res = cli(short_run("cosmo_box_small.toml", out, "gravity.pm_grid=4096", "ics.n_grid=8"),
              tmp_path)
    one_line(res, "4096^3 PM mesh", "take a smaller pm_grid")
    assert not out.exists()


def test_a_garbled_fault_spec_is_one_line(tmp_path):
    out = tmp_path / "out"
    res = cli(short_run("plummer_small.toml", out, "ics.n=64", "time.t_end=0.0078125"),
              tmp_path, HYBRIDTREE_FAULT="garbage")
    one_line(res, "HYBRIDTREE_FAULT = 'garbage'", "KIND@POINT:STEP[:RANK]", "unset it")
    assert not out.exists()


def test_compiler_options_the_compiler_refuses_are_one_line(tmp_path):
    # refused by PoCL's and Intel's compilers alike; fails at the device probe's build
    res = cli(["devices"], tmp_path, HYBRIDTREE_CL_OPTIONS="-cl-garbage-flag",
              HYBRIDTREE_CACHE_DIR=str(tmp_path / "cache"))
    one_line(res, "HYBRIDTREE_CL_OPTIONS = '-cl-garbage-flag'", "INVALID_",
             "correct HYBRIDTREE_CL_OPTIONS")


def test_a_compiler_output_switch_pyopencl_cannot_read_is_one_line(tmp_path):
    res = cli(["devices"], tmp_path, PYOPENCL_COMPILER_OUTPUT="garbage")
    one_line(res, "PYOPENCL_COMPILER_OUTPUT = 'garbage'", "PYOPENCL_COMPILER_OUTPUT=1")


# --- item 8: messages that misled ------------------------------------------------------

def test_an_unusable_cache_folder_is_named_instead_of_install_advice(tmp_path):
    res = cli(["devices"], tmp_path, XDG_CACHE_HOME="/dev/null")
    msg = one_line(res, "XDG_CACHE_HOME = '/dev/null'", "not a folder",
                   "set XDG_CACHE_HOME to a folder")
    assert "install" not in msg


@pytest.fixture
def file_config(tmp_path):
    """A config in a folder of its own reading ics.file, run from another folder."""
    folder = tmp_path / "cfg"
    folder.mkdir()
    (folder / "a_folder").mkdir()
    (folder / "loop_a").symlink_to("loop_b")
    (folder / "loop_b").symlink_to("loop_a")
    config = folder / "file.toml"
    config.write_text('[ics]\nkind = "file"\nfile = "x.hdf5"\n[time]\ndt = 0.0078125\n'
                      't_end = 0.0078125\n[output]\ndir = "out"\n')
    work = tmp_path / "work"
    work.mkdir()
    return config, work


@pytest.mark.parametrize("name, says", [
    ("loop_a", "is a symbolic link loop"),
    ("a_folder", "is a folder, not a snapshot file"),
    ("missing.hdf5", "no such file"),
])
def test_what_ics_file_is_and_where_a_relative_one_is_read_from(file_config, name, says):
    config, work = file_config
    res = cli(["run", str(config), "--set", f"ics.file={name}"], work)
    msg = one_line(res, says)
    assert f"ics.file = '{name}' (relative to the config's folder {config.parent})" in msg
    assert "no such file" not in msg or name == "missing.hdf5"
    assert sorted(p.name for p in work.iterdir()) == []
    assert not (config.parent / "out").exists()


def test_halos_of_an_isolated_snapshot_suggests_an_option_it_takes(tmp_path):
    snap = tmp_path / "p.hdf5"
    assert cli(["ic", "plummer", "-n", "300", "-o", str(snap)], tmp_path).returncode == 0
    msg = one_line(cli(["halos", str(snap)], tmp_path), "--link")
    assert "link=," not in msg
    res = cli(["halos", str(snap), "--link", "0.3", "--min-len", "5", "-o",
               str(tmp_path / "fof.hdf5")], tmp_path)
    assert res.returncode == 0, res.stderr
    assert "linking length 0.3 " in res.stdout
    with h5py.File(tmp_path / "fof.hdf5") as f:
        assert f["Header"].attrs["Ngroups_Total"] >= 1     # a Plummer sphere's core links


# --- item 6: hybridtree ic --config is the run's first snapshot ------------------------

def _particles(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    with h5py.File(path) as f:
        g = f["PartType1"]
        return g["Coordinates"][:], g["Velocities"][:], g["ParticleIDs"][:]


def test_ic_with_a_config_is_the_runs_first_snapshot(tmp_path):
    config = CONFIGS / "cosmo_small.toml"
    sets = ["ics.n_grid=8", "cosmology.steps=2", "cosmology.z_end=40", 'output.redshifts="40"']
    run = cli(short_run("cosmo_small.toml", tmp_path / "out", "ics.seed=5", *sets), tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    first = _particles(tmp_path / "out" / "snapshot_0000.hdf5")
    # the seed from --set, as the run had it
    res = cli(["ic", "cosmo_sphere", "-n", "8", "-o", "a.hdf5", "--config", str(config),
               "--set", "ics.seed=5"], tmp_path)
    assert res.returncode == 0 and "seed 5" in res.stdout, res.stderr
    for mine, runs in zip(_particles(tmp_path / "a.hdf5"), first):
        assert np.array_equal(mine, runs)
    # the config's own seed (cosmo_small.toml: 1) without --seed, and --seed over it
    with_config = cli(["ic", "cosmo_sphere", "-n", "8", "-o", "b.hdf5", "--config",
                       str(config)], tmp_path)
    assert "seed 1" in with_config.stdout, with_config.stderr
    given = cli(["ic", "cosmo_sphere", "-n", "8", "-o", "c.hdf5", "--config", str(config),
                 "--seed", "5"], tmp_path)
    assert "seed 5" in given.stdout, given.stderr
    assert np.array_equal(_particles(tmp_path / "c.hdf5")[0], first[0])
    assert not np.array_equal(_particles(tmp_path / "b.hdf5")[0], first[0])
