"""``hybridtree plot`` for cosmological runs: synthetic GADGET-convention snapshots (a
sphere with clumps at several redshifts; comoving Coordinates in UnitLength/h, Masses in
UnitMass/h) drawn in comoving Mpc with h taken out, M☉ per comoving Mpc², the redshift in
the title, and the four redshift panels on one colour scale.  No OpenCL needed."""

import csv
from pathlib import Path

import h5py
import matplotlib.image
import matplotlib.text
import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from hybridtree.analysis.plot import (plot_run, projection_figure, redshift_panels, snapshot_cosmology,
                             snapshot_units)

# The unit sizes are spelled out here, not taken from hybridtree.analysis.plot.
MPC = 3.0856775814913673e24         # cm
MSUN = 1.98841e33                   # g
UNIT_LENGTH = 3.0857e24             # cm: the runs' "1 Mpc"
UNIT_MASS = 1.989e43                # g: the runs' "1e10 Msun"
H = 0.7
YR = 3.15576e7                      # s (Julian)
GYR_UNITS = UNIT_LENGTH / 1e5 / (1e9 * YR)     # the time unit Mpc / (km/s) in Gyr
CENTRE = np.array([50.0, 40.0, 60.0])   # Mpc/h: the sphere's centre in the box
RADIUS = 10.0                           # Mpc/h, comoving
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
#: the redshifts of the synthetic run's snapshots, in the order they are numbered
SNAP_Z = (12.0, 8.5, 3.0, 2.2, 1.0, 0.5, 0.0)


def sphere(z: float, n: int = 3000, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(comoving positions in Mpc/h, masses in 1e10 Msun/h): a uniform sphere whose clumps
    tighten as z falls (same particles at every z, as in a run)."""
    rng = np.random.default_rng(seed)
    u = rng.normal(size=(n, 3))
    pos = u / np.linalg.norm(u, axis=1)[:, None] * RADIUS * rng.random(n)[:, None] ** (1 / 3)
    clumps = rng.uniform(-0.6, 0.6, size=(4, 3)) * RADIUS
    member = rng.integers(0, 8, n)              # half the particles fall into 4 clumps
    pull = 1.0 - 0.9 / (1.0 + z) ** 0.5         # 0.1 at z = 0: tight; ~0.75 at z = 8.9
    for k in range(4):
        sel = member == k
        pos[sel] = clumps[k] + (pos[sel] - clumps[k]) * pull
    pos = CENTRE + pos
    mass = 1.0 + 0.2 * rng.random(n)
    return pos, mass


def write_cosmo_snapshot(path: Path, z: float, units_in: str = "Units", n: int = 3000,
                         parameters: dict | None = None) -> None:
    """A GADGET-convention cosmological snapshot at redshift ``z`` (a = 1/(1+z)); the unit
    attributes in the group ``units_in`` ("Units", "Header" or "Parameters")."""
    a = 1.0 / (1.0 + z)
    pos, mass = sphere(z, n)
    counts = np.array([0, n, 0, 0, 0, 0], np.uint32)
    with h5py.File(path, "w") as f:
        h = f.create_group("Header").attrs
        h["NumPart_ThisFile"] = counts
        h["NumPart_Total"] = counts
        h["NumPart_Total_HighWord"] = np.zeros(6, np.uint32)
        h["NumFilesPerSnapshot"] = 1
        h["MassTable"] = np.zeros(6)
        h["Time"] = a
        h["Redshift"] = z
        h["HubbleParam"] = H
        h["Omega0"] = 0.3
        h["OmegaLambda"] = 0.7
        h["BoxSize"] = 0.0
        g = f.create_group("PartType1")
        g["Coordinates"] = pos
        g["Velocities"] = np.zeros_like(pos)        # peculiar velocity / sqrt(a)
        g["Masses"] = mass
        g["ParticleIDs"] = np.arange(1, n + 1, dtype=np.uint64)
        units = {"UnitLength_in_cm": UNIT_LENGTH, "UnitMass_in_g": UNIT_MASS,
                 "UnitVelocity_in_cm_per_s": 1e5}
        target = h if units_in == "Header" else f.require_group(units_in).attrs
        target.update(units)
        if parameters is not None:
            f.require_group("Parameters").attrs.update(parameters)


def comoving_mpc(pos: np.ndarray, h: float = H) -> np.ndarray:
    return pos / h * UNIT_LENGTH / MPC


def msun(mass: np.ndarray, h: float = H) -> np.ndarray:
    return mass / h * UNIT_MASS / MSUN


def stored(path: Path) -> tuple[np.ndarray, np.ndarray]:
    with h5py.File(path, "r") as f:
        return f["PartType1/Coordinates"][...], f["PartType1/Masses"][...]


@pytest.fixture
def cosmo_run(tmp_path: Path) -> Path:
    for i, z in enumerate(SNAP_Z):
        write_cosmo_snapshot(tmp_path / f"snapshot_{i:04d}.hdf5", z)
    return tmp_path


def image_of(ax):
    [image] = ax.get_images()
    return image


def check_map(ax, path: Path, h: float = H, all_inside: bool = True) -> None:
    """The map of ``ax`` is the snapshot's: centred on its centre of mass, and its
    surface density integrates to the mass in the window (M☉, or M☉/h for h = 1)."""
    pos, mass = stored(path)
    xy, m = comoving_mpc(pos[:, :2], h), msun(mass, h)
    image = image_of(ax)
    x0, x1, y0, y1 = image.get_extent()
    np.testing.assert_allclose([(x0 + x1) / 2, (y0 + y1) / 2],
                               np.average(xy, axis=0, weights=m), rtol=1e-12)
    assert (ax.get_xlim(), ax.get_ylim()) == ((x0, x1), (y0, y1))
    inside = (xy[:, 0] >= x0) & (xy[:, 0] <= x1) & (xy[:, 1] >= y0) & (xy[:, 1] <= y1)
    assert inside.all() if all_inside else 0 < inside.sum() < len(xy)
    sigma = image.get_array()
    ny, nx = sigma.shape
    pixel = (x1 - x0) / nx * (y1 - y0) / ny
    np.testing.assert_allclose(sigma.sum() * pixel, m[inside].sum(), rtol=1e-6)


def test_cosmology_is_read(cosmo_run: Path):
    c = snapshot_cosmology(cosmo_run / "snapshot_0003.hdf5")
    assert (c.a, c.redshift, c.h, c.omega0, c.omega_lambda) == (1 / 3.2, 2.2, H, 0.3, 0.7)
    assert (c.length_cm, c.mass_g) == (UNIT_LENGTH, UNIT_MASS)
    u = snapshot_units(cosmo_run / "snapshot_0003.hdf5")
    assert (u.length, u.cosmological) == ("comoving Mpc", True)
    assert u.length_factor == pytest.approx(UNIT_LENGTH / H / MPC, rel=1e-12)
    assert u.mass_factor == pytest.approx(UNIT_MASS / H / MSUN, rel=1e-12)
    uh = snapshot_units(cosmo_run / "snapshot_0003.hdf5", h_units=True)
    assert uh.length == "comoving Mpc/h"
    assert uh.length_factor == pytest.approx(UNIT_LENGTH / MPC, rel=1e-12)


@pytest.mark.parametrize("units_in", ["Units", "Header", "Parameters"])
def test_projection_in_comoving_mpc(tmp_path: Path, units_in: str):
    path = tmp_path / "snapshot_0001.hdf5"
    write_cosmo_snapshot(path, 2.5, units_in)
    fig = projection_figure(path)
    FigureCanvasAgg(fig).draw()
    ax, bar = fig.axes
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("x (comoving Mpc)", "y (comoving Mpc)")
    assert bar.get_ylabel() == "surface density (M☉/comoving Mpc²)"
    assert "z = 2.50" in ax.get_title()
    check_map(ax, path)                 # the whole sphere: every particle is in the picture
    # the whole sphere: the square's half-width is its largest projected radius about the
    # centre of mass, in comoving Mpc, plus a 2 % margin
    pos, mass = stored(path)
    xy = comoving_mpc(pos[:, :2])
    r = np.linalg.norm(xy - np.average(xy, axis=0, weights=mass), axis=1).max()
    x0, x1, y0, y1 = image_of(ax).get_extent()
    np.testing.assert_allclose([x1 - x0, y1 - y0], 2 * 1.02 * r, rtol=1e-12)
    assert 2 * 0.9 * RADIUS / H * UNIT_LENGTH / MPC < x1 - x0
    assert isinstance(image_of(ax).norm, matplotlib.colors.LogNorm)


def test_projection_width_and_h_units(cosmo_run: Path):
    path = cosmo_run / "snapshot_0004.hdf5"
    fig = projection_figure(path, width=6.0)
    ax = fig.axes[0]
    x0, x1, y0, y1 = image_of(ax).get_extent()
    assert (x1 - x0, y1 - y0) == (pytest.approx(6.0, rel=1e-12), pytest.approx(6.0, rel=1e-12))
    check_map(ax, path, all_inside=False)
    assert "z = 1.00" in ax.get_title()
    fig = projection_figure(path, width=6.0, h_units=True)
    ax, bar = fig.axes
    assert ax.get_xlabel() == "x (comoving Mpc/h)"
    assert bar.get_ylabel() == "surface density ((M☉/h)/(comoving Mpc/h)²)"
    x0, x1, _, _ = image_of(ax).get_extent()
    assert x1 - x0 == pytest.approx(6.0, rel=1e-12)
    check_map(ax, path, h=1.0, all_inside=False)
    with pytest.raises(ValueError, match="width"):
        projection_figure(path, width=-1.0)


def test_redshift_panels(cosmo_run: Path):
    fig = redshift_panels(cosmo_run)
    FigureCanvasAgg(fig).draw()
    panels = [ax for ax in fig.axes if ax.get_images()]
    assert len(panels) == 4
    # closest snapshots to 8.9, 2.5, 0.93, 0: z = 8.5, 2.2, 1.0, 0.0
    want = {"z = 8.50": 1, "z = 2.20": 3, "z = 1.00": 4, "z = 0.00": 6}
    for ax, (title, number) in zip(panels, want.items()):
        assert ax.get_title().startswith(title)
        assert ax.get_xlabel() == "x (comoving Mpc)"
        check_map(ax, cosmo_run / f"snapshot_{number:04d}.hdf5")
    norms = [image_of(ax).norm for ax in panels]
    assert len({(n.vmin, n.vmax) for n in norms}) == 1
    arrays = [image_of(ax).get_array() for ax in panels]
    assert norms[0].vmin == min(a.min() for a in arrays)
    assert norms[0].vmax == max(a.max() for a in arrays)
    # one square size and pixel size for all
    sizes = {tuple(np.round(np.diff(image_of(ax).get_extent())[[0, 2]], 9)) for ax in panels}
    assert len(sizes) == 1
    # structure grows: the densest pixel at z = 0 beats the densest at z = 8.5
    assert arrays[3].max() > arrays[0].max()
    [bar] = [ax for ax in fig.axes if ax.get_ylabel().startswith("surface density")]
    assert bar.get_ylabel() == "surface density (M☉/comoving Mpc²)"
    # the colour bar spans the panels (not more), and the figure says what black and the
    # colour bar's floor are
    renderer = fig.canvas.get_renderer()
    boxes = [ax.get_window_extent(renderer) for ax in panels]
    b = bar.get_window_extent(renderer)
    assert b.y0 == pytest.approx(min(x.y0 for x in boxes), abs=1.0)
    assert b.y1 == pytest.approx(max(x.y1 for x in boxes), abs=1.0)
    [note] = [t for t in fig.findobj(matplotlib.text.Text) if "no particle" in t.get_text()]
    assert note.get_text().startswith("black: no particle in the pixel\n"
                                      "the colour bar starts at ")


def test_redshift_panels_options(cosmo_run: Path, tmp_path_factory):
    fig = redshift_panels(cosmo_run, redshifts=(11.0, 0.4), width=5.0)
    panels = [ax for ax in fig.axes if ax.get_images()]
    assert [ax.get_title()[:8] for ax in panels] == ["z = 12.0", "z = 0.50"]
    for ax in panels:
        x0, x1, _, _ = image_of(ax).get_extent()
        assert x1 - x0 == pytest.approx(5.0, rel=1e-12)
    empty = tmp_path_factory.mktemp("empty")
    with pytest.raises(FileNotFoundError, match="no cosmological snapshot"):
        redshift_panels(empty)


def write_csv(folder: Path, with_a: bool) -> None:
    names = ["step", "time", "rel_energy_error", "r10", "r50", "r90"] + (["a"] if with_a else [])
    with open(folder / "diagnostics.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(names)
        for i in range(6):
            a = [repr(0.1 + 0.18 * i)] if with_a else []
            w.writerow([i, repr(0.05 * i), repr(1e-5 * i), "1.0", "2.0", "3.0", *a])


@pytest.mark.parametrize("with_a", [True, False])
def test_plot_run_writes_redshift_panels(cosmo_run: Path, figures, with_a: bool):
    write_csv(cosmo_run, with_a)
    paths = plot_run(cosmo_run)
    assert paths == [cosmo_run / "diagnostics.png", cosmo_run / "snapshot_0006_xy.png",
                     cosmo_run / "redshift_panels.png"]
    for p in paths:
        assert p.read_bytes()[:8] == PNG_MAGIC
        assert matplotlib.image.imread(p).shape[0] > 100
    ax_e, ax_r = figures["diagnostics.png"].axes
    [line] = ax_e.get_lines()
    if with_a:
        assert ax_r.get_xlabel() == "scale factor a"
        assert ax_r.get_xscale() == "log"
        np.testing.assert_allclose(line.get_xdata(), 0.1 + 0.18 * np.arange(6))
    else:
        # the run's internal time, in the stated time unit (UnitLength / UnitVelocity)
        assert ax_r.get_xlabel() == "time (Gyr)"
        np.testing.assert_allclose(line.get_xdata(), 0.05 * np.arange(6) * GYR_UNITS,
                                   rtol=1e-12)
    # the run's internal lengths are physical (h not involved)
    assert ax_r.get_ylabel() == "Lagrangian radius (physical Mpc)"
    np.testing.assert_allclose(ax_r.get_lines()[1].get_ydata(), 2.0 * UNIT_LENGTH / MPC,
                               rtol=1e-12)
    np.testing.assert_allclose(line.get_ydata()[1:], 1e-5 * np.arange(1, 6))
    assert ax_e.get_yscale() == "log"
    assert "z = 0.00" in figures["snapshot_0006_xy.png"].axes[0].get_title()
    assert not [p for p in cosmo_run.iterdir() if p.name.startswith(".")]


def test_cosmology_enabled_marks_a_run(tmp_path: Path):
    # hybridtree's own mark counts even where the header would not say (Omega0 = 0)
    path = tmp_path / "snapshot_0000.hdf5"
    write_cosmo_snapshot(path, 0.93, parameters={"cosmology.enabled": True})
    with h5py.File(path, "a") as f:
        f["Header"].attrs["Omega0"] = 0.0
    assert snapshot_cosmology(path).redshift == 0.93
    assert "z = 0.93" in projection_figure(path).axes[0].get_title()
    with h5py.File(path, "a") as f:
        f["Parameters"].attrs["cosmology.enabled"] = False
    assert snapshot_cosmology(path) is None            # then it is an ordinary snapshot
    assert snapshot_units(path).length == "Mpc"


def test_hybridtree_cosmological_snapshot(tmp_path: Path):
    """A snapshot written by hybridtree's own writer (physical internal coordinates in,
    GADGET's comoving convention out) is drawn at the comoving positions."""
    import inspect

    from hybridtree.io.snapshot import write_snapshot
    from hybridtree.particles import Particles
    from hybridtree.config.units import Units
    if "cosmology" not in inspect.signature(write_snapshot).parameters:
        pytest.skip("write_snapshot writes no cosmological snapshots yet")
    a, n = 0.4, 2000
    pos, mass = sphere(1.5, n)
    pos = pos / H * a                   # physical, internal units (UnitLength, no h)
    mass = mass / H
    p = Particles(pos, np.zeros((n, 3)), mass, np.arange(1, n + 1, dtype=np.uint64))
    path = tmp_path / "snapshot_0000.hdf5"
    write_snapshot(path, p, 0.1, Units(UNIT_LENGTH, UNIT_MASS),
                   parameters={"cosmology.enabled": True}, run_state={"Time": 0.1},
                   cosmology={"a": a, "h": H, "omega_m": 0.3, "omega_lambda": 0.7})
    ax = projection_figure(path).axes[0]
    assert f"z = {1 / a - 1:.2f}" in ax.get_title()
    xy, m = pos[:, :2] / a * UNIT_LENGTH / MPC, mass * UNIT_MASS / MSUN
    image = image_of(ax)
    x0, x1, y0, y1 = image.get_extent()
    np.testing.assert_allclose([(x0 + x1) / 2, (y0 + y1) / 2],
                               np.average(xy, axis=0, weights=m), rtol=1e-9)
    assert (xy.min(axis=0) > [x0, y0]).all() and (xy.max(axis=0) < [x1, y1]).all()
    sigma = image.get_array()
    pixel = (x1 - x0) * (y1 - y0) / sigma.size
    np.testing.assert_allclose(sigma.sum() * pixel, m.sum(), rtol=1e-6)


def test_a_periodic_box_is_drawn_as_the_box_and_a_slab(tmp_path):
    """A periodic snapshot's map is the box [0, L]² (not a square about the centre of
    mass), of the particles of the slab 0 <= z < L/4 only; the panels show each
    snapshot once."""
    from hybridtree.config.units import Units
    from hybridtree.io.hdf5_write import write_snapshot
    from hybridtree.particles import Particles
    rng = np.random.default_rng(3)
    box, n = 142.85714285714286, 4000
    pos = rng.random((n, 3)) * box
    pos[:100] = [10.0, 10.0, 5.0]              # a clump in the slab, off the centre
    units = Units(3.0856775814913673e24, 1.98841e43)
    for k, a in enumerate((0.5, 1.0)):
        write_snapshot(tmp_path / f"snapshot_000{k}.hdf5",
                       Particles(pos, np.zeros((n, 3)), np.ones(n), np.arange(1, n + 1,
                                                                          dtype=np.uint64)),
                       1.0, units, cosmology={"a": a, "h": 0.7, "omega_m": 0.3,
                                              "omega_lambda": 0.7, "box": box})
    fig = projection_figure(tmp_path / "snapshot_0001.hdf5")
    ax = fig.axes[0]
    assert ax.get_xlim() == pytest.approx((0.0, box)) and ax.get_ylim() == pytest.approx((0, box))
    in_slab = int((pos[:, 2] < box / 4).sum())
    assert f"N = {in_slab}" in ax.get_title() and in_slab < n / 2
    panels = redshift_panels(tmp_path, redshifts=(1.0, 0.5, 0.0))
    titled = [a for a in panels.axes if a.get_title()]
    assert len(titled) == 2 and "slab" in panels._suptitle.get_text()
