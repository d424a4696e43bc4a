"""A softening per particle (issue 32 item 2: the direct kernel's PER_EPS and the public
call; the tree walks': test_eps_tree.py): a pair's softening is the larger of the sink's and the source's,
GADGET-4's rule; checked against the formula for two particles, a float64 loop written
here, and the float64 reference on a mixed set."""

import numpy as np
import pytest

import hybridtree.gravity as gravity
from hybridtree.ics import plummer

SOFTENINGS = ("plummer", "spline")


def loop_reference(pos, mass, eps, softening):
    """Pair by pair in float64 (the rule and the kernels written out here, not the
    library's): the acceleration of every particle by all others."""
    from hybridtree.gravity.softening import SPLINE_H
    acc = np.zeros_like(pos)
    for i in range(len(pos)):
        for j in range(len(pos)):
            if i == j:
                continue
            d = pos[j] - pos[i]
            r = np.sqrt(d @ d)
            e = max(eps[i], eps[j])
            if softening == "plummer":
                f = 1.0 / (r * r + e * e) ** 1.5
            else:
                h = SPLINE_H * e
                u = r / h
                if u >= 1:
                    f = 1 / r ** 3
                elif u < 0.5:
                    f = (32 / 3 + u * u * (32 * u - 38.4)) / h ** 3
                else:
                    f = (64 / 3 - 48 * u + 38.4 * u * u - 32 / 3 * u ** 3
                         - 1 / (15 * u ** 3)) / h ** 3
            acc[i] += mass[j] * f * d
    return acc


def test_two_particles_take_the_larger_softening():
    pos = np.array([[0.0, 0.0, 0.0], [0.2, 0.0, 0.0]])
    mass = np.array([1.0, 2.0])
    eps = np.array([0.1, 0.3])
    f = gravity.accelerations(pos, mass, eps, method="direct")
    s = (0.2 ** 2 + 0.3 ** 2) ** 1.5          # both feel eps = 0.3
    np.testing.assert_allclose(f.acc[:, 0], [2.0 * 0.2 / s, -1.0 * 0.2 / s], rtol=2e-6)
    np.testing.assert_allclose(f.pot, [-2.0 / np.sqrt(0.13), -1.0 / np.sqrt(0.13)], rtol=2e-6)


@pytest.mark.parametrize("softening", SOFTENINGS)
def test_the_reference_is_the_rule_written_out(softening):
    rng = np.random.default_rng(4)
    pos = rng.normal(size=(40, 3)) * 0.3
    mass = rng.random(40)
    eps = rng.choice([0.01, 0.1, 0.3], 40)
    ref, _ = gravity.direct_reference(pos, mass, eps, softening=softening)
    np.testing.assert_allclose(ref, loop_reference(pos, mass, eps, softening), rtol=1e-12,
                               atol=1e-12 * np.abs(ref).max())


@pytest.mark.parametrize("softening", SOFTENINGS)
def test_mixed_softenings_match_the_float64_sum(softening):
    """Three softenings over 3000 particles of a Plummer sphere (measured on the 2-core
    machine's CPU device: median 9e-8 / 1.3e-7, largest 6e-7 / 1.2e-6 for Plummer / spline);
    one softening for all would be 5-8 % off."""
    pos, _, mass = plummer(3000, seed=1)
    eps = np.random.default_rng(0).choice([0.005, 0.05, 0.2], len(pos))
    f = gravity.accelerations(pos, mass, eps, method="direct", softening=softening)
    ref, ref_pot = gravity.direct_reference(pos, mass, eps, softening=softening)
    err = np.linalg.norm(f.acc - ref, axis=1) / np.linalg.norm(ref, axis=1)
    assert np.median(err) < 1e-6 and err.max() < 1e-5, (np.median(err), err.max())
    assert np.abs(f.pot - ref_pot).max() < 1e-5 * np.abs(ref_pot).max()
    one, _ = gravity.direct_reference(pos, mass, 0.05, softening=softening)
    assert np.median(np.linalg.norm(one - ref, axis=1) / np.linalg.norm(ref, axis=1)) > 0.02
    # sinks given apart have no softening of their own: each source's applies
    sinks = pos[:20] + 0.003
    f = gravity.accelerations(pos, mass, eps, method="direct", sinks=sinks, softening=softening)
    ref, _ = gravity.direct_reference(pos, mass, eps, sinks=sinks, softening=softening)
    assert (np.linalg.norm(f.acc - ref, axis=1) / np.linalg.norm(ref, axis=1)).max() < 1e-5


def test_one_value_for_all_is_the_scalar_and_the_refusals():
    pos, _, mass = plummer(500, seed=2)
    a = gravity.accelerations(pos, mass, np.full(len(pos), 0.02), method="direct")
    b = gravity.accelerations(pos, mass, 0.02, method="direct")
    assert np.array_equal(a.acc, b.acc) and np.array_equal(a.pot, b.pot)
    eps = np.linspace(0.01, 0.1, len(pos))
    with pytest.raises(ValueError, match="need the tree method"):
        gravity.accelerations(pos, mass, eps, method="direct", box=10.0)
    with pytest.raises(ValueError, match=r"one per particle, shape \(500,\)"):
        gravity.accelerations(pos, mass, eps[:-1], method="direct")
    bad = eps.copy()
    bad[7] = -1.0
    with pytest.raises(ValueError, match=r"eps\[7\]"):
        gravity.accelerations(pos, mass, bad, method="direct")
