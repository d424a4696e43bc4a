"""The whole-array checks of hybridtree.particles against numpy's plain forms."""

import numpy as np
import pytest

from hybridtree.particles import all_finite, bounds, validate_particles


@pytest.mark.parametrize("n", [1, 7, 1000])
def test_bounds_are_the_axis_reductions(n):
    pos = np.random.default_rng(n).normal(size=(n, 3)) * [1.0, 1e-9, 1e12]
    lo, hi = bounds(pos)
    assert np.array_equal(lo, pos.min(axis=0)) and np.array_equal(hi, pos.max(axis=0))
    pos[n // 2, 1] = np.nan
    lo, hi = bounds(pos)
    assert np.isnan(lo[1]) and np.isnan(hi[1])
    assert np.array_equal(lo[[0, 2]], pos.min(axis=0)[[0, 2]])


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, None])
def test_all_finite_is_the_element_test(bad):
    a = np.random.default_rng(2).normal(size=(100, 3))
    a[:4, 0] = 1e308                    # finite, but their sum overflows
    if bad is not None:
        a[57, 2] = bad
    assert all_finite(a) == bool(np.isfinite(a).all()) == (bad is None)
    if bad is not None:
        with pytest.raises(ValueError, match=r"positions\[57\] is not finite"):
            validate_particles(a, np.ones(100))
