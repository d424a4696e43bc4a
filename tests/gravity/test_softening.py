"""The spline softening (GADGET's cubic spline, hybridtree.gravity.softening and
cl/softening.cl): its float64 form against its own definition, every force kernel
against a float64 direct sum with it, the hybrid split, and the refusals."""

import numpy as np
import pytest

import hybridtree.gravity as gravity
from hybridtree.config.settings import ConfigError, load_config
from hybridtree.gravity.api import direct_reference
from hybridtree.gravity.engine import ForceEngine, GravitySettings
from hybridtree.gravity.knobs import build_where
from hybridtree.gravity.softening import SPLINE_H, pair_factors
from hybridtree.gravity.splitting import Changeover
from hybridtree.gravity.walk import tree_forces
from tests.helpers import ROOT

EPS = 0.05


def _rel(a, b):
    return np.linalg.norm(a - b, axis=1) / np.linalg.norm(b, axis=1)


@pytest.fixture(scope="module")
def cluster():
    """2000 particles of a Gaussian clump: many pairs closer than h = 2.8 eps."""
    rng = np.random.default_rng(1)
    pos = rng.normal(0.0, 1.0, (2000, 3))
    mass = rng.random(2000) / 1000
    return pos, mass, *direct_reference(pos, mass, EPS, softening="spline")


def test_the_spline_is_its_potentials_gradient_and_newtonian_beyond_h():
    """f = -(dg/dr) / r everywhere (central differences), g and f continuous at u = 1/2
    and 1, exactly 1/r and 1/r^3 from h = 2.8 eps on, and g(0) = 1/eps (Plummer's)."""
    h = SPLINE_H * EPS
    r = np.linspace(0.01, 1.6, 400) * h
    dr = 1e-6 * h
    g_hi, _ = pair_factors((r + dr) ** 2, EPS, "spline")
    g_lo, _ = pair_factors((r - dr) ** 2, EPS, "spline")
    g, f = pair_factors(r ** 2, EPS, "spline")
    assert np.allclose(-(g_hi - g_lo) / (2 * dr) / r, f, rtol=1e-6)
    for u in (0.5, 1.0):
        a, b = pair_factors(np.array([(u * h * (1 - 1e-12)) ** 2, (u * h * (1 + 1e-12)) ** 2]),
                            EPS, "spline")
        assert a[0] == pytest.approx(a[1], rel=1e-9) and b[0] == pytest.approx(b[1], rel=1e-9)
    far = r >= h
    assert np.allclose(g[far], 1 / r[far], rtol=1e-14) and np.allclose(f[far], r[far] ** -3)
    assert pair_factors(np.zeros(1), EPS, "spline")[0][0] * EPS == pytest.approx(1.0)
    _, pf = pair_factors(r ** 2, EPS)
    assert np.all(f[r > 0.9 * h] > pf[r > 0.9 * h])       # harder than Plummer out there


@pytest.mark.parametrize("options", [None, {"KERNEL": "tree_walk_simd", "VEC": 8},
                                     {"KERNEL": "tree_walk"}, {"KERNEL": "walk_lists"}])
def test_every_walk_kernel_takes_the_spline(runtime, cluster, options):
    """Cells opened nearly to the leaves (θ = 0.2): forces and potentials as the float64
    spline sum (measured on the CPU device: median 9.5e-6, largest 2e-4)."""
    pos, mass, acc, pot = cluster
    tree = build_where(runtime, "device" if runtime.has_fp64 else "host", pos, mass, 0.2, 16,
                       "monopole")
    a, p, *_ = tree_forces(runtime, tree, EPS, 64, options={**(options or {}), "SOFTENING": 2})
    err = _rel(a, acc)
    assert np.median(err) < 3e-5 and err.max() < 2e-3, (np.median(err), err.max())
    assert np.median(np.abs(p - pot) / np.abs(pot)) < 1e-5
    plummer = _rel(tree_forces(runtime, tree, EPS, 64, options=options)[0], acc)
    assert np.median(plummer) > 30 * np.median(err)      # the define did take effect


def test_the_direct_kernel_and_the_public_call_take_the_spline(runtime, cluster):
    pos, mass, acc, pot = cluster
    d = gravity.accelerations(pos, mass, EPS, method="direct", softening="spline")
    assert np.median(_rel(d.acc, acc)) < 1e-6 and _rel(d.acc, acc).max() < 2e-5
    assert np.median(np.abs(d.pot - pot) / np.abs(pot)) < 1e-6
    t = gravity.accelerations(pos, mass, EPS, softening="spline")      # the defaults
    assert np.median(_rel(t.acc, acc)) < 2e-3
    r = gravity.accelerations(pos, mass, EPS, softening="spline", opening="relative")
    assert np.median(_rel(r.acc, acc)) < 2e-3


def test_the_hybrid_split_takes_the_spline(runtime, cluster):
    """Hard + soft parts of the hybrid tree's changeover sum to the spline force."""
    pos, mass, acc, _ = cluster
    g = GravitySettings(eps=EPS, theta=0.2, multipole="monopole", softening="spline",
                        changeover=Changeover(0.05, 0.4), remove_net_force=False)
    parts = ForceEngine(g, runtime).sink_forces(pos, mass)
    err = _rel(parts["hard"].acc + parts["soft"].acc, acc)
    assert np.median(err) < 3e-5, np.median(err)


def test_the_spline_is_refused_where_it_cannot_run(tmp_path):
    pos = np.random.default_rng(0).random((50, 3))
    with pytest.raises(ValueError, match="eps > 0"):
        gravity.accelerations(pos, 1.0, 0.0, softening="spline")
    with pytest.raises(ValueError, match="monopole"):
        gravity.accelerations(pos, 1.0, 0.1, softening="spline", multipole="quadrupole")
    with pytest.raises(ValueError, match="softening"):
        gravity.accelerations(pos, 1.0, 0.1, softening="gaussian")
    cfg = ROOT / "configs" / "plummer_small.toml"
    with pytest.raises(ConfigError, match="spline"):
        load_config(cfg, {"gravity.softening": "spline", "gravity.eps": 0.0})
    with pytest.raises(ConfigError, match="spline"):
        load_config(cfg, {"gravity.softening": "spline", "gravity.multipole": "quadrupole"})
    assert load_config(cfg, {"gravity.softening": "spline"}).gravity.softening == "spline"


def test_a_run_takes_gravity_softening(runtime):
    """gravity.softening reaches a run's forces: the first forces of a direct-summation
    run are the float64 spline sum's."""
    import hybridtree
    cfg = ROOT / "configs" / "plummer_small.toml"
    over = {"ics.n": 500, "gravity.method": "direct", "gravity.softening": "spline",
            "gravity.eps": EPS}
    with hybridtree.Simulation.from_config(cfg, over, quiet=True) as sim:
        sim.step(0)
        p = sim.particles()
    acc, _ = direct_reference(p.pos, p.mass, EPS, softening="spline")
    assert np.median(_rel(p.acc, acc)) < 1e-5, np.median(_rel(p.acc, acc))


def test_treepm_short_range_takes_the_spline(runtime):
    """In a periodic box the spline changes the pairs within h = 2.8 eps, far inside r_s,
    as it does without the box: the difference spline - Plummer of a compact clump's
    TreePM forces is the open clump's (the short-range factor is 1 - 1e-3 there; measured:
    the difference is 4.9 % of the force, the two differences agree to 3e-3 median)."""
    rng = np.random.default_rng(2)
    pos = 0.5 + rng.normal(0.0, 0.01, (500, 3))
    mass = np.full(500, 1.0 / 500)
    eps, kw = 0.002, dict(theta=0.2, multipole="monopole")
    box = [gravity.accelerations(pos, mass, eps, box=1.0, pm_grid=32, softening=s, **kw).acc
           for s in ("spline", "plummer")]
    open_ = [gravity.accelerations(pos, mass, eps, softening=s, **kw).acc
             for s in ("spline", "plummer")]
    d_box, d_open = box[0] - box[1], open_[0] - open_[1]
    assert np.median(np.linalg.norm(d_open, axis=1) / np.linalg.norm(open_[1], axis=1)) > 1e-2
    assert np.median(_rel(d_box, d_open)) < 1e-2, np.median(_rel(d_box, d_open))
