"""Quantities with units in the Python API (hybridtree/config/quantities.py): astropy and
unyt arguments of ``accelerations`` and ``Simulation`` give the physics of the same
numbers in internal units, results come back as quantities, bare numbers are unchanged,
and a wrong dimension is one user-error line."""

import numpy as np
import pytest

import hybridtree
from hybridtree.config.units import KPC_CM, MSUN_G, Units
from hybridtree.errors import HybridtreeError, UserInputError
from hybridtree.gravity import accelerations
from hybridtree.ics import plummer

u = pytest.importorskip("astropy.units", reason="astropy is not installed (the units extra)")

DEFAULT = Units(KPC_CM, 1e10 * MSUN_G)
PC = Units(KPC_CM / 1e3, MSUN_G)
N = 128


@pytest.fixture(scope="module")
def sphere():
    return plummer(N, seed=4)


def test_accelerations_of_quantities_are_those_of_internal_numbers(sphere):
    pos, _, mass = sphere
    ref = accelerations(pos, mass, 0.05, method="direct")
    assert isinstance(ref.acc, np.ndarray) and not hasattr(ref.acc, "unit")   # bare numbers
    acc_cgs = ref.acc * DEFAULT.velocity_cm_per_s ** 2 / DEFAULT.length_cm
    pot_cgs = ref.pot * DEFAULT.velocity_cm_per_s ** 2
    # the same system given in pc and kg, computed in the default units and in pc, Msun
    x, m, eps = (pos * u.kpc).to(u.pc), (mass * 1e10 * MSUN_G * u.g).to(u.kg), 50 * u.pc
    for system in (None, PC, (PC.length_cm, PC.mass_g)):
        got = accelerations(x, m, eps, method="direct", units=system)
        np.testing.assert_allclose(got.acc.to_value("cm/s**2"), acc_cgs, rtol=1e-5,
                                   atol=1e-5 * np.abs(acc_cgs).max())
        np.testing.assert_allclose(got.pot.to_value("cm**2/s**2"), pot_cgs, rtol=1e-5)
        assert got.acc.unit.physical_type == "acceleration"


def test_unyt_arrays_are_taken_and_given_back(sphere):
    unyt = pytest.importorskip("unyt")
    pos, _, mass = sphere
    ref = accelerations(pos, mass, 0.05, method="direct")
    got = accelerations(unyt.unyt_array(pos, "kpc"), unyt.unyt_array(mass * 1e10, "Msun"),
                        unyt.unyt_quantity(0.05, "kpc"), method="direct")
    assert isinstance(got.acc, unyt.unyt_array)
    # unyt's Msun is not the IAU's that hybridtree uses: 3e-6 apart
    np.testing.assert_allclose(got.acc.to("cm/s**2").d, ref.acc * DEFAULT.velocity_cm_per_s ** 2
                               / DEFAULT.length_cm, rtol=1e-5, atol=1e-5 * np.abs(ref.acc).max()
                               * DEFAULT.velocity_cm_per_s ** 2 / DEFAULT.length_cm)


def test_a_simulation_of_quantities_runs_as_one_of_internal_numbers(sphere):
    pos, vel, mass = sphere
    v_unit, t_unit = DEFAULT.velocity_cm_per_s, DEFAULT.time_s
    plain = hybridtree.Simulation(pos, vel, mass, dt=1 / 64, eps=0.02, quiet=True)
    plain.step(4)
    sim = hybridtree.Simulation((pos * u.kpc).to(u.pc), (vel * v_unit * u.cm / u.s).to(u.km / u.s),
                                mass * 1e10 * MSUN_G * u.g, dt=t_unit / 64 * u.s,
                                eps=20 * u.pc, quiet=True)
    assert sim.settings.values["gravity"]["eps"] == pytest.approx(0.02, rel=1e-14)
    assert sim.settings.values["time"]["dt"] == pytest.approx(1 / 64, rel=1e-14)
    sim.evolve(4 * t_unit / 64 * u.s)
    assert sim.steps == 4
    np.testing.assert_allclose(sim.pos, plain.pos, rtol=1e-9, atol=1e-9)
    q = sim.quantities
    np.testing.assert_allclose(q.pos.to_value("cm"), sim.pos * KPC_CM, rtol=1e-12)
    np.testing.assert_allclose(q.vel.to_value("cm/s"), sim.vel * v_unit, rtol=1e-12)
    np.testing.assert_allclose(q.mass.to_value("g"), sim.mass * DEFAULT.mass_g, rtol=1e-12)
    assert q.t.to_value("s") == pytest.approx(sim.t * t_unit, rel=1e-12)
    # a run in pc and Msun: the same numbers are other quantities
    small = hybridtree.Simulation(pos, vel, mass, dt=1 / 64, eps=0.02, units=PC, quiet=True)
    assert small.quantities.pos.to_value("pc") == pytest.approx(pos, rel=1e-12)
    assert small.quantities.dt.to_value("s") == pytest.approx(PC.time_s / 64, rel=1e-12)
    # the unit system named by the settings' units.length_cm and units.mass_g
    named = hybridtree.Simulation(pos * u.pc, vel, mass, dt=1 / 64, length_cm=PC.length_cm,
                                  settings={"units.mass_g": PC.mass_g}, quiet=True)
    np.testing.assert_allclose(named.pos, pos, rtol=1e-12)
    assert named.quantities.mass.to_value("g") == pytest.approx(mass * MSUN_G, rel=1e-12)


@pytest.mark.parametrize("call, needle", [
    (lambda p, v, m: accelerations(p, m * u.km, 0.05), "accelerations(mass): km is not a mass"),
    (lambda p, v, m: accelerations(p * u.s, m, 0.05), "accelerations(pos): s is not a length"),
    (lambda p, v, m: hybridtree.Simulation(p, v, m, eps=1 * u.Msun, quiet=True),
     "Simulation(eps): solMass is not a length"),
    (lambda p, v, m: hybridtree.Simulation(p, v * u.kpc, m, quiet=True),
     "Simulation(vel): kpc is not a velocity"),
    (lambda p, v, m: hybridtree.Simulation(p, v, m, settings={"gravity.theta": 0.5 * u.kpc},
                                           quiet=True), "gravity.theta takes no units"),
], ids=["mass_km", "pos_s", "eps_msun", "vel_kpc", "theta_kpc"])
def test_a_wrong_dimension_is_one_user_error_line(sphere, call, needle):
    with pytest.raises(UserInputError) as info:
        call(*sphere)
    assert type(info.value).__name__ == "QuantityError"
    assert isinstance(info.value, HybridtreeError) and isinstance(info.value, ValueError)
    text = str(info.value)
    assert needle in text and "\n" not in text, text


def test_ics_helpers_take_lengths_as_quantities():
    from hybridtree.ics import cold_sphere
    ref = cold_sphere(500, seed=2, radius=3.0)
    for radius, units in ((3 * u.kpc, None), (3000 * u.pc, None),
                          (3 * u.Mpc, Units(KPC_CM * 1e3, 1.0))):     # 3 Mpc in Mpc units
        got = cold_sphere(500, seed=2, radius=radius, units=units)
        np.testing.assert_allclose(got[0], ref[0], rtol=1e-12)
    with pytest.raises(UserInputError, match=r"cold_sphere\(radius\): solMass is not a length"):
        cold_sphere(500, radius=1 * u.Msun)


def test_a_cosmological_sphere_takes_its_lengths_in_its_cosmology_s_units():
    pytest.importorskip("colossus")
    from hybridtree.cosmo.background import Cosmology
    from hybridtree.ics import cosmo_sphere
    cosmo = Cosmology(0.3, 0.7, 0.045, 0.7, 0.8, 0.96, Units(1e3 * KPC_CM, 1e10 * MSUN_G))
    ref = cosmo_sphere(16, 40.0, 15.0, 0.02, cosmo, seed=1)          # Mpc
    got = cosmo_sphere(16, 40 * u.Mpc, (15 * u.Mpc).to(u.kpc), 0.02, cosmo, seed=1)
    np.testing.assert_array_equal(got[3], ref[3])
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-12, atol=1e-12 * 40)
