"""``hybridtree plot`` of a galaxy zooms each particle type's panels to that type's own
extent (the radius holding 90 % of its mass), so that a disk and a bulge inside a far
larger halo are not dots; the diagnostics figure names the energy error's norm (|W| for a
cosmological sphere).  No OpenCL needed."""

from pathlib import Path

import numpy as np
import pytest

from hybridtree.analysis.figure_maps import component_halves
from hybridtree.analysis.plot import plot_diagnostics, projection_figure, snapshot_units
from hybridtree.config.units import Units
from hybridtree.io.snapshot import write_snapshot
from hybridtree.particles import Particles
from tests.analysis.test_plot import write_csv
from tests.analysis.test_plot_cosmo import write_cosmo_snapshot

KPC = Units(3.0856775814913673e21, 1.98841e43)
#: type -> (particles, scale length (kpc), particle mass): halo, disk, bulge
COMPONENTS = {1: (3000, 60.0, 1.0), 2: (2000, (4.0, 0.3), 0.2), 3: (800, 0.8, 0.1)}


def galaxy(seed: int = 5) -> Particles:
    """A halo of radius ~180 kpc around a thin disk (4 kpc, 0.3 kpc thick) and a bulge
    (0.8 kpc), off the origin, with unequal masses within the halo."""
    rng = np.random.default_rng(seed)
    pos, mass, types = [], [], []
    for t, (n, scale, m) in COMPONENTS.items():
        if t == 2:
            r = rng.exponential(scale[0], n)
            phi = rng.uniform(0, 2 * np.pi, n)
            p = np.column_stack([r * np.cos(phi), r * np.sin(phi), rng.normal(0, scale[1], n)])
        else:
            p = rng.normal(size=(n, 3))
            p *= (scale * rng.random(n) ** 0.7 / np.linalg.norm(p, axis=1))[:, None] * 3
        pos.append(p)
        mass.append(m * (1 + 0.5 * rng.random(n)))
        types.append(np.full(n, t, np.uint8))
    pos = np.concatenate(pos) + np.array([20.0, -5.0, 3.0])
    n = len(pos)
    return Particles(pos, np.zeros((n, 3)), np.concatenate(mass),
                     np.arange(1, n + 1, dtype=np.uint64), types=np.concatenate(types))


def radius_holding(pos: np.ndarray, mass: np.ndarray, centre: np.ndarray, f: float) -> float:
    """The distance from ``centre`` of the particle at which the mass within, in distance
    order, first reaches ``f`` of the whole."""
    r = np.linalg.norm(pos - centre, axis=1)
    order = np.argsort(r)
    k = np.searchsorted(np.cumsum(mass[order]), f * mass.sum())
    return float(r[order][k])


def test_each_component_gets_the_radius_of_90_percent_of_its_mass():
    p = galaxy()
    centre = p.mass @ p.pos / p.mass.sum()
    halves = component_halves(p.pos, p.mass, p.types, centre, fallback=123.0)
    assert sorted(halves) == [1, 2, 3]
    for t in (1, 2, 3):
        rows = p.types == t
        assert halves[t] == pytest.approx(radius_holding(p.pos[rows], p.mass[rows], centre, 0.9),
                                          rel=1e-9)
    assert halves[3] < halves[2] < halves[1] / 5          # the bulge and disk zoomed in
    # a type without mass keeps the whole system's square
    massless = p.mass.copy()
    massless[p.types == 3] = 0.0
    assert component_halves(p.pos, massless, p.types, centre, fallback=123.0)[3] == 123.0


def test_galaxy_panels_are_drawn_over_their_own_extent(tmp_path: Path):
    p = galaxy()
    path = tmp_path / "snapshot_0001.hdf5"
    write_snapshot(path, p, 1.0, KPC)
    f = snapshot_units(path).length_factor
    centre = p.mass @ p.pos / p.mass.sum() * f
    fig = projection_figure(path)
    axes = [ax for ax in fig.axes if ax.get_images()]
    assert len(axes) == 6                       # face-on above edge-on, per type
    for k, t in enumerate((1, 2, 3)):
        rows = p.types == t
        half = radius_holding(p.pos[rows] * f, p.mass[rows], centre, 0.9)
        for row, (i, j) in enumerate(((0, 1), (0, 2))):
            ax = axes[row * 3 + k]
            assert f"PartType{t}" in axes[k].get_title()
            x0, x1, y0, y1 = ax.get_images()[0].get_extent()
            np.testing.assert_allclose([x0, x1, y0, y1], [centre[i] - half, centre[i] + half,
                                                          centre[j] - half, centre[j] + half],
                                       rtol=1e-9, atol=1e-9 * half)


def test_energy_axis_names_its_norm(tmp_path: Path, figures):
    """The norm is told by the run's newest snapshot beside diagnostics.csv."""
    sphere = tmp_path / "sphere"             # a cosmological sphere with Λ: |ΔE / W|
    sphere.mkdir()
    write_cosmo_snapshot(sphere / "snapshot_0000.hdf5", 0.0)
    write_csv(sphere)
    plot_diagnostics(sphere / "diagnostics.csv", sphere / "diagnostics.png")
    label = figures["diagnostics.png"].axes[0].get_ylabel()
    assert label.startswith("|ΔE / W|") and "gravitational potential energy" in label
    plain = tmp_path / "plain"               # an isolated run: |ΔE / E₀|
    plain.mkdir()
    write_snapshot(plain / "snapshot_0000.hdf5", galaxy(), 0.0, KPC)
    write_csv(plain)
    plot_diagnostics(plain / "diagnostics.csv", plain / "diagnostics.png")
    assert figures["diagnostics.png"].axes[0].get_ylabel() == "|ΔE / E₀|"
