"""Runs with float32 velocities (memory.velocities = "float32", issue 56): a restart
continues to the bits of the uninterrupted run (periodic boxes too), snapshots hold the
float32 values as float64 (exact), several processes follow one, and energy is
conserved as with float64 velocities."""

import os

import h5py
import numpy as np
import pytest

from tests.helpers import ROOT, mpiexec, one_error_line, run_config
from hybridtree.analysis.diagnostics import read_diagnostics
from hybridtree.cli import main

DT = 1 / 64
F32 = '\n[memory]\nvelocities = "float32"\n'
CONFIG_FILES = {"small.toml": run_config(600, 4, 0.6, 10, 5, 2, DT) + F32,
                "wide.toml": run_config(600, 4, 0.6, 10, 5, 2, DT)}


def particles(path):
    with h5py.File(path, "r") as f:
        return ({k: f["PartType1"][k][...] for k in f["PartType1"]},
                f["Header"].attrs["Time"], dict(f["Parameters"].attrs))


def test_a_float32_velocity_run_restarts_bit_for_bit(here):
    """Ten steps at once and five, a restart from the snapshot, five more: the same
    snapshot bits and diagnostics.  The snapshot's velocities are float32 values stored
    as float64 (the restart reads them back exactly), its parameters name the setting,
    and they differ from a float64-velocity run's."""
    assert main(["run", "small.toml", "--quiet", "--set", "output.dir=full"]) == 0
    assert main(["run", "small.toml", "--quiet", "--set", "output.dir=half",
                 "--set", f"time.t_end={5 * DT}"]) == 0
    assert main(["run", "--restart", "half/snapshot_0001.hdf5", "--quiet",
                 "--set", f"time.t_end={10 * DT}"]) == 0
    a, ta, pa = particles(here / "full" / "snapshot_0002.hdf5")
    b, tb, _ = particles(here / "half" / "snapshot_0002.hdf5")
    assert ta == tb == 10 * DT
    for k in a:
        assert a[k].tobytes() == b[k].tobytes(), k
    v = a["Velocities"]
    assert v.dtype == np.float64 and np.array_equal(v.astype(np.float32).astype(np.float64), v)
    assert str(pa["memory.velocities"]) == "float32"
    full = read_diagnostics(here / "full" / "diagnostics.csv")
    half = read_diagnostics(here / "half" / "diagnostics.csv")
    physics = list(full[0])[:list(full[0]).index("r90") + 1]     # not the timings
    assert ([[r[k] for k in physics] for r in half if r["step"] != "5"]
            == [[r[k] for k in physics] for r in full])
    assert main(["run", "wide.toml", "--quiet", "--set", "output.dir=wide"]) == 0
    w, _, _ = particles(here / "wide" / "snapshot_0002.hdf5")
    assert not np.array_equal(w["Velocities"], v)
    assert np.abs(w["Velocities"] - v).max() < 1e-4 * np.abs(v).max()


def box_config() -> str:
    """configs/cosmo_box_small.toml made tiny: 512 particles, 8 steps from z = 49 to 4, a
    snapshot at z ~ 9 (test_cosmo_restart.py's box) with float32 velocities."""
    change = {"n_grid": "8", "steps": "8", "z_end": "4.0", "redshifts": "9",
              "diag_every": "4"}
    lines = (ROOT / "configs" / "cosmo_box_small.toml").read_text().splitlines()
    lines = [f"{line.split('=')[0].strip()} = {change[line.split('=')[0].strip()]}"
             if line.split("=")[0].strip() in change else line for line in lines]
    return "\n".join(lines) + F32


def box_state(path) -> dict:
    with h5py.File(path, "r") as f:
        out = {k: f["PartType1"][k][...] for k in f["PartType1"]}
        out["time"] = f["Header"].attrs["Time"]
        return out


@pytest.mark.parametrize("stepping, mesh", [("shared", "float64"), ("block", "float64"),
                                            ("shared", "float32")])
def test_a_periodic_box_with_float32_velocities_restarts_bit_for_bit(here, monkeypatch,
                                                                      stepping, mesh):
    """A periodic box (TreePM, comoving steps; shared or block steps; the float64 mesh,
    or the float32 one with its float4 force and one mass) with float32 velocities:
    continued from its z ~ 9 snapshot it ends in the bits of the uninterrupted run (the
    exact state beside the snapshot holds the float32 values as float64); with shared
    steps and the float64 mesh a host state gives the device state's bits (all but the
    potential, which differs between the backends with float64 velocities too)."""
    (here / "box.toml").write_text(box_config())
    more = ["--set", f"time.stepping={stepping}", "--set", "time.max_bin=3",
            "--set", f"memory.mesh={mesh}"]
    assert main(["run", "box.toml", "--quiet", "--set", "output.dir=one", *more]) == 0
    assert main(["run", "--restart", "one/snapshot_0001.hdf5", "--quiet",
                 "--set", "output.dir=two"]) == 0
    a, b = (box_state(here / d / "snapshot_0002.hdf5") for d in ("one", "two"))
    assert a["time"] == b["time"]
    for k in a:
        assert np.asarray(a[k]).tobytes() == np.asarray(b[k]).tobytes(), k
    box = a["HybridtreeBoxState"]               # pos, vel, mass
    assert box.shape == (512, 7)
    assert np.array_equal(box[:, 3:6].astype(np.float32).astype(np.float64), box[:, 3:6])
    if stepping == "block" or mesh == "float32":
        return
    monkeypatch.setenv("HYBRIDTREE_STATE", "host")
    assert main(["run", "box.toml", "--quiet", "--set", "output.dir=host", *more]) == 0
    h = box_state(here / "host" / "snapshot_0002.hdf5")
    for k in a:
        if k != "Potential":
            assert np.asarray(a[k]).tobytes() == np.asarray(h[k]).tobytes(), k


def test_another_precision_is_one_line_and_status_2(here, capsys):
    """memory.velocities takes float64 or float32: float16 is refused in one line naming
    the setting and its choices, before an output folder is made."""
    assert main(["run", "small.toml", "--quiet", "--set", "memory.velocities=float16"]) == 2
    one_error_line(capsys, "memory.velocities must be one of float64, float32")
    assert not (here / "out").exists()


@pytest.mark.mpi
@pytest.mark.parametrize("backend", ["device", "host"])
def test_two_processes_with_float32_velocities_follow_one(here, backend):
    """mpiexec -n 2 with float32 velocities (the particles migrate with their 12-byte
    velocities: cl/let.cl's byte-wise rows; the host state's exchange rounds the float64
    rows back exactly) against one process: every particle once, every velocity a
    float32 value, the same run to the LET's force differences (test_mpi_run.py's bound
    for two processes against one, 1e-4 after 8 steps)."""
    import subprocess
    import sys
    runs = {}
    for k in (1, 2):
        cmd = [sys.executable, "-m", "hybridtree", "run", "small.toml", "--quiet",
               "--set", f"output.dir=k{k}", "--set", "ics.n=800", "--set",
               f"time.t_end={8 * DT}", "--set", f"output.snapshot_dt={4 * DT}"]
        proc = subprocess.run(([mpiexec(), "-n", "2"] if k > 1 else []) + cmd,
                              capture_output=True, text=True, timeout=300,
                              env={**os.environ, "PYTHONPATH": str(ROOT),
                                   "HYBRIDTREE_STATE": backend})
        assert proc.returncode == 0, proc.stderr[-3000:]
        p, t, _ = particles(here / f"k{k}" / "snapshot_0002.hdf5")
        order = np.argsort(p["ParticleIDs"])
        runs[k] = {key: v[order] for key, v in p.items()}
        assert t == 8 * DT
    a, b = runs[1], runs[2]
    assert np.array_equal(a["ParticleIDs"], b["ParticleIDs"])
    assert np.array_equal(a["ParticleIDs"], np.arange(1, 801))
    v = b["Velocities"]
    assert np.array_equal(v.astype(np.float32).astype(np.float64), v)
    assert np.abs(a["Coordinates"] - b["Coordinates"]).max() < 1e-4
    assert np.abs(a["Velocities"] - v).max() < 1e-3 * np.abs(v).max()


@pytest.mark.slow
def test_float32_velocities_conserve_energy_as_float64_ones(tmp_path):
    """A 2^12 Plummer sphere, 160 steps of 1/64 (test_physics.py's energy run, at a
    smaller N and half its 5 time units): the largest |dE/E| with float32 velocities
    within 2 % of the float64 run's, and the momentum within the float64 test's bound
    1e-6.  Measured at 160 steps, seeds 5, 6: 2.7327e-4 / 2.7324e-4, 2.5166e-4 /
    2.5164e-4 (1e-4 apart; the rounding of a velocity, 2^-24 of it per kick, is far below
    the integration error), momentum 4e-9 and 8e-9 against 1e-15 (the roundings do not
    cancel in Σ m v).  The 320 steps it had (seeds 5, 6, 7: 4.350e-4 / 4.352e-4, ...; 17
    CPU s, now 9) add nothing to the check: with the float32 kicks rounding toward zero
    (cl/state.cl kick_vel, kick4: convert_float_rtz, a bias of half an ulp a kick) the
    float32 run's error is 10 % off the float64 one's at 160 steps and 8.8 % at 320 (seed
    5, 2026-11-29, CPU device): both fail the 2 %."""
    worst, drift = {}, {}
    for vel in ("float64", "float32"):
        cfg = tmp_path / f"{vel}.toml"
        cfg.write_text(run_config(4096, 5, 0.5, 160, 160, 16, DT).replace(
            "eps = 0.02", "eps = 0.01").replace("n_leaf = 8", "n_leaf = 16")
            .replace('dir = "out"', f'dir = "{(tmp_path / vel).as_posix()}"')
            + f'\n[memory]\nvelocities = "{vel}"\n')
        assert main(["run", str(cfg), "--quiet"]) == 0
        rows = [{k: float(v) for k, v in r.items()}
                for r in read_diagnostics(tmp_path / vel / "diagnostics.csv")]
        assert rows[-1]["time"] == 2.5
        worst[vel] = max(abs(r["rel_energy_error"]) for r in rows)
        p0 = np.array([rows[0][k] for k in ("px", "py", "pz")])
        drift[vel] = max(np.linalg.norm(np.array([r[k] for k in ("px", "py", "pz")]) - p0)
                         for r in rows)
    assert worst["float64"] < 1e-3
    assert abs(worst["float32"] - worst["float64"]) < 0.02 * worst["float64"], worst
    assert drift["float32"] < 1e-6 and drift["float64"] < 1e-12, drift
