"""Hybrid tree: changeover functions, force and potential split, nested integrator."""

import numpy as np
import pytest
from tests.helpers import same_counts_but_at_the_border

from hybridtree.config import validate
from hybridtree.analysis.diagnostics import read_diagnostics
from hybridtree.gravity import accelerations, split_accelerations
from hybridtree.ics import plummer
from hybridtree.gravity.engine import GravitySettings
from hybridtree.device.choice import get_runtime
from hybridtree.run.driver import run
from hybridtree.gravity.splitting import Changeover, soft_potential
from hybridtree.gravity.tree import build_tree
from hybridtree.gravity.walk import tree_forces

from tests.helpers import stepping

SHAPES = ("dll", "poly7")


@pytest.mark.parametrize("shape", SHAPES)
def test_changeover_is_continuous_monotone_and_hits_0_and_1(shape):
    co = Changeover(0.1, 0.5, shape)
    r = np.linspace(0.0, 0.7, 70001)
    w = co.w(r)
    assert np.all(w[r <= 0.1] == 0.0) and np.all(w[r >= 0.5] == 1.0)
    assert np.all(np.diff(w) >= -1e-14)                      # monotone (to float64 rounding)
    assert np.abs(np.diff(w)).max() < 1e-3                   # no jumps at this resolution
    assert co.w(0.3) == pytest.approx(0.5)                    # both are symmetric about y = 1/2


def one_sided_derivatives(co, end, h):
    s = 1.0 if end == 0.0 else -1.0
    f = [co.w(end + s * k * h) for k in range(4)]
    return (abs(f[1] - f[0]) / h, abs(f[2] - 2 * f[1] + f[0]) / h ** 2,
            abs(f[3] - 3 * f[2] + 3 * f[1] - f[0]) / h ** 3)


def test_poly7_has_three_vanishing_derivatives_at_both_ends():
    co = Changeover(0.0, 1.0, "poly7")
    for end in (0.0, 1.0):
        # W ~ 35 y^4 near the ends: the k-th difference quotient over a step h goes to
        # zero like h^(4-k); shrinking h tenfold must shrink all three
        coarse = one_sided_derivatives(co, end, 1e-2)
        fine = one_sided_derivatives(co, end, 1e-3)
        for k, (a, b) in enumerate(zip(coarse, fine), start=1):
            assert b < 0.15 * a and b < [1e-6, 1e-3, 2.0][k - 1], (end, k, a, b)
    # "dll" is only C1: its second derivative at the ends does not vanish
    dll = Changeover(0.0, 1.0, "dll")
    assert one_sided_derivatives(dll, 0.0, 1e-3)[1] > 1.0
    assert one_sided_derivatives(dll, 0.0, 1e-3)[0] < 1e-2


@pytest.mark.parametrize("shape", SHAPES)
def test_soft_potential_is_the_integral_of_the_soft_force(shape):
    co, m, eps = Changeover(0.05, 0.4, shape), 2.0, 0.03
    r = np.linspace(0.01, 0.6, 300)
    phi = soft_potential(r, m, eps, co)
    h = 1e-5
    dphi = (soft_potential(r + h, m, eps, co) - soft_potential(r - h, m, eps, co)) / (2 * h)
    force = m * r / (r * r + eps * eps) ** 1.5
    assert np.allclose(dphi, co.w(r) * force, rtol=1e-6, atol=1e-9 * force.max())
    far = r >= 0.4
    assert np.allclose(phi[far], -m / np.sqrt(r[far] ** 2 + eps ** 2), rtol=1e-12)
    # below r_in the soft potential is flat: the pair is entirely hard there
    assert np.ptp(phi[r <= 0.05]) < 1e-12


@pytest.fixture(scope="module")
def sphere():
    pos, _, m = plummer(20_000, seed=8)
    return pos, m


@pytest.mark.parametrize("kernel", ["tree_walk_simd", "tree_walk"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("multipole", ["monopole", "quadrupole"])
def test_hard_plus_soft_is_the_full_tree_force(sphere, kernel, shape, multipole):
    pos, m = sphere
    rt = get_runtime()
    tree = build_tree(pos, m, theta=0.5, n_leaf=16, multipole=multipole)
    opts = {"KERNEL": kernel} | ({"VEC": 8} if kernel == "tree_walk_simd" else {})
    co = Changeover(0.01, 0.1, shape)
    full = tree_forces(rt, tree, 0.01, n_group=64, options=opts)
    soft = tree_forces(rt, tree, 0.01, n_group=64, options=opts, split=co, part="soft")
    hard = tree_forces(rt, tree, 0.01, n_group=64, options=opts, split=co, part="hard")
    total = hard[0] + soft[0]
    err = np.linalg.norm(total - full[0], axis=1) / np.linalg.norm(full[0], axis=1)
    assert err.max() < 2e-5, err.max()                 # float32 rounding of the sums
    # the soft walk returns the full potential; the two are different programs, so under
    # fast math each rounds its own way (the H100 and Intel's CPU runtime differ in the
    # last bits): equal to float32 rounding, and the same walk
    assert np.allclose(soft[1], full[1], rtol=1e-5, atol=0)
    same_counts_but_at_the_border(soft[2], soft[3], full[2], full[3])
    # the hard part is a small fraction of the interactions, and not nothing
    n_hard = hard[2].sum() + hard[3].sum()
    n_full = full[2].sum() + full[3].sum()
    assert 0.02 * n_full < n_hard < 0.5 * n_full


@pytest.mark.parametrize("multipole", ["monopole", "quadrupole"])
def test_list_walk_splits_like_the_simd_walk(sphere, multipole):
    """Soft and hard parts from walk_lists (the GPU walk) equal those of the CPU walk."""
    pos, m = sphere
    rt = get_runtime()
    tree = build_tree(pos, m, theta=0.5, n_leaf=16, multipole=multipole)
    co = Changeover(0.01, 0.1, SHAPES[0])
    for part in ("soft", "hard"):
        a = tree_forces(rt, tree, 0.01, 64, options={"KERNEL": "tree_walk_simd", "VEC": 8},
                        split=co, part=part)
        for sinks_per_item in (1, 4):
            b = tree_forces(rt, tree, 0.01, 64, split=co, part=part,
                            options={"KERNEL": "walk_lists", "SINKS": sinks_per_item})
            assert np.array_equal(a[2], b[2]) and np.array_equal(a[3], b[3])
            scale = np.linalg.norm(a[0], axis=1).max()      # hard parts vanish for many sinks
            assert np.abs(a[0] - b[0]).max() < 2e-5 * scale
            if part == "soft":          # the full potential, own term taken out at the end
                assert np.allclose(a[1], b[1], rtol=1e-5)


def test_tiny_r_out_gives_the_full_force_as_soft(sphere):
    pos, m = sphere
    co = Changeover(0.0, 1e-7)
    parts = split_accelerations(pos, m, 0.01, co, ("soft", "hard", "full"))
    assert np.allclose(parts["soft"].acc, parts["full"].acc, rtol=0, atol=1e-6 * np.abs(
        parts["full"].acc).max())
    assert np.abs(parts["hard"].acc).max() < 1e-6 * np.abs(parts["full"].acc).max()
    full = accelerations(pos, m, 0.01)
    assert np.array_equal(parts["full"].acc, full.acc)


def test_n_hard_1_follows_the_plain_leapfrog():
    pos0, vel0, m = plummer(3000, seed=4)
    # the hybrid tree walks with the geometric test: the plain run is pinned to it too
    plain, s1 = stepping(pos0, vel0, m, GravitySettings(eps=0.01, opening="geometric"))
    hyb, s2 = stepping(pos0, vel0, m, GravitySettings(eps=0.01, changeover=Changeover(0.01, 0.1),
                                                       n_hard=1))
    dt = 1 / 64
    for _ in range(20):
        s1.step(plain, dt)
        s2.step(hyb, dt)
    scale = np.abs(pos0).max()
    assert np.abs(plain.pos - hyb.pos).max() < 1e-6 * scale
    assert np.abs(plain.vel - hyb.vel).max() < 1e-6 * np.abs(vel0).max()
    assert np.abs(plain.pos - pos0).max() > 1e-3 * scale       # they did move


def test_hybrid_config_is_validated():
    from hybridtree.config import ConfigError
    with pytest.raises(ConfigError, match="hybrid.r_in .* must be smaller"):
        validate({"hybrid": {"r_in": 0.2, "r_out": 0.1}})
    with pytest.raises(ConfigError, match="needs gravity.method = 'tree'"):
        validate({"hybrid": {"enabled": True}, "gravity": {"method": "direct"}})
    with pytest.raises(ConfigError, match="hybrid.changeover must be one of"):
        validate({"hybrid": {"changeover": "cubic"}})


def energy_run(tmp_path, name, dt, hybrid):
    cfg = tmp_path / f"{name}.toml"
    # r_out = 2 x the mean interparticle distance in the core: the Plummer core density
    # in Hénon units is 3/(4π a³), a = 3π/16, so n_core^(-1/3) = 0.066 at N = 3000
    cfg.write_text(f"""
[ics]
n = 3000
seed = 6
[gravity]
eps = 0.01
theta = 0.5
[hybrid]
enabled = {str(hybrid).lower()}
r_out = 0.13
r_in = 0.013
n_hard = 4
[time]
dt = {dt}
t_end = 5.0
[output]
dir = "{(tmp_path / name).as_posix()}"
snapshot_dt = 5.0
diag_every = 16
""")
    run(str(cfg), quiet=True)
    return read_diagnostics(tmp_path / name / "diagnostics.csv")


@pytest.mark.slow
def test_hybrid_energy_error_no_worse_than_twice_the_normal_tree(tmp_path):
    """The hybrid tree at 4 times the step (1/64, hard pairs substepped) ends 5 time units
    of a 3000-particle Plummer sphere with an energy error at most twice the plain tree's
    at 1/256, and with fewer hard than soft interactions.  The full 5 time units are kept:
    the energy errors oscillate (at N = 1e4 the ratio was 1.23 at t = 2.5, 0.17 at t = 5).
    N = 3000 (was 1e4: 100 CPU s, now 36): measured at t = 5 hybrid 2.2e-6, plain 1.5e-5
    (ratio 0.15), hard / soft 0.44 (1e4: 0.39 at t = 0.5; a smaller N brings it nearer
    the bound of 0.5, hence not smaller); the same run without substeps (n_hard = 1) ends
    at 3.3e-4, 22 times the plain tree's, and fails (2026-11-29, CPU device)."""
    normal = energy_run(tmp_path, "normal", 1 / 256, False)
    hybrid = energy_run(tmp_path, "hybrid", 1 / 64, True)
    assert float(normal[-1]["time"]) == float(hybrid[-1]["time"]) == 5.0
    e_n = abs(float(normal[-1]["rel_energy_error"]))
    e_h = abs(float(hybrid[-1]["rel_energy_error"]))
    assert e_h <= 2 * max(e_n, 1e-6), (e_h, e_n)
    assert float(hybrid[-1]["hard_interactions"]) < 0.5 * float(hybrid[-1]["soft_interactions"])


def test_hybrid_run_restarts_bit_for_bit(tmp_path, monkeypatch):
    from hybridtree.cli import main
    import h5py
    monkeypatch.chdir(tmp_path)
    (tmp_path / "h.toml").write_text("""
[ics]
n = 800
[hybrid]
enabled = true
r_out = 0.2
r_in = 0.02
n_hard = 3
[time]
dt = 0.03125
t_end = 0.25
[output]
dir = "full"
snapshot_dt = 0.125
""")
    assert main(["run", "h.toml", "--quiet"]) == 0
    assert main(["run", "h.toml", "--quiet", "--set", "time.t_end=0.125",
                 "--set", "output.dir=half"]) == 0
    assert main(["run", "--restart", "half/snapshot_0001.hdf5", "--quiet",
                 "--set", "time.t_end=0.25"]) == 0
    with h5py.File("full/snapshot_0002.hdf5") as a, h5py.File("half/snapshot_0002.hdf5") as b:
        for k in ("Coordinates", "Velocities", "Acceleration"):
            assert a["PartType1"][k][...].tobytes() == b["PartType1"][k][...].tobytes(), k
