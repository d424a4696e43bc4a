"""Runs with float32 velocities (memory.velocities = "float32", issue 56): a restart
continues to the bits of the uninterrupted run, snapshots hold the float32 values as
float64 (exact), energy is conserved as with float64 velocities, and the combinations
not supported yet are refused with one line (status 2) before anything is made."""

import h5py
import numpy as np
import pytest

from tests.helpers import one_error_line, run_config
from hybridtree.analysis.diagnostics import read_diagnostics
from hybridtree.cli import main
from hybridtree.config.rules import process_refusal
from hybridtree.config.settings import settings_from_flat

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


@pytest.mark.parametrize("more, needles", [
    (["time.stepping=block"], ["memory.velocities = 'float32'", "time.stepping = 'block'"]),
    (["ics.kind=cosmo_box", "cosmology.enabled=true", "ics.n_grid=8"],
     ["memory.velocities = 'float32'", "periodic box"]),
])
def test_an_unsupported_combination_is_one_line_and_status_2(here, capsys, more, needles):
    """Block steps and periodic boxes with float32 velocities: refused at validation
    (exit 2, one line naming the setting), before an output folder is made."""
    args = ["run", "small.toml", "--quiet"]
    for item in more:
        args += ["--set", item]
    assert main(args) == 2
    one_error_line(capsys, *needles)
    assert not (here / "out").exists()


def test_several_processes_are_refused_for_float32_velocities():
    """The rule a run of several processes checks before it takes a device (the MPI
    exchange carries float64 velocities): one process passes."""
    values = settings_from_flat({"memory.velocities": "float32"}).values
    assert process_refusal(values, 1) is None
    why = process_refusal(values, 2)
    assert "memory.velocities = 'float32'" in why and "one process" in why
    assert process_refusal(settings_from_flat({}).values, 2) is None


@pytest.mark.slow
def test_float32_velocities_conserve_energy_as_float64_ones(tmp_path):
    """A 2^12 Plummer sphere, 320 steps of 1/64 (test_physics.py's energy run, at a
    smaller N): the largest |dE/E| with float32 velocities within 2 % of the float64
    run's (measured, seeds 5, 6, 7: 4.350e-4 / 4.352e-4, 3.196e-4 / 3.197e-4, 4.563e-4 /
    4.562e-4; the rounding of a velocity, 2^-24 of it per kick, is far below the
    integration error), and the momentum within the float64 test's bound 1e-6 (measured
    7e-9 to 1.4e-8 against 1e-15: the roundings do not cancel in Σ m v)."""
    worst, drift = {}, {}
    for vel in ("float64", "float32"):
        cfg = tmp_path / f"{vel}.toml"
        cfg.write_text(run_config(4096, 5, 0.5, 320, 320, 16, DT).replace(
            "eps = 0.02", "eps = 0.01").replace("n_leaf = 8", "n_leaf = 16")
            .replace('dir = "out"', f'dir = "{(tmp_path / vel).as_posix()}"')
            + f'\n[memory]\nvelocities = "{vel}"\n')
        assert main(["run", str(cfg), "--quiet"]) == 0
        rows = [{k: float(v) for k, v in r.items()}
                for r in read_diagnostics(tmp_path / vel / "diagnostics.csv")]
        assert rows[-1]["time"] == 5.0
        worst[vel] = max(abs(r["rel_energy_error"]) for r in rows)
        p0 = np.array([rows[0][k] for k in ("px", "py", "pz")])
        drift[vel] = max(np.linalg.norm(np.array([r[k] for k in ("px", "py", "pz")]) - p0)
                         for r in rows)
    assert worst["float64"] < 1e-3
    assert abs(worst["float32"] - worst["float64"]) < 0.02 * worst["float64"], worst
    assert drift["float32"] < 1e-6 and drift["float64"] < 1e-12, drift
