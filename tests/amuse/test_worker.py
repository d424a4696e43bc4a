"""The AMUSE worker's object (hybridtree.amuse.worker), called as AMUSE's Python worker
calls it (whole arrays, outputs in value holders), without AMUSE: particles by index,
commit, evolve, energies and the field against hybridtree's own API."""

import subprocess
import sys

import numpy as np
import pytest

import hybridtree
from hybridtree.amuse.worker import HybridtreeImplementation
from hybridtree.gravity import accelerations
from hybridtree.ics import plummer


class Holder:
    """What AMUSE's worker passes for an output argument (amuse.rfi.python_code.ValueHolder)."""

    def __init__(self):
        self.value = None


def out(n=1):
    return [Holder() for _ in range(n)]


def loaded(n=128, seed=3, dt=1 / 32, eps=0.05):
    pos, vel, mass = plummer(n, seed=seed)
    w = HybridtreeImplementation()
    assert w.set_eps2(eps ** 2) == 0 and w.set_time_step(dt) == 0
    (index,) = out()
    assert w.new_particle(index, mass, *pos.T, *vel.T, np.zeros(n)) == 0
    assert w.commit_parameters() == 0 and w.commit_particles() == 0
    return w, index.value, pos, vel, mass


def test_a_worker_run_is_our_own_run_of_the_same_particles():
    """The same particles, settings and steps as hybridtree.Simulation: the same bits (one
    process, the same device); the energies are the simulation's."""
    w, index, pos, vel, mass = loaded()
    assert list(index) == list(range(1, 129))
    assert w.evolve_model(0.25) == 0
    t = out()[0]
    w.get_time(t)
    sim = hybridtree.Simulation(pos, vel, mass, index, dt=1 / 32, eps=0.05,
                                opening="geometric", quiet=True)
    sim.evolve(0.25)
    assert t.value == sim.t == 0.25
    x, y, z = out(3)
    assert w.get_position(index[::-1], x, y, z) == 0
    np.testing.assert_array_equal(np.column_stack([x.value, y.value, z.value]),
                                  sim.pos[::-1])
    kin, pot = out(2)
    w.get_kinetic_energy(kin), w.get_potential_energy(pot)
    assert (kin.value, pot.value) == (sim.energy()["kinetic"], sim.energy()["potential"])
    # evolve_model between steps ends at the next step (a fixed-step leapfrog)
    w.evolve_model(0.26)
    w.get_time(t)
    assert t.value == 0.25 + 1 / 32


def test_the_opening_parameter_is_the_runs_opening_criterion():
    """opening_angle is the geometric criterion by default (as AMUSE's tree codes mean
    it, not a run's "auto"); opening = "relative" with alpha is the run's relative one
    (from the second force on: the first has no old accelerations; 1024 particles, as
    128 open every cell either way)."""
    w, index, pos, vel, mass = loaded(n=1024)
    assert w.set_opening("relative") == 0 and w.set_alpha(0.01) == 0
    assert w.recommit_parameters() == 0 and w.evolve_model(2 / 32) == 0
    ax, ay, az = out(3)
    w.get_acceleration(index, ax, ay, az)
    acc = np.column_stack([ax.value, ay.value, az.value])
    for opening, same in (("relative", True), ("geometric", False)):
        sim = hybridtree.Simulation(pos, vel, mass, index, dt=1 / 32, eps=0.05, quiet=True,
                                    opening=opening, alpha=0.01)
        sim.evolve(2 / 32)
        assert np.array_equal(acc, sim.acc) == same, opening


def test_a_changed_particle_is_taken_in_by_recommit():
    w, index, pos, vel, mass = loaded()
    w.evolve_model(1 / 32)
    vx, vy, vz = out(3)
    w.get_velocity(index, vx, vy, vz)
    v = np.column_stack([vx.value, vy.value, vz.value])
    assert w.set_velocity(index[:2], [0.0, 1.0], [0.0, 2.0], [0.0, 3.0]) == 0
    assert w.delete_particle(index[5:7]) == 0
    assert w.recommit_particles() == 0
    n, m = out(2)
    w.get_number_of_particles(n), w.get_total_mass(m)
    assert n.value == 126 and m.value == pytest.approx(mass.sum() - mass[5:7].sum())
    w.get_velocity(index[:2], vx, vy, vz)
    np.testing.assert_array_equal(np.column_stack([vx.value, vy.value, vz.value]),
                                  [[0, 0, 0], [1, 2, 3]])
    w.get_velocity(index[2:5], vx, vy, vz)
    np.testing.assert_array_equal(np.column_stack([vx.value, vy.value, vz.value]), v[2:5])
    # an index that is not there (deleted) is AMUSE's error -1, and nothing is changed
    assert w.get_mass(index[5:6], m) == -1
    assert w.set_mass(index[4:6], [1.0, 1.0], ) == -1
    w.get_mass(index[4:5], m)
    assert m.value[0] == mass[4]


def test_the_field_calls_are_hybridtree_gravity_accelerations():
    w, index, pos, vel, mass = loaded()
    rng = np.random.default_rng(5)
    points = np.concatenate([rng.normal(size=(20, 3)), pos[:3]])
    ax, ay, az, phi = out(4)
    eps = np.zeros(len(points))
    assert w.get_gravity_at_point(eps, *points.T, ax, ay, az) == 0
    assert w.get_potential_at_point(eps, *points.T, phi) == 0
    ref = accelerations(pos, mass, eps=0.05, theta=0.5, sinks=points)
    np.testing.assert_array_equal(np.column_stack([ax.value, ay.value, az.value]), ref.acc)
    np.testing.assert_array_equal(phi.value, ref.pot)
    # and the tree's field is the softened direct sum's to the tree's accuracy
    d = points[:, None, :] - pos[None, :, :]
    r2 = (d * d).sum(-1) + 0.05 ** 2
    direct = -(mass[None, :, None] * d / r2[..., None] ** 1.5).sum(1)
    err = np.linalg.norm(ref.acc - direct, axis=1) / np.linalg.norm(direct, axis=1)
    assert err.max() < 0.02
    np.testing.assert_allclose(phi.value, -(mass / np.sqrt(r2)).sum(1), rtol=0.01)


def test_hybridtree_imports_without_amuse():
    """hybridtree and hybridtree.amuse import with AMUSE absent; asking for the code says
    how to install it."""
    code = ("import sys; sys.modules['amuse'] = None\n"
            "import hybridtree, hybridtree.amuse, hybridtree.amuse.worker\n"
            "try:\n    hybridtree.amuse.Hybridtree\n"
            "except ImportError as exc:\n    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "pip install 'hybridtree[amuse]'" in done.stdout


def test_mistakes_raise_hybridtree_errors_that_amuse_passes_on():
    """AMUSE's worker sends an exception's one line back to the script (tests/amuse/
    test_code.py sees it there): a parameter out of range is refused as a config file's
    would be, and is not kept; a NaN particle stops the commit, and nothing evolves
    without a simulation."""
    from hybridtree.errors import HybridtreeError
    w, index, pos, vel, mass = loaded(n=32)
    with pytest.raises(HybridtreeError, match=r"gravity.theta must be 0 < theta <= 1.2, got 5.0"):
        w.set_theta(5.0)
    with pytest.raises(HybridtreeError, match=r"time.dt must be > 0, got -1.0"):
        w.set_time_step(-1.0)
    with pytest.raises(HybridtreeError, match=r"gravity.eps must be >= 0"):
        w.set_eps2(-1.0)
    theta = out()[0]
    w.get_theta(theta)
    assert theta.value == 0.5
    (new,) = out()
    w.new_particle(new, [0.01], [np.nan], [0.0], [0.0], [0.0], [0.0], [0.0], [0.0])
    with pytest.raises(HybridtreeError, match=r"positions\[32\] is not finite"):
        w.recommit_particles()
    with pytest.raises(HybridtreeError, match="the particles are not committed"):
        w.evolve_model(1.0)
    t = out()[0]
    w.get_time(t)
    assert t.value == 0.0
    w.delete_particle(new.value)            # without it the particles commit again
    assert w.recommit_particles() == 0 and w.evolve_model(1 / 32) == 0
