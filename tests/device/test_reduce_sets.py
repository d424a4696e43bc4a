"""Several sets' sums in one level chain and one multisection
(hybridtree.device.reduce_sets, issue 57): each type's moments and Lagrangian radii, and
the whole set's radii, are the bits of the one-set-at-a-time sums of the type's masses
(Reducer.type_mass) and of their numpy twins; and a report of three types runs one
multisection, not one per set."""

import numpy as np
import pytest

from hybridtree.device import reduce as reduce_mod
from hybridtree.device.choice import get_runtime
from hybridtree.device.multisection import PASSES
from hybridtree.device.reduce import BLOCK, host_lagrangian_radii, host_moments
from hybridtree.gravity.engine import GravitySettings
from hybridtree.ics import plummer
from hybridtree.integrate.stepper import SerialStepper, Stepper
from hybridtree.particles import Particles

from .test_reduce import dev, red  # noqa: F401  (red: the module's reducer fixture)

N = 5000                        # 79 blocks: levels 1 and 2 run
TYPES = [1, 2, 4, 3]            # 3 has no particles


def same_bits(a, b) -> bool:
    """Bit identity (np.array_equal would let -0.0 equal +0.0; NaN equal to itself)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return a.shape == b.shape and np.array_equal(a.view(np.uint64), b.view(np.uint64))


@pytest.fixture(scope="module")
def cloud():
    """Three types in no order, of different masses and places (each its own centre of
    mass), with signed velocities and potentials."""
    pos, vel, mass = plummer(N, seed=21)
    rng = np.random.default_rng(5)
    types = rng.choice([1, 2, 4], size=N, p=[0.5, 0.3, 0.2]).astype(np.uint8)
    mass = mass * rng.uniform(0.3, 3.0, N)
    pos = pos + np.select([types[:, None] == 2, types[:, None] == 4],
                          [[0.5, -0.2, 0.1], [-1.0, 0.3, 0.0]], 0.0)
    pot = -rng.uniform(0.5, 3.0, N)
    return pos, vel, mass, types, pot


@pytest.mark.parametrize("uniform,each,zeros", [(False, False, False), (True, False, False),
                                                 (False, True, False), (False, False, True),
                                                 (False, True, True)])
def test_sets_equal_one_set_at_a_time_and_the_twins(red, cloud, uniform, each, zeros):
    """``each``: the GPUs' enclosed masses (a work-item per block and set), else the
    CPUs' (per block); ``zeros``: masses of +0.0 and -0.0 among them, a block of -0.0
    alone (sums of zeros whose signs the sets' skipped terms may change)."""
    pos, vel, mass, types, pot = cloud
    if uniform:                 # one mass for all (mass_step 0, DeviceState's uniform)
        mass = np.full(N, mass[0])
    if zeros:
        mass = mass.copy()
        mass[::7], mass[3::11], mass[128:192] = 0.0, -0.0, -0.0
    step = 0 if uniform else 1
    d_pos, d_vel, d_types, d_pot = dev(red, pos), dev(red, vel), dev(red, types), dev(red, pot)
    d_mass = dev(red, mass[:1] if uniform else mass)
    moms = red.set_moments(N, d_types, TYPES, d_pos, d_vel, d_mass, d_pot, mass_step=step)
    centres = [m["com"] for m in moms] + [np.array([0.01, -0.02, 0.03])]
    totals = [m["mass"] for m in moms] + [float(mass.sum())]
    radii = red.set_radii(N, d_types, TYPES + [None], d_pos, d_mass, centres, totals,
                          mass_step=step, each=each)
    for i, t in enumerate(TYPES):
        tm = red.type_mass(N, d_types, t, d_mass, step)
        one = red.moments(N, d_pos, d_vel, tm, d_pot)
        masked = np.where(types == t, mass, 0.0)
        twin = host_moments(pos, vel, masked, pot)
        for key in one:
            assert same_bits(moms[i][key], one[key]) and same_bits(one[key], twin[key]), (t, key)
        if t == 3:
            assert moms[i]["mass"] == 0.0 and all(np.isnan(radii[i]))
            continue
        one_r = red.lagrangian_radii(N, d_pos, red.type_mass(N, d_types, t, d_mass, step),
                                     centres[i], total_mass=totals[i])
        assert radii[i] == one_r == host_lagrangian_radii(pos, masked, centres[i],
                                                          total_mass=totals[i]), t
    whole = red.lagrangian_radii(N, d_pos, d_mass, centres[-1], total_mass=totals[-1],
                                 mass_step=step)
    assert radii[-1] == whole == host_lagrangian_radii(pos, mass, centres[-1],
                                                       total_mass=totals[-1])


def test_float4_potentials_and_empty(red, cloud):
    pos, vel, mass, types, pot = cloud
    pot4 = np.zeros((N, 4), np.float32)
    pot4[:, 3] = pot
    args = (dev(red, pos), dev(red, vel), dev(red, mass))
    moms = red.set_moments(N, dev(red, types), TYPES[:3], *args, dev(red, pot4), pot4=True)
    for m, t in zip(moms, TYPES):
        twin = host_moments(pos, vel, np.where(types == t, mass, 0.0),
                            pot4[:, 3].astype(np.float64))
        assert all(same_bits(m[k], twin[k]) for k in twin), t
    e = red.rt.empty(8)
    assert red.set_moments(0, e, [1, None], e, e, e)[1]["mass"] == 0.0
    assert all(np.isnan(red.set_radii(0, e, [1, None], e, e, np.zeros((2, 3)), [1.0, 1.0])[1]))
    with pytest.raises(ValueError):
        red.set_moments(N, e, list(range(9)), e, e, e)


def _stepper():
    pos, vel, mass = plummer(N, seed=7)
    types = np.random.default_rng(3).choice([1, 2, 4], size=N, p=[0.6, 0.3, 0.1])
    mass = mass * np.select([types == 1, types == 2], [1.0, 0.5], 3.0)
    p = Particles(pos, vel + 0.1, mass, np.arange(1, N + 1, dtype=np.uint64),
                  types=types.astype(np.uint8))
    stepper = SerialStepper(GravitySettings(eps=0.01), p, get_runtime())
    stepper.start(False)
    return stepper, np.bincount(types, minlength=6)


def test_a_report_of_three_types_runs_one_multisection(red, monkeypatch):
    """A device state's report: the types' rows and the whole set's radii the bits of the
    one-set-at-a-time path (the base Stepper's, which many processes take), with the
    enclosed masses of one multisection (PASSES passes) for all sets, not one per set."""
    monkeypatch.setenv("HYBRIDTREE_STATE", "device")
    stepper, counts = _stepper()
    names = []
    real = reduce_mod.launch

    def counting(rt, file, name, *args, **kw):
        names.append(name)
        return real(rt, file, name, *args, **kw)

    monkeypatch.setattr(reduce_mod, "launch", counting)
    stepper.type_sums([1], counts)
    one = len(names)
    names.clear()
    rows = stepper.type_sums([1, 2, 4], counts)
    assert sum(n.startswith("enclosed") for n in names) == PASSES
    assert len(names) < 1.2 * one, (len(names), one)
    whole = stepper.moments()
    names.clear()
    radii, rows4 = stepper.report_sums([1, 2, 4, 3], counts, (whole["com"], whole["mass"]))
    assert sum(n.startswith("enclosed") for n in names) == PASSES
    assert rows4[:3] == rows
    monkeypatch.setattr(reduce_mod, "launch", real)
    base_moms, base_radii = Stepper._set_sums(stepper, [1, 2, 4, 3],
                                              (whole["com"], whole["mass"]))
    assert radii == base_radii[-1] == stepper.lagrangian_radii(whole["com"], whole["mass"])
    for row, mom, r in zip(rows4, base_moms, base_radii):
        assert [row["r10"], row["r50"], row["r90"]] == r or all(np.isnan(r))
        assert row["mass"] == mom["mass"] and row["kinetic"] == mom["kinetic"]
        assert row["potential"] == mom["potential"]
        assert [row["lx"], row["ly"], row["lz"]] == list(mom["angular_momentum"])


def test_the_sets_keep_no_level_rows(red, cloud):
    """The sets' level-1 rows (8 K / BLOCK bytes a particle, K = S times a set's sums: 10.5
    for four sets' radii) are made for the call and freed after it: what a report leaves
    kept is the next levels' rows, BLOCK times fewer, and its small buffers."""
    ledger = red.rt.memory
    if ledger is None:
        pytest.skip("no ledger on a simulator")
    pos, vel, mass, types = (np.concatenate([a] * 4) for a in cloud[:4])   # the most yet
    n = len(mass)
    d_pos, d_vel, d_mass, d_types = dev(red, pos), dev(red, vel), dev(red, mass), dev(red, types)
    sets = [1, 2, 4, None]
    red.rt.queue.finish()
    before = ledger.live["reductions"]
    for each in (False, True):
        red.set_moments(n, d_types, sets[:3], d_pos, d_vel, d_mass)
        red.set_radii(n, d_types, sets, d_pos, d_mass, np.zeros((4, 3)), [1.0] * 4, each=each)
    red.rt.queue.finish()
    assert ledger.live["reductions"] - before <= 8 * 84 * n / BLOCK**2 * 1.5 + 4096
