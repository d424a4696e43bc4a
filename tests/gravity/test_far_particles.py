"""Far particles and extreme scales (issue 54, item 3): finite forces, compared with the
float64 direct sum, wherever the float32 kernels represent the particles; one clear
error, naming the particle and the range, where they do not
(hybridtree/gravity/tree/limits.py)."""

import numpy as np
import pytest
from tests.helpers import rel_err

from hybridtree.errors import HybridtreeError
from hybridtree.gravity import accelerations, direct_reference
from hybridtree.gravity.tree.limits import RESOLUTION_BITS, RangeError, largest_span


def cluster(n: int = 400, seed: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, 3))


def ball(n: int, radius: float, seed: int = 5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    return x * (radius * rng.uniform(size=n) ** (1 / 3) / np.linalg.norm(x, axis=1))[:, None]


@pytest.mark.parametrize("method", ["tree", "direct"])
@pytest.mark.parametrize("far", [1e14, 1e20, 1e300])
def test_a_particle_out_of_range_is_refused_by_index_and_range(method, far):
    pos = cluster()
    pos[17] = [far, 0.0, 0.0]
    with pytest.raises(RangeError, match=r"particle 17 at \(1e\+\d+, 0, 0\) is too far .* "
                                         r"span of at most [0-9.e+]+ here") as info:
        accelerations(pos, np.full(len(pos), 1 / len(pos)), eps=0.01, method=method)
    assert isinstance(info.value, HybridtreeError) and isinstance(info.value, ValueError)
    assert "\n" not in str(info.value)


def test_a_far_sink_is_refused_as_a_sink():
    pos = cluster(100)
    sinks = np.array([[0.0, 0.0, 0.0], [0.0, 3e15, 0.0]])
    with pytest.raises(RangeError, match=r"sink 1 at \(0, 3e\+15, 0\)"):
        accelerations(pos, np.ones(100), eps=0.01, sinks=sinks)


@pytest.mark.parametrize("multipole", ["monopole", "quadrupole"])
def test_a_far_particle_within_range_gets_the_direct_sums_forces(multipole):
    """The largest span allowed with eps = 0.01 (2^41 eps): every force finite and as
    the float64 direct sum's, the far particle's too."""
    pos = cluster()
    allowed, _ = largest_span(1.0, len(pos), 0.01)
    side = 2.0**np.floor(np.log2(2.0**RESOLUTION_BITS * 0.01))    # the cube's, 2^34
    assert allowed == pytest.approx(side / (1 + 1e-6))
    pos[17] = [pos[:, 0].min() + 0.999 * allowed, 0.0, 0.0]
    m = np.full(len(pos), 1 / len(pos))
    f = accelerations(pos, m, eps=0.01, multipole=multipole)
    acc, pot = direct_reference(pos, m, eps=0.01)
    assert np.isfinite(f.acc).all() and np.isfinite(f.pot).all()
    e = rel_err(f.acc, acc)
    assert e.max() < 1e-3 and e[17] < 1e-5
    assert np.allclose(f.pot, pot, rtol=1e-4)


def test_quadrupole_forces_are_finite_and_accurate_far_from_unit_scales():
    """Uniform spheres of radius 1e8 and mass 1e10, and of radius 1e9 and mass 1 (in
    range): their quadrupole forces are those of the same sphere at radius 1 and mass 1,
    scaled.  The kernels formed d.Q.d ~ M R^4 (1e42 for the first: inf in float32) and
    multiplied it by r^-5 r^-2: non-finite forces for nearly every particle; for the
    second r^-5 underflowed and the quadrupole terms were lost (monopole accuracy, 10 x
    the error)."""
    n = 2000
    unit = ball(n, 1.0)
    m = np.full(n, 1.0 / n)
    ref, ref_pot = direct_reference(unit, m, eps=0.01)
    small = accelerations(unit, m, eps=0.01, multipole="quadrupole", theta=0.6)
    e_small = np.median(rel_err(small.acc, ref))
    p_small = np.median(np.abs(small.pot / ref_pot - 1))
    for big, mass in ((1e8, 1e10), (1e9, 1.0)):
        f = accelerations(unit * big, m * mass, eps=0.01 * big, multipole="quadrupole",
                          theta=0.6)
        assert np.isfinite(f.acc).all() and np.isfinite(f.pot).all()
        e = np.median(rel_err(f.acc * big**2 / mass, ref))
        p = np.median(np.abs(f.pot * big / mass / ref_pot - 1))
        assert e < 1.5 * e_small and p < 1.5 * p_small, (big, e, e_small, p, p_small)


def test_the_direct_method_takes_no_resolution_bound():
    """1e11 from a unit cluster is beyond the tree's 2^41 eps but within the direct
    kernel's range: its forces are the float64 sum's, the far particle's too."""
    pos = cluster()
    pos[17] = [1e11, 0.0, 0.0]
    m = np.full(len(pos), 1 / len(pos))
    f = accelerations(pos, m, eps=0.01, method="direct")
    acc, _ = direct_reference(pos, m, eps=0.01)
    e = rel_err(f.acc, acc)
    assert e.max() < 1e-4
    with pytest.raises(RangeError, match="2\\^41 eps"):
        accelerations(pos, m, eps=0.01, method="tree")


def test_a_pull_that_underflows_float32_is_refused():
    """Masses 1e-10 in all: the far particle's pull m / r^3 across 1e11 is below
    float32's smallest normal (the direct kernel gave it no force at all)."""
    pos = cluster()
    pos[17] = [1e11, 0.0, 0.0]
    with pytest.raises(RangeError, match=r"particle 17 .*m / S\^3 >= 2\^-120.*units in which"):
        accelerations(pos, np.full(len(pos), 1e-10 / len(pos)), eps=1.0, method="direct")


def test_masses_beyond_float32_are_refused():
    pos = cluster(50)
    with pytest.raises(RangeError, match="total mass M = 1e\\+40"):
        accelerations(pos, np.full(50, 1e40 / 50), eps=0.01)
    with pytest.raises(RangeError, match="M / eps\\^3"):
        accelerations(pos, np.full(50, 1.0 / 50), eps=1e-13)


def test_an_unsoftened_pair_too_close_for_float32_is_flagged():
    """eps = 0 bounds nothing: a pair of masses 1e3 1e-18 apart has m / r^2 = 1e39, inf in
    float32; the call says so instead of returning it.  (r^2 = 1e-36 is a normal float32:
    a pair closer than about 1e-19, whose r^2 is subnormal, is one point to a device that
    flushes subnormals to zero, as NVIDIA's does under fast math, and feels no force.)"""
    pos = np.array([[0.0, 0.0, 0.0], [1e-18, 0.0, 0.0], [1.0, 0.0, 0.0]])
    with pytest.raises(RangeError, match=r"force on sink 0 .* overflows float32"):
        accelerations(pos, np.array([1e3, 1e3, 1.0]), eps=0.0, method="direct")
