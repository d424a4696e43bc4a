"""A device state of equal masses keeps the mass once (DeviceState ``uniform``: an 8-byte
buffer read as ``mass[i * mass_step]`` with ``mass_step`` 0; issue 56): every kernel reads
the same value, so steps, downloads and diagnostics give the bits of a state of a mass
per particle, 8 bytes a particle less.  A state of unequal masses keeps them per particle."""

import numpy as np
import pytest

from tests.helpers import device_state_mark, state_settings, stepping
from hybridtree.device.choice import get_runtime
from hybridtree.device.transfer import download
from hybridtree.gravity.engine import float4_part
from hybridtree.ics import plummer
from hybridtree.particles import Particles
from hybridtree.run.setup import drawn_rows
from hybridtree.config.settings import settings_from_flat
from hybridtree.state import DeviceState, make_state

pytestmark = device_state_mark()

SETTINGS = state_settings("plain", "hybrid", "relative")

FIELDS = ("pos", "vel", "acc", "pot", "mass", "ids", "types")


def same(a, b) -> None:
    for field in FIELDS:
        assert getattr(a, field).tobytes() == getattr(b, field).tobytes(), field


@pytest.mark.parametrize("float4", [False, True])
@pytest.mark.parametrize("name", list(SETTINGS))
def test_one_mass_steps_to_the_bits_of_a_mass_per_particle(name, float4):
    g = SETTINGS[name]
    pos, vel, m = plummer(1500, seed=3)
    assert np.all(m == m[0])
    four = float4_part(g, True) if float4 else None
    runs = [stepping(pos, vel, m, g, "device", pot_part=four, uniform=u) for u in (False, True)]
    (many, _), (one, _) = runs
    assert many.mass_step == 1 and one.mass_step == 0 and one.mass_value == m[0]
    for _ in range(4):
        for state, scheme in runs:
            scheme.step(state, 1 / 128)
    table = many.rt.to_device(np.arange(many.n, dtype=np.int32)[::-1].copy())
    for how in (lambda s: s.download(), lambda s: s.download((1, table)),
                lambda s: s.download_rows(7, 1200)):
        a, b = how(many), how(one)
        assert np.abs(a.acc).max() > 0 and np.all(b.mass == m[0])
        same(a, b)
    ma, mb = many.moments(), one.moments()
    for key in ma:
        assert np.asarray(ma[key]).tobytes() == np.asarray(mb[key]).tobytes(), key
    centre = np.asarray(ma["com"])
    for total in (None, 1.0):
        assert many.lagrangian_radii(centre, total_mass=total) == \
            one.lagrangian_radii(centre, total_mass=total)
    types = [np.empty(many.n) for _ in range(2)]
    for s, host in zip((many, one), types):
        download(s.rt, [(s.type_mass(1), host)])       # every particle is of type 1
    assert types[0].tobytes() == types[1].tobytes() and np.all(types[1] == m[0])
    for s in (many, one):
        mt = s.moments(s.type_mass(1))
        assert np.asarray(mt["kinetic"]).tobytes() == np.asarray(ma["kinetic"]).tobytes()


def test_one_mass_holds_8_bytes_a_particle_less():
    rt = get_runtime()
    n = 1000
    pos, vel, m = plummer(n, seed=2)
    p = Particles(pos, vel, m, np.arange(1, n + 1, dtype=np.uint64))
    live, states = [], []
    for uniform in (False, True):
        before = rt.memory.live["state"]
        states.append(DeviceState(rt, p, ("full",), pot_part="full", uniform=uniform))
        live.append(rt.memory.live["state"] - before)
        assert live[-1] == states[-1].nbytes + 32
    assert live[0] - live[1] == 8 * n - 8


def test_unequal_masses_keep_a_mass_per_particle():
    rt = get_runtime()
    n = 500
    pos, vel, m = plummer(n, seed=4)
    m = m.copy()
    m[17] = np.nextafter(m[17], 1.0)            # one bit differs
    p = Particles(pos, vel, m, np.arange(1, n + 1, dtype=np.uint64))
    for pot_part in (None, "full"):
        s = DeviceState(rt, p, ("full",), pot_part=pot_part, uniform=True)
        assert s.mass_step == 1
        assert s.download().mass.tobytes() == m.tobytes()
        assert s.download_rows(10, 20).mass.tobytes() == m[10:20].tobytes()


def test_a_drawn_sphere_keeps_its_mass_once_with_the_same_bits():
    s = settings_from_flat({"ics.kind": "plummer", "ics.n": 3000, "ics.seed": 5,
                            "gravity.eps": 0.01})
    rt = get_runtime()
    rows = drawn_rows(s)
    assert rows.uniform_mass == 1.0 / 3000
    one = make_state(rows, ("full",), "device", rt, uniform=True)
    many = make_state(drawn_rows(s), ("full",), "device", rt)
    assert one.mass_step == 0 and many.mass_step == 1
    same(many.download(), one.download())
    same(many.download_rows(100, 2100), one.download_rows(100, 2100))
    whole = rows.particles()
    assert one.download().mass.tobytes() == whole.mass.tobytes()


def test_a_run_of_one_process_keeps_a_spheres_mass_once():
    """The stepper of one process (no box) keeps a drawn sphere's mass once, and the
    state steps as before (the run's other checks: tools/same_snapshots.py)."""
    from hybridtree.gravity.settings import GravitySettings as Settings
    from hybridtree.integrate.stepper import SerialStepper
    s = settings_from_flat({"ics.kind": "plummer", "ics.n": 2000, "ics.seed": 5,
                            "gravity.eps": 0.01})
    rt = get_runtime()
    g = Settings.from_settings(s.gravity, s.hybrid).settled(rt.info.kind)
    stepper = SerialStepper(g, drawn_rows(s), rt)
    assert stepper.state.mass_step == 0 and stepper.state.mass_value == 1 / 2000
    assert stepper.state.download().mass.tobytes() == np.full(2000, 1 / 2000).tobytes()
