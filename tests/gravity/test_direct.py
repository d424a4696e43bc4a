"""Direct (Chamomile) kernel against the float64 reference."""

import numpy as np
import pytest
from tests.helpers import rel_err

from hybridtree.gravity.direct import direct_forces
from hybridtree.gravity import accelerations, direct_reference
from hybridtree.ics import plummer
from hybridtree.device.choice import get_runtime


@pytest.mark.parametrize("kind", ["uniform", "plummer"])
def test_direct_matches_float64(kind):
    rng = np.random.default_rng(3)
    n = 4096
    if kind == "uniform":
        pos = rng.uniform(-1, 1, (n, 3))
        mass = rng.uniform(0.5, 1.5, n) / n
    else:
        pos, _, mass = plummer(n, seed=3)
    f = accelerations(pos, mass, eps=0.01, method="direct")
    acc, pot = direct_reference(pos, mass, eps=0.01)
    assert rel_err(f.acc, acc).max() < 1e-5
    assert np.abs(f.pot - pot).max() < 1e-5 * np.abs(pot).max()
    assert (f.n_pp == n - 1).all() and (f.n_pc == 0).all()


@pytest.mark.parametrize("n", [1, 2, 3, 127, 1000, 1031])
def test_any_n_and_unsoftened(n):
    rng = np.random.default_rng(n)
    pos = rng.normal(size=(n, 3))
    mass = rng.uniform(0.1, 1.0, n)
    for eps in (0.0, 0.05):
        f = accelerations(pos, mass, eps=eps, method="direct")
        acc, pot = direct_reference(pos, mass, eps=eps)
        scale = np.abs(acc).max() if n > 1 else 1.0
        assert np.abs(f.acc - acc).max() <= 1e-5 * scale
        assert np.allclose(f.pot, pot, rtol=1e-5, atol=1e-7)


def test_sinks_differ_from_sources():
    rng = np.random.default_rng(4)
    src = rng.normal(size=(700, 3))
    m = rng.uniform(0.5, 1.0, 700)
    sinks = rng.normal(size=(333, 3)) * 2.0
    f = accelerations(src, m, eps=0.01, method="direct", sinks=sinks)
    acc, pot = direct_reference(src, m, eps=0.01, sinks=sinks)
    assert f.acc.shape == (333, 3)
    assert rel_err(f.acc, acc).max() < 1e-5
    assert np.allclose(f.pot, pot, rtol=1e-5)
    assert (f.n_pp == 700).all()


def test_plain_float32_variant_is_close():
    pos, _, mass = plummer(2048, seed=5)
    f = accelerations(pos, mass, eps=0.01, method="direct", precise=False)
    acc, _ = direct_reference(pos, mass, eps=0.01)
    e = rel_err(f.acc, acc)
    assert np.median(e) < 1e-6 and e.max() < 1e-4


@pytest.mark.parametrize("sinks_per_item", [2, 4])
@pytest.mark.parametrize("split", [True, False])
def test_several_sinks_per_work_item(sinks_per_item, split):
    """NI sinks per work-item: every N (ragged last group, self pairs on NI diagonal
    tiles), eps = 0 with its zero-distance guard, and sinks that are not sources.
    (The GPUs' per-tile self branch, SELF_BRANCH = 1, is not built here: PoCL 5's
    compiler aborts the process on it; the H100 runs it in this file's other tests.)"""
    rt = get_runtime()
    opts = {"NI": sinks_per_item}
    rng = np.random.default_rng(6)
    for n in (1, 5, 100, 333):
        pos = rng.normal(size=(n, 3))
        mass = rng.uniform(0.1, 1.0, n)
        for eps in (0.0, 0.05):
            acc, pot, _ = direct_forces(rt, pos, mass, pos, eps, True, 16, split, opts)
            ref, pref = direct_reference(pos, mass, eps=eps)
            scale = np.abs(ref).max() if n > 1 else 1.0
            assert np.abs(acc - ref).max() <= 1e-5 * scale
            assert np.allclose(pot, pref, rtol=1e-5, atol=1e-7)
    sinks = rng.normal(size=(77, 3))
    acc, pot, _ = direct_forces(rt, pos, mass, sinks, 0.01, False, 16, split, opts)
    ref, pref = direct_reference(pos, mass, eps=0.01, sinks=sinks)
    assert rel_err(acc, ref).max() < 1e-5 and np.allclose(pot, pref, rtol=1e-5)
