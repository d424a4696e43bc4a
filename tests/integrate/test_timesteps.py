"""Block (hierarchical) time steps: analytic orbits, the shared leapfrog as the one-bin
case, conservation on a cusp, restarts and the bin bookkeeping."""

import csv

import numpy as np
import pytest

import hybridtree
from hybridtree.config import ConfigError, load_config, parse_overrides
from hybridtree.ics import hernquist_satellite, plummer
from hybridtree.integrate.timebins import lowest_active


def block(**extra):
    return {"time.stepping": "block", **extra}


def test_lowest_active_bin_follows_the_ticks():
    # 2^3 ticks: bin 3 is active at every tick, bin 2 at even ones, bin 1 at 4, all at 0/8
    assert [lowest_active(t, 3) for t in range(9)] == [0, 3, 2, 3, 1, 3, 2, 3, 0]


def _kepler_pair(eps):
    """A unit mass at rest at the origin with test particles on softened circular orbits
    at r = 0.1 (period 0.2) and r = 1 (period 6.3) in the x-y plane."""
    radii = np.array([0.1, 1.0])
    omega = np.sqrt(1.0 / (radii ** 2 + eps ** 2) ** 1.5)
    pos = np.array([[0.0, 0.0, 0.0], [radii[0], 0, 0], [radii[1], 0, 0]])
    vel = np.array([[0.0, 0.0, 0.0], [0, omega[0] * radii[0], 0], [0, omega[1] * radii[1], 0]])
    mass = np.array([1.0, 1e-10, 1e-10])
    return pos, vel, mass, radii, omega


@pytest.mark.parametrize("backend, refit", [("device", 0.0), ("device", 0.5),
                                            ("device", 100.0), ("host", 0.5)])
def test_orbits_of_very_different_periods_follow_the_analytic_solution(backend, refit,
                                                                       monkeypatch):
    """``refit``: gravity.refit_fraction (the device state's substeps refit the tree:
    100 refits every force of some particles)."""
    monkeypatch.setenv("HYBRIDTREE_STATE", backend)
    eps, t_end = 0.01, 1.0
    pos, vel, mass, radii, omega = _kepler_pair(eps)
    sim = hybridtree.Simulation(pos, vel, mass, quiet=True, settings=block(
        **{"time.dt": 1 / 16, "gravity.eps": eps, "time.eta": 0.05,
           "gravity.refit_fraction": refit}))
    sim.evolve(t_end)
    got = sim.pos
    angle = omega * t_end
    exact = radii[:, None] * np.stack([np.cos(angle), np.sin(angle), 0 * angle], axis=1)
    err = np.linalg.norm(got[1:] - exact, axis=1) / radii
    # the leapfrog's phase error at the inner orbit's step h = dt / 2^7 (a numpy
    # leapfrog of the same orbit: 2.3e-3 after 5 orbits; 3.7e-2 at h = dt / 2^5)
    assert err[0] < 4e-3 and err[1] < 1e-5, err          # measured 2.3e-3, 2.2e-6
    assert np.abs(np.linalg.norm(got[1:], axis=1) / radii - 1).max() < 1e-4
    rows = {r["bin"]: r for r in sim.timebins()}
    # dt = eta sqrt(eps / |a|): the inner orbit (|a| = 98.5) in bin 7, the outer in bin 4
    assert rows[7]["particles"] == 1 and rows[4]["particles"] == 1
    assert rows[0]["particles"] == 1          # the central mass feels almost nothing
    # the deepest bin is charged its own substeps: 2^7 per step, less those it shares
    # with lower bins (charged to those)
    assert rows[7]["substeps"] == 16 * (128 - 64)


def test_the_same_orbits_with_the_shared_largest_step_go_wrong():
    """The control of the test above: without the bins the inner orbit is lost."""
    eps = 0.01
    pos, vel, mass, radii, omega = _kepler_pair(eps)
    sim = hybridtree.Simulation(pos, vel, mass, quiet=True,
                                settings={"time.dt": 1 / 16, "gravity.eps": eps})
    sim.evolve(1.0)
    exact = radii[0] * np.array([np.cos(omega[0]), np.sin(omega[0]), 0.0])
    assert np.linalg.norm(sim.pos[1] - exact) / radii[0] > 0.1


@pytest.mark.parametrize("backend", ["device", "host"])
def test_one_bin_is_the_shared_leapfrog_bit_for_bit(backend, monkeypatch):
    monkeypatch.setenv("HYBRIDTREE_STATE", backend)
    pos, vel, mass = plummer(600, seed=4)
    common = {"time.dt": 1 / 32, "gravity.eps": 0.02}
    shared = hybridtree.Simulation(pos, vel, mass, quiet=True, settings=common)
    one = hybridtree.Simulation(pos, vel, mass, quiet=True,
                                settings=block(**common, **{"time.max_bin": 0}))
    shared.step(5)
    one.step(5)
    np.testing.assert_array_equal(one.pos, shared.pos)
    np.testing.assert_array_equal(one.vel, shared.vel)
    assert one.timebins()[0]["particles"] == 600 and len(one.timebins()) == 1


def test_one_bin_with_a_lambda_term_is_the_shared_leapfrog_bit_for_bit():
    """The cosmological Λ term (an external acceleration lam x) kicked with the bins."""
    from tests.helpers import stepping
    from hybridtree.gravity.engine import GravitySettings
    from hybridtree.integrate.schemes import BlockLeapfrog, BlockSettings, NestedLeapfrog
    pos, vel, mass = plummer(500, seed=7)
    g = GravitySettings(eps=0.02)
    out = []
    for make in (lambda e: NestedLeapfrog(e, external=0.37),
                 lambda e: BlockLeapfrog(e, BlockSettings(max_bin=0), external=0.37)):
        for backend in ("device", "host"):
            state, scheme = stepping(pos, vel, mass, g, backend)
            scheme = make(scheme.engine)
            for _ in range(3):
                scheme.step(state, 1 / 32)
            out.append(state.download().vel)
    for v in out[1:]:
        np.testing.assert_array_equal(v, out[0])


def _cusp(n=3000):
    return hernquist_satellite(n, seed=5)


def test_a_cusp_with_a_satellite_conserves_energy_and_momentum():
    pos, vel, mass = _cusp()
    sim = hybridtree.Simulation(pos, vel, mass, quiet=True, settings=block(
        **{"time.dt": 1 / 16, "gravity.eps": 0.01, "time.eta": 0.2, "time.max_bin": 12}))
    sim.evolve(1.0)
    rows = sim.timebins()
    assert len(rows) >= 4, rows                  # the cusp spreads over several bins
    assert sum(r["particles"] for r in rows) == len(mass)
    # |dE / E| over 16 largest steps (measured 1.0e-4; shared steps of time.dt: 2.5e-3),
    # and the momentum that forces of some particles (no net force removed) leave behind
    assert abs(sim.energy_error) < 3e-4, sim.energy_error
    p = (sim.mass[:, None] * sim.vel).sum(axis=0)
    sigma = np.sqrt((sim.mass[:, None] * sim.vel ** 2).sum() / sim.mass.sum())
    assert np.linalg.norm(p) / (sim.mass.sum() * sigma) < 1.5e-4     # measured 5.7e-5


def test_block_steps_cost_less_than_shared_steps_of_the_same_accuracy():
    """The point of the bins: the shared step that the deepest particles need costs
    more forces than the block run takes."""
    pos, vel, mass = _cusp(2000)
    common = {"gravity.eps": 0.01}
    blk = hybridtree.Simulation(pos, vel, mass, quiet=True, settings=block(
        **common, **{"time.dt": 1 / 16, "time.eta": 0.2}))
    blk.evolve(0.25)
    deep = max(r["bin"] for r in blk.timebins() if r["particles"])
    forces = sum(r["forces"] for r in blk.timebins())
    shared_forces = len(mass) * 4 * 2 ** deep
    assert forces < shared_forces / 2, (forces, shared_forces)


@pytest.mark.parametrize("refit", [0.0, 0.05, 0.5, 100.0])
def test_restart_with_bins_is_bit_for_bit(tmp_path, refit):
    """With refits too: the restarted run builds the tree its substeps refit."""
    pos, vel, mass = _cusp(1500)
    settings = block(**{"time.dt": 1 / 16, "gravity.eps": 0.01, "time.max_bin": 10,
                        "gravity.refit_fraction": refit})
    ref = hybridtree.Simulation(pos, vel, mass, quiet=True, settings=settings)
    ref.step(4)
    sim = hybridtree.Simulation(pos, vel, mass, quiet=True, settings=settings)
    sim.step(2)
    path = sim.save(tmp_path / "state.hdf5")
    again = hybridtree.Simulation.from_snapshot(path, quiet=True)
    assert again.settings.time.stepping == "block"
    again.step(2)
    np.testing.assert_array_equal(again.pos, ref.pos)
    np.testing.assert_array_equal(again.vel, ref.vel)


def test_block_steps_with_refits_follow_those_that_build_every_tree():
    """gravity.refit_fraction: the substeps refit the last tree (cells kept, moments and
    sides redone) instead of building one; the run stays that of builds to the force
    error (0: every force builds; 100: every force of some particles refits; None: the
    default, 0.05, which refits the substeps of the deepest bin, 7 of 2000 particles)."""
    pos, vel, mass = _cusp(2000)
    runs, refits = {}, {}
    for refit in (0.0, 0.5, 100.0, None):
        sim = hybridtree.Simulation(pos, vel, mass, quiet=True, settings=block(
            **{"time.dt": 1 / 8, "gravity.eps": 0.01, "time.max_bin": 10},
            **({} if refit is None else {"gravity.refit_fraction": refit})))
        sim.evolve(0.5)
        rows = sim.timebins()
        runs[refit] = (sim.pos, sim.energy_error, sum(r["interactions"] for r in rows),
                       sum(r["forces"] for r in rows))
        refits[refit] = sim._stepper.counts.get("refits", 0)
    pos0, e0, inter0, forces0 = runs[0.0]
    assert abs(e0) < 3e-4, e0                                    # measured -1.20e-4
    assert refits[0.0] == 0 and refits[None] > 0, refits         # measured 31 (default)
    for refit in (0.5, 100.0, None):
        x, e, inter, forces = runs[refit]
        assert not np.array_equal(x, pos0)                       # it refitted
        # measured: energy errors -1.22e-4 and -1.23e-4, positions 2.8e-5 and 5.0e-5 apart
        # (scale radius 1), interactions 0.2 % and 1.0 % more, the same forces
        assert abs(e - e0) < 2e-5, (refit, e, e0)
        assert np.abs(x - pos0).max() < 5e-4, refit
        assert inter < 1.05 * inter0 and abs(forces - forces0) < 0.01 * forces0, refit


def test_the_cli_writes_timebins_csv(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    from hybridtree.cli import main
    (tmp_path / "run.toml").write_text("""
[ics]
kind = "hernquist"
n = 800
seed = 3
[gravity]
eps = 0.02
[time]
dt = 0.0625
t_end = 0.25
stepping = "block"
[output]
dir = "out"
snapshot_dt = 0.25
""")
    assert main(["run", "run.toml", "--quiet"]) == 0
    with open(tmp_path / "out" / "timebins.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert sum(int(r["particles"]) for r in rows) == 800
    dts = {int(r["bin"]): float(r["dt"]) for r in rows}
    assert all(dts[k] == 0.0625 / 2 ** k for k in dts)
    # the same run through the Python API charges the same substeps and forces
    sim = hybridtree.Simulation.from_config("run.toml", quiet=True)
    sim.evolve(0.25)
    api = {r["bin"]: (r["substeps"], r["forces"], r["particles"]) for r in sim.timebins()}
    assert len(api) > 1
    assert api == {int(r["bin"]): (int(r["substeps"]), int(r["forces"]), int(r["particles"]))
                   for r in rows}


@pytest.mark.parametrize("sets, words", [
    (["time.stepping=block", "hybrid.enabled=true"], "hybrid"),
    (["time.stepping=block", "gravity.eps=0"], "eps > 0"),
    (["gravity.opening=relative", "hybrid.enabled=true"], "hybrid"),
    (["time.max_bin=64"], "max_bin"),
    (["gravity.opening=relative", "gravity.theta_min=0.8", "gravity.theta_max=0.7"],
     "theta_min"),
    (["gravity.opening=relative", "gravity.method=direct"], "needs gravity.method"),
])
def test_settings_that_do_not_go_together_are_refused(tmp_path, sets, words):
    cfg = tmp_path / "c.toml"
    cfg.write_text("[ics]\nkind = 'plummer'\nn = 100\n")
    with pytest.raises(ConfigError, match=words):
        load_config(cfg, parse_overrides(sets))



def test_table_kicks_are_the_same_bits_on_both_backends(runtime):
    """kick_table (a periodic box's block steps: a kick factor per bin) on a host and a
    device state: vel += table[bin] acc[part] for the bins >= kmin only, the same bits."""
    if not runtime.has_fp64:
        pytest.skip("the device state needs cl_khr_fp64")
    import pyopencl as cl
    from hybridtree.state import make_state
    from hybridtree.integrate.timebins import NBINS, DeviceBins, HostBins
    from hybridtree.particles import Particles
    rng = np.random.default_rng(4)
    n = 1000
    p = Particles(rng.random((n, 3)), rng.normal(size=(n, 3)), np.full(n, 1.0 / n),
                  np.arange(1, n + 1, dtype=np.uint64))
    acc, bins = rng.normal(size=(n, 3)), rng.integers(0, 5, n).astype(np.int32)
    table = rng.random(NBINS)
    out = {}
    for kind in ("host", "device"):
        state = make_state(p, ("short", "long"), kind, runtime)
        b = HostBins(state) if kind == "host" else DeviceBins(state)
        if kind == "host":
            state.acc["short"][:] = acc
            b.bins[:] = bins
        else:
            cl.enqueue_copy(runtime.queue, state.acc["short"], acc)
            cl.enqueue_copy(runtime.queue, b.bins, bins)
        b.kick_table(2, table, "short")
        out[kind] = state.download().vel
    assert np.array_equal(out["host"], out["device"])
    moved = bins >= 2
    assert np.array_equal(out["host"][~moved], p.vel[~moved])
    assert np.allclose(out["host"][moved], p.vel[moved] + table[bins[moved], None] * acc[moved],
                       rtol=0, atol=1e-15)
