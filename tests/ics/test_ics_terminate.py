"""Every sphere generator ends (issue 54, item 4): a truncation radius that keeps almost
no mass is refused with the mass fraction and the smallest radius allowed, a small one
that is allowed costs no more draws than the whole model, and the draws of the default
truncation are the ones the generators always made."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy import stats

from hybridtree.ics import ModelError, generate_share, hernquist, plummer
from hybridtree.ics.profiles import MIN_MASS_FRACTION, mass_inside, plummer_radii

SCALE = 3.0 * math.pi / 16.0            # the Plummer radius in Hénon units


def plummer_mass(r):
    return r ** 3 / (1.0 + r * r) ** 1.5


@pytest.mark.parametrize("model", ["plummer", "hernquist"])
@pytest.mark.parametrize("r_max", [1e-10, 1e-300, 0.03, 5e-324])
def test_a_truncation_that_keeps_almost_no_mass_is_refused(model, r_max):
    gen = {"plummer": plummer, "hernquist": hernquist}[model]
    with pytest.raises(ModelError) as err:
        gen(100, seed=1, r_max=r_max)
    msg = str(err.value)
    assert "\n" not in msg and "r_max" in msg
    # the fraction inside r_max it states is the profile's (r^3/(1+r^2)^1.5, r^2/(1+r)^2)
    stated = float(re.search(r"keeps a fraction (\S+) of", msg).group(1))
    exact = plummer_mass(r_max) if model == "plummer" else (r_max / (1 + r_max)) ** 2
    assert stated == pytest.approx(exact, rel=1e-3, abs=1e-300)
    # the smallest r_max it offers is allowed, and keeps MIN_MASS_FRACTION to its 4 digits
    smallest = float(re.search(r"r_max >= (\S+)$", msg).group(1))
    inside = plummer_mass(smallest) if model == "plummer" else (smallest / (1 + smallest)) ** 2
    assert MIN_MASS_FRACTION <= inside < MIN_MASS_FRACTION * 1.002
    pos, _, _ = gen(100, seed=1, r_max=smallest)
    assert np.all(np.isfinite(pos))


def test_a_small_plummer_truncation_is_the_truncated_profile_at_the_cost_of_one_draw():
    """Below half the mass the truncated profile is inverted: radius k is the quantile of
    the truncated M(<r) at the uniform the whole model turns into its radius k."""
    n, r_max = 20_000, 0.3
    m_cut = plummer_mass(r_max)
    assert m_cut < 0.5
    whole = plummer_radii(np.random.default_rng(11), n, math.inf)
    cut = plummer_radii(np.random.default_rng(11), n, r_max)
    assert cut.max() <= r_max
    np.testing.assert_allclose(plummer_mass(cut), plummer_mass(whole) * m_cut, rtol=1e-9)
    # and the model's radii, before its centre-of-mass shift, follow the truncated profile
    s = generate_share("plummer", n, 0, n, 4, r_max=r_max)
    r = np.linalg.norm(s.pos, axis=1) / SCALE
    assert stats.kstest(r, lambda x: plummer_mass(np.minimum(x, r_max)) / m_cut).pvalue > 1e-3


def _old_plummer_radii(rng, n, r_max):
    """The generators' radii before issue 54: redrawn while beyond r_max."""
    r = np.empty(n)
    todo = np.arange(n)
    while len(todo):
        u = rng.uniform(0.0, 1.0, len(todo))
        rr = 1.0 / np.sqrt(np.maximum(u, 1e-300) ** (-2.0 / 3.0) - 1.0)
        ok = rr <= r_max
        r[todo[ok]] = rr[ok]
        todo = todo[~ok]
    return r


@pytest.mark.parametrize("r_max", [100.0, 1.4, math.inf])
def test_where_most_mass_is_inside_the_radii_are_the_draws_of_before(r_max):
    assert mass_inside("plummer", r_max) >= 0.5
    for seed in (0, 7):
        a = plummer_radii(np.random.default_rng(seed), 5000, r_max)
        b = _old_plummer_radii(np.random.default_rng(seed), 5000, r_max)
        assert np.array_equal(a, b)


def test_the_mass_profiles_do_not_overflow():
    for r in (5e-324, 1e-300, 1e-10, 1.0, 1e10, 1e300, math.inf):
        for model in ("plummer", "hernquist"):
            m = mass_inside(model, r)
            assert 0.0 <= m <= 1.0
    assert mass_inside("plummer", 1.0) == pytest.approx(2 ** -1.5)
    assert mass_inside("hernquist", 1.0) == pytest.approx(0.25)
