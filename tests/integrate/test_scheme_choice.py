"""Every scheme is chosen in one place (:func:`hybridtree.integrate.choose.scheme_for`),
the comoving ones of a periodic box included, and the box they wrap into is the one the
engine's forces are periodic in (``engine.g.periodic``), not a second copy.

References: the scheme a run assembles (:func:`hybridtree.run.assemble.make_stepper`)
against the one chosen by hand; a one-process stepper told the comoving steps against
the comoving scheme built directly, stepped on the same particles (the same bits)."""

import numpy as np
import pytest

from hybridtree.config.units import Units
from hybridtree.cosmo.background import Cosmology
from hybridtree.gravity.engine import ForceEngine, GravitySettings
from hybridtree.gravity.periodic import Periodic
from hybridtree.gravity.splitting import Changeover
from hybridtree.integrate.comoving import ComovingLeapfrog
from hybridtree.integrate.comoving_block import ComovingBlock
from hybridtree.integrate.schedule import Cosmic
from hybridtree.integrate.choose import Comoving, scheme_for
from hybridtree.integrate.schemes import BlockLeapfrog, BlockSettings, NestedLeapfrog
from hybridtree.integrate.stepper import SerialStepper
from hybridtree.particles import Particles
from hybridtree.state import make_state

UNITS = Units(3.0856775814913673e24, 1.98841e43)        # 1 Mpc, 1e10 Msun
BOX = 142.85714285714286                                  # 100 Mpc/h


def _sched(steps: int = 2) -> Cosmic:
    bg = Cosmology(omega_m=0.3, omega_l=0.7, omega_b=0.045, h=0.7, sigma8=0.8, n_s=0.96,
                   units=UNITS)
    return Cosmic(bg, 49.0, 30.0, steps, "log_a", [], comoving=True)


def _box_settings(split: bool) -> GravitySettings:
    return GravitySettings(eps=BOX / 4 / 30, theta=0.5, opening="geometric",
                           periodic=Periodic(BOX, 32), time_split=split)


def test_scheme_for_chooses_every_scheme(runtime):
    plain = GravitySettings(eps=0.01)
    s = scheme_for(plain, ForceEngine(plain, runtime))
    assert type(s) is NestedLeapfrog and s.parts == ("full",)
    hybrid = GravitySettings(eps=0.01, changeover=Changeover(0.01, 0.1), n_hard=4)
    s = scheme_for(hybrid, ForceEngine(hybrid, runtime), external=0.5)
    assert type(s) is NestedLeapfrog and s.parts == ("hard", "soft")
    assert (s.n_inner, s.external) == (4, 0.5)
    s = scheme_for(plain, ForceEngine(plain, runtime), block=BlockSettings(0.1, 5))
    assert type(s) is BlockLeapfrog and s.block.max_bin == 5
    with pytest.raises(ValueError, match="force split"):
        scheme_for(hybrid, ForceEngine(hybrid, runtime), block=BlockSettings())

    sched = _sched()
    shared = _box_settings(split=False)
    s = scheme_for(shared, ForceEngine(shared, runtime), comoving=Comoving(sched, 1, 1, False))
    assert type(s) is ComovingLeapfrog
    assert (s.box, s.k, s.n_short, s.wrap, s.sched) == (BOX, 1, 1, False, sched)
    split = _box_settings(split=True)
    s = scheme_for(split, ForceEngine(split, runtime), comoving=Comoving(sched, 0, 3))
    assert type(s) is ComovingLeapfrog and (s.n_short, s.parts) == (3, ("short", "long"))
    s = scheme_for(split, ForceEngine(split, runtime), block=BlockSettings(0.2, 3),
                   comoving=Comoving(sched))
    assert type(s) is ComovingBlock and s.box == BOX and s.block.max_bin == 3


def test_comoving_steps_refuse_what_has_no_box(runtime):
    """The box is the engine's: none there, none to wrap into; and comoving coordinates
    have no Λ term to kick with."""
    sched = _sched()
    plain = GravitySettings(eps=0.01)
    with pytest.raises(ValueError, match="periodic box"):
        scheme_for(plain, ForceEngine(plain, runtime), comoving=Comoving(sched))
    g = _box_settings(split=False)
    with pytest.raises(ValueError, match="external"):
        scheme_for(g, ForceEngine(g, runtime), external=1.0, comoving=Comoving(sched))


def test_a_stepper_told_the_comoving_steps_takes_them(runtime):
    """SerialStepper(comoving=...) against ComovingLeapfrog built by hand on the same
    particles: the same bits after two steps."""
    n = 4
    q = (np.indices((n, n, n)).reshape(3, -1).T + 0.5) * (BOX / n)
    rng = np.random.default_rng(5)
    pos = np.mod(q + rng.normal(0.0, 2.0, q.shape), BOX)
    mass = np.full(n ** 3, 3.0)
    ids = np.arange(1, n ** 3 + 1, dtype=np.uint64)
    g = _box_settings(split=False)
    stepper = SerialStepper(g, Particles(pos, np.zeros((n ** 3, 3)), mass, ids), runtime,
                            comoving=Comoving(_sched()))
    assert type(stepper.scheme) is ComovingLeapfrog
    engine = ForceEngine(g, runtime)
    state = make_state(Particles(pos, np.zeros((n ** 3, 3)), mass, ids), g.parts,
                       stepper.state.backend, runtime)
    direct = ComovingLeapfrog(engine, _sched().cosmo, _sched(), 0)
    stepper.start(False)
    direct.start(state)
    for _ in range(2):
        stepper.step(0.0)
        direct.step(state, 0.0)
    got, want = stepper.particles(), state.download()
    assert np.array_equal(got.pos, want.pos) and np.array_equal(got.vel, want.vel)
    assert not np.array_equal(got.pos, pos)         # it moved
    assert ((got.pos >= 0) & (got.pos < BOX)).all()  # and stayed in the engine's box
