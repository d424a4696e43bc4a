"""Degenerate and hostile input to the gravity engine."""

import numpy as np
import pytest
from tests.helpers import rel_err

from hybridtree.gravity import accelerations, direct_reference

METHODS = ["tree", "direct"]


@pytest.mark.parametrize("method", METHODS)
def test_single_particle_feels_nothing(method):
    f = accelerations([[1.0, 2.0, 3.0]], [2.0], eps=0.1, method=method)
    assert (f.acc == 0).all() and (f.pot == 0).all()


@pytest.mark.parametrize("method", METHODS)
def test_two_particles_exact(method):
    pos = np.array([[0.0, 0, 0], [3.0, 4.0, 0]])
    m = np.array([2.0, 1.0])
    f = accelerations(pos, m, eps=0.0, method=method)
    r = 5.0
    assert np.allclose(f.acc[0], m[1] * pos[1] / r**3, rtol=1e-6)
    assert np.allclose(f.acc[1], -m[0] * pos[1] / r**3, rtol=1e-6)
    assert np.allclose(f.pot, [-m[1] / r, -m[0] / r], rtol=1e-6)


@pytest.mark.parametrize("method", METHODS)
def test_all_particles_at_one_point(method):
    n = 300
    f = accelerations(np.full((n, 3), 0.25), np.ones(n), eps=0.1, method=method)
    assert np.isfinite(f.acc).all() and np.abs(f.acc).max() < 1e-6
    assert np.allclose(f.pot, -(n - 1) / 0.1, rtol=1e-5)


@pytest.mark.parametrize("method", METHODS)
def test_all_at_one_point_unsoftened_is_finite(method):
    f = accelerations(np.zeros((50, 3)), np.ones(50), eps=0.0, method=method)
    assert np.isfinite(f.acc).all() and np.isfinite(f.pot).all()


@pytest.mark.parametrize("method", METHODS)
def test_zero_masses(method):
    rng = np.random.default_rng(2)
    pos = rng.normal(size=(500, 3))
    m = rng.uniform(0, 1, 500)
    m[::3] = 0.0
    f = accelerations(pos, m, eps=0.01, method=method, theta=0.3)
    acc, pot = direct_reference(pos, m, eps=0.01)
    assert np.median(rel_err(f.acc, acc)) < 1e-3
    g = accelerations(pos, np.zeros(500), eps=0.01, method=method)
    assert (g.acc == 0).all() and (g.pot == 0).all()


@pytest.mark.parametrize("method", METHODS)
def test_one_particle_far_away(method):
    rng = np.random.default_rng(3)
    pos = rng.normal(size=(2000, 3))
    pos[17] = [1e8, 0, 0]
    m = np.full(2000, 1.0 / 2000)
    f = accelerations(pos, m, eps=0.01, method=method, theta=0.5)
    acc, pot = direct_reference(pos, m, eps=0.01)
    assert np.isfinite(f.acc).all() and np.isfinite(f.pot).all()
    e = rel_err(f.acc, acc)
    assert np.median(e) < 1e-3 and e[17] < 1e-5
    assert np.allclose(f.pot, pot, rtol=1e-3)


@pytest.mark.parametrize("method", METHODS)
def test_bad_values_name_the_index(method):
    pos = np.zeros((10, 3))
    pos[:, 0] = np.arange(10)
    m = np.ones(10)
    bad = pos.copy()
    bad[4, 1] = np.nan
    with pytest.raises(ValueError, match=r"positions\[4\]"):
        accelerations(bad, m, method=method)
    bad[4, 1] = np.inf
    with pytest.raises(ValueError, match=r"positions\[4\]"):
        accelerations(bad, m, method=method)
    mm = m.copy()
    mm[6] = -1.0
    with pytest.raises(ValueError, match=r"mass\[6\]"):
        accelerations(pos, mm, method=method)
    with pytest.raises(ValueError, match="shape"):
        accelerations(pos[:, :2], m, method=method)
    with pytest.raises(ValueError, match="eps"):
        accelerations(pos, m, eps=-1.0, method=method)
