"""The Python API, hybridtree.Simulation: against the CLI (one driver), an analytic
orbit, conservation laws, its own restarts, and its errors."""

import numpy as np
import pytest

import hybridtree
from tests.helpers import run_config
from hybridtree.cli import main
from hybridtree.config import load_config
from hybridtree.ics import plummer
from hybridtree.io.snapshot import read_snapshot
from hybridtree.run.simulation import initial_conditions
from hybridtree.config.units import Units

DT = 1 / 64
CONFIG = run_config(600, 4, 0.6, 16, 8, 4, DT)


def by_id(path):
    s = read_snapshot(path)
    order = np.argsort(s.particles.ids)
    return s.particles.pos[order], s.particles.vel[order], s


def test_the_cli_and_the_api_are_one_driver(here):
    """`hybridtree run` and Simulation.from_config(...).evolve(t_end) end in the same bits,
    and Simulation(arrays of the same particles) does too."""
    assert main(["run", "c.toml", "--quiet"]) == 0
    pos_cli, vel_cli, snap = by_id(here / "out" / "snapshot_0002.hdf5")
    sim = hybridtree.Simulation.from_config("c.toml", quiet=True)
    sim.evolve(16 * DT)
    assert sim.t == 16 * DT and sim.steps == 16
    np.testing.assert_array_equal(sim.pos, pos_cli)
    np.testing.assert_array_equal(sim.vel, vel_cli)
    settings = load_config("c.toml")
    p, _ = initial_conditions(settings, Units(settings.units.length_cm, settings.units.mass_g))
    arr = hybridtree.Simulation(p.pos, p.vel, p.mass, p.ids, dt=DT, eps=0.02, theta=0.6,
                                n_leaf=8, quiet=True)
    arr.step(16)
    np.testing.assert_array_equal(arr.pos, pos_cli)
    assert arr.energy()["total"] == pytest.approx(float(snap.run_state["InitialEnergy"]),
                                                  rel=2e-3)


@pytest.mark.parametrize("kind", ["range", "sparse"])
def test_particles_come_back_in_the_callers_order(kind):
    pos, vel, mass = plummer(500, seed=3)
    ref = hybridtree.Simulation(pos, vel, mass, dt=DT, quiet=True)
    ref.step(4)
    rng = np.random.default_rng(5)
    perm = rng.permutation(500)
    # any unique IDs in any order: a range (the fast path) or scattered 64-bit numbers
    ids = (np.arange(1000, 1500) if kind == "range" else
           rng.choice(2**62, 500, replace=False).astype(np.uint64))[perm]
    sim = hybridtree.Simulation(pos[perm], vel[perm], mass[perm], ids, dt=DT, quiet=True)
    sim.step(4)
    np.testing.assert_array_equal(sim.ids, ids)
    # the same particles, so the same trajectories (to the last bits of sums whose
    # order follows the input order); a wrong order would be off by O(1)
    np.testing.assert_allclose(sim.pos, ref.pos[perm], rtol=0, atol=1e-14)
    np.testing.assert_allclose(sim.acc, ref.acc[perm], rtol=1e-12, atol=1e-12)
    assert sim.mass.dtype == np.float64 and sim.pos.shape == (500, 3)


def test_a_continued_run_gives_its_particles_sorted_by_id(here):
    """Without the caller's arrays the order is the IDs' -- also for IDs that are not a
    range, which are then sorted on the host."""
    pos, vel, mass = plummer(300, seed=8)
    ids = np.random.default_rng(2).choice(2**40, 300, replace=False).astype(np.uint64)
    sim = hybridtree.Simulation(pos, vel, mass, ids, dt=DT, quiet=True)
    sim.step(2)
    sim.save(here / "sparse.hdf5")
    again = hybridtree.Simulation.from_snapshot(here / "sparse.hdf5", quiet=True)
    assert np.all(np.diff(again.ids.astype(np.int64)) > 0)
    by_caller = np.argsort(ids)
    np.testing.assert_array_equal(again.ids, ids[by_caller])
    np.testing.assert_array_equal(again.pos, sim.pos[by_caller])


def test_a_circular_binary_returns_after_one_period():
    """Two equal masses m = 1/2 at separation 1 (eps = 0, direct sum): circular orbit of
    period 2 pi sqrt(a^3 / (G M)) = 2 pi.  After one period they are back to 1e-5: the
    leapfrog's phase lag is 2 pi (omega dt)^2 / 24 = 6e-7 rad, and float32 forces
    (relative error ~1e-6) add a few 1e-6; a wrong force law or step is off by far more."""
    pos = np.array([[0.5, 0, 0], [-0.5, 0, 0]])
    v = 0.5 * np.sqrt(1.0 / 1.0)          # each moves on radius 1/2: v^2 / (1/2) = G m / 1
    vel = np.array([[0, v, 0], [0, -v, 0]])
    period = 2 * np.pi
    n = 4096
    sim = hybridtree.Simulation(pos, vel, [0.5, 0.5], dt=period / n, eps=0.0,
                                method="direct", quiet=True)
    sim.step(n)
    assert sim.t == pytest.approx(period)
    np.testing.assert_allclose(sim.pos, pos, atol=1e-5)
    assert abs(sim.energy_error) < 1e-6
    # a quarter period more: on the y axis
    sim.step(n // 4)
    np.testing.assert_allclose(sim.pos, [[0, 0.5, 0], [0, -0.5, 0]], atol=1e-5)


@pytest.mark.parametrize("options", [{}, {"hybrid": True, "r_in": 0.02, "r_out": 0.08,
                                          "n_hard": 2}])
def test_energy_and_momentum_are_conserved_and_diagnostics_are_arrays(options):
    pos, vel, mass = plummer(2000, seed=7)
    sim = hybridtree.Simulation(pos, vel, mass, dt=1 / 128, eps=0.01, theta=0.5,
                                quiet=True, **options)
    sim.evolve(0.5)
    d = sim.diagnostics
    assert list(d["step"]) == list(range(0, 65, 8))
    np.testing.assert_allclose(d["time"], d["step"] / 128)
    assert abs(sim.energy_error) < 2e-4
    assert d["rel_energy_error"][-1] == pytest.approx(sim.energy_error, rel=1e-9, abs=1e-15)
    momentum = (sim.mass[:, None] * sim.vel).sum(axis=0)
    assert np.abs(momentum).max() < 1e-12
    assert np.all(np.diff(d["r10"]) != 0) and np.all(d["r50"] > 0)


def test_save_is_continued_bit_for_bit_by_the_cli_and_from_snapshot(here):
    pos, vel, mass = plummer(400, seed=2)
    ref = hybridtree.Simulation(pos, vel, mass, dt=DT, quiet=True)
    ref.step(12)
    sim = hybridtree.Simulation(pos, vel, mass, dt=DT, quiet=True)
    sim.step(6)
    (here / "saved").mkdir()
    path = sim.save(here / "saved" / "state.hdf5")
    assert main(["run", "--restart", str(path), "--set", f"time.t_end={12 * DT}",
                 "--quiet"]) == 0
    pos_cli, vel_cli, snap = by_id(here / "saved" / "snapshot_0000.hdf5")
    assert snap.run_state["Step"] == 12 and snap.time == 12 * DT
    np.testing.assert_array_equal(pos_cli, ref.pos)
    np.testing.assert_array_equal(vel_cli, ref.vel)
    again = hybridtree.Simulation.from_snapshot(path, quiet=True)
    assert again.t == 6 * DT and again.steps == 6
    again.evolve(12 * DT)
    np.testing.assert_array_equal(again.pos, ref.pos)
    assert again.energy_error == pytest.approx(ref.energy_error, abs=1e-15)


def test_an_output_folder_gets_what_the_cli_writes(here):
    pos, vel, mass = plummer(300, seed=1)
    with hybridtree.Simulation(pos, vel, mass, dt=DT, snapshot_dt=4 * DT, output="api_out",
                               quiet=True) as sim:
        sim.step(8)
        sim.step(2)           # ends off the schedule: close() writes the last state
    names = sorted(p.name for p in (here / "api_out").iterdir())
    assert names == ["diagnostics.csv", "run.log"] + [f"snapshot_{k:04d}.hdf5" for k in range(4)]
    steps = [read_snapshot(here / "api_out" / f"snapshot_{k:04d}.hdf5").run_state["Step"]
             for k in range(4)]
    assert steps == [0, 4, 8, 10]


def test_progress_bar_and_quiet(capfd):
    pos, vel, mass = plummer(200, seed=1)
    sim = hybridtree.Simulation(pos, vel, mass, dt=DT, progress=True)
    sim.step(3)
    err = capfd.readouterr().err
    assert "/3 [" in err and "step/s" in err          # tqdm, counting the 3 steps
    sim = hybridtree.Simulation(pos, vel, mass, dt=DT, quiet=True)
    sim.step(3)
    assert capfd.readouterr() == ("", "")


def test_mistakes_are_clear_errors():
    pos, vel, mass = plummer(50, seed=1)
    S = hybridtree.Simulation
    with pytest.raises(TypeError, match="unknown setting 'thetaa'.*did you mean 'theta'"):
        S(pos, vel, mass, thetaa=0.5)
    with pytest.raises(ValueError, match="gravity.theta"):
        S(pos, vel, mass, theta=-1.0)
    with pytest.raises(ValueError, match=r"vel has shape \(49, 3\)"):
        S(pos, vel[:49], mass)
    with pytest.raises(ValueError, match="real numbers"):
        S(pos + 0j, vel, mass)
    with pytest.raises(ValueError, match="unique"):
        S(pos, vel, mass, ids=np.zeros(50, int))
    with pytest.raises(ValueError, match="negative"):
        S(pos, vel, -mass)
    sim = S(pos, vel, mass, dt=0.25, quiet=True)
    with pytest.raises(ValueError, match="whole number of steps.*nearest: 0.25"):
        sim.evolve(0.3)
    with pytest.raises(ValueError, match="must end in .hdf5"):
        sim.save("state.h5")


def test_from_snapshot_of_initial_conditions_starts_a_new_run(here):
    """A file without a run state (hybridtree ic) gives the particles of a new run, by
    its name or its stem; a missing file is a RunError naming it."""
    assert main(["ic", "plummer", "-n", "300", "-o", "ics.hdf5", "--seed", "4"]) == 0
    s = read_snapshot(here / "ics.hdf5")
    for name in ("ics.hdf5", "ics"):
        sim = hybridtree.Simulation.from_snapshot(here / name, dt=DT, quiet=True)
        assert sim.t == 0.0 and sim.steps == 0
        np.testing.assert_array_equal(sim.pos, s.particles.pos)
        np.testing.assert_array_equal(sim.ids, s.particles.ids)
    sim.step(2)
    assert abs(sim.energy_error) < 1e-4
    with pytest.raises(hybridtree.run.simulation.RunError, match="nothing.hdf5"):
        hybridtree.Simulation.from_snapshot(here / "nothing.hdf5")


def test_a_failed_step_leaves_nothing_more_to_write(here, monkeypatch):
    """A step that produces NaN stops the simulation: close() writes no snapshot of the
    bad state, and the simulation refuses to go on."""
    monkeypatch.setenv("HYBRIDTREE_FAULT", "nan@step:3")   # read at the next step
    pos, vel, mass = plummer(200, seed=1)
    sim = hybridtree.Simulation(pos, vel, mass, dt=DT, snapshot_dt=8 * DT, output="bad",
                                quiet=True)
    with pytest.raises(hybridtree.run.simulation.NumericalError, match="step 3"):
        sim.step(5)
    with pytest.raises(RuntimeError, match="cannot go on: step 3 did not complete"):
        sim.step(1)
    sim.close()
    assert sorted(p.name for p in (here / "bad").glob("snapshot_*")) == ["snapshot_0000.hdf5"]


def test_settings_of_a_file_are_kept_and_arrays_are_read_only(here):
    sim = hybridtree.Simulation.from_config("c.toml", dt=DT / 2, quiet=True)
    assert sim.settings.time.t_end == 16 * DT            # the file's, not a default
    assert sim.settings.output.snapshot_dt == 8 * DT
    with pytest.raises(ValueError, match="read-only"):
        sim.pos[0, 0] = 1.0
    x = sim.pos.copy()
    x[0, 0] = 1.0                                        # a copy can change
    assert sim.pos[0, 0] != 1.0


MPI_SCRIPT = """
import sys, numpy as np, hybridtree
from mpi4py import MPI
from hybridtree.ics import plummer
comm = MPI.COMM_WORLD
pos, vel, mass = plummer(400, seed=6)
mine = slice(200 * comm.rank, 200 * (comm.rank + 1))
ids = None if sys.argv[1] == "default" else np.arange(1, 201)      # the same on both: clash
try:
    sim = hybridtree.Simulation(pos[mine], vel[mine], mass[mine], ids, dt=1 / 64, quiet=True)
except ValueError as exc:
    print(f"rank {comm.rank} error: {exc}")
    sys.exit(0)
sim.step(4)
rows = comm.gather((sim.ids.copy(), sim.pos.copy(), sim.energy()["total"]))
if comm.rank == 0:
    ids = np.concatenate([r[0] for r in rows])
    pos = np.concatenate([r[1] for r in rows])
    np.savez(sys.argv[2], ids=ids, pos=pos[np.argsort(ids)], e=rows[0][2], e1=rows[1][2])
"""


@pytest.mark.mpi
def test_arrays_on_many_processes(tmp_path):
    """Under mpiexec each process passes its share: default IDs run 1..N over all
    processes; IDs that clash across processes are one error on every process."""
    import os
    import subprocess
    import sys
    from tests.helpers import ROOT, mpiexec
    script = tmp_path / "w.py"
    script.write_text(MPI_SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = tmp_path / "r.npz"
    for mode in ("default", "clash"):
        proc = subprocess.run([mpiexec(), "-n", "2", sys.executable, str(script), mode,
                               str(out)], capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        if mode == "clash":
            # both processes raise it (their lines may interleave)
            assert proc.stdout.count("not unique") == 2, proc.stdout
            assert "rank 0 error" in proc.stdout and "rank 1 error" in proc.stdout
    r = np.load(out)
    assert sorted(r["ids"]) == list(range(1, 401)) and r["e"] == r["e1"]
    pos, vel, mass = plummer(400, seed=6)
    one = hybridtree.Simulation(pos, vel, mass, dt=1 / 64, quiet=True)
    one.step(4)
    np.testing.assert_allclose(r["pos"], one.pos, atol=1e-5)
    assert r["e"] == pytest.approx(one.energy()["total"], rel=1e-5)
