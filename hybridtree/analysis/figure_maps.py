"""The surface density maps of ``hybridtree plot`` (see :mod:`hybridtree.analysis.plot`): the x-y
projection of one snapshot (:func:`projection_figure`), and for a cosmological run the
projected density at several redshifts on one colour scale (:func:`redshift_panels`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.colors import ListedColormap, LogNorm
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox

from ..errors import UserInputError
from .diagnostics import lagrangian_radii
from .figure_text import PlainLogFormatter, number_text
from .figure_units import PlotUnits, SnapshotCosmology, snapshot_cosmology, snapshot_units
from ..io.hdf5_read import read_set
from ..io.snapshot import SNAPSHOT_RE, SnapshotError, read_particles

__all__ = ["REDSHIFTS", "cosmological_snapshots", "projection_figure", "redshift_panels"]

#: the redshifts of the four panels of the Barnes-Hut oct-tree GPU paper's figure
REDSHIFTS = (8.9, 2.5, 0.93, 0.0)
#: the colour of pixels without a particle (the axes' background: masked pixels)
EMPTY = "black"
#: the colours of the surface density: inferno without its darkest 15 %, so that the
#: colour bar's floor (one particle in a pixel) stands out from an empty, black pixel
CMAP = ListedColormap(matplotlib.colormaps["inferno"](np.linspace(0.15, 1.0, 256)),
                      name="inferno_above_black").with_extremes(bad=EMPTY)


@dataclass
class _Map:
    """A surface density map: ``sigma`` (masked where empty; x along the second axis
    after the transpose that imshow takes) in M☉ per squared display length, over
    ``extent`` (x0, x1, y0, y1) in display lengths, of ``count`` particles; ``one``: the
    surface density of the lightest of them alone in a pixel, ``equal_masses``: whether
    they all have its mass."""

    sigma: np.ma.MaskedArray
    extent: tuple[float, float, float, float]
    count: int
    one: float
    equal_masses: bool


#: the depth of the slab a periodic box's maps project, as a fraction of the box
SLAB = 0.25


def _box(snapshot: Path, units: PlotUnits) -> float | None:
    """A periodic snapshot's side in ``units``' comoving lengths (``Header/BoxSize``, in
    the file's UnitLength/h as the coordinates); None for open boundaries."""
    import h5py
    with h5py.File(snapshot, "r") as f:
        box = float(f["Header"].attrs.get("BoxSize", 0.0)) if "Header" in f else 0.0
    return box * units.length_factor if box > 0 else None


def _comoving_xy(snapshot: Path, units: PlotUnits, box: float | None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(x-y positions in ``units``' comoving lengths, masses in its M☉) of the finite
    particles of a cosmological ``snapshot``, from the columns as stored (comoving
    ``Coordinates`` in UnitLength/h, ``Masses`` in UnitMass/h); of a periodic box (side
    ``box`` in ``units``' lengths, :func:`_box`), those of the slab 0 <= z < :data:`SLAB`
    × box."""
    cols = read_set(snapshot, "all", (0, 1))[0]
    pos, mass = cols["pos"], cols["mass"]
    ok = np.isfinite(pos).all(axis=1)
    if box is not None:
        ok &= pos[:, 2] * units.length_factor < SLAB * box
    if not ok.any():
        raise SnapshotError(f"{snapshot}: no particles with finite positions to plot")
    return pos[ok, :2] * units.length_factor, mass[ok] * units.mass_factor


def _centre(xy: np.ndarray, mass: np.ndarray) -> np.ndarray:
    return np.average(xy, axis=0, weights=mass) if mass.sum() > 0 else xy.mean(axis=0)


def _sphere_half(xy: np.ndarray, centre: np.ndarray) -> float:
    """Half-width of a square about ``centre`` holding the whole projected sphere: its
    largest projected radius, 2 % more (a margin, so no particle sits on the edge)."""
    half = float(np.sqrt(((xy - centre) ** 2).sum(axis=1)).max()) * 1.02
    return half if half > 0 else 1.0


def _surface_density(xy: np.ndarray, mass: np.ndarray, centre: np.ndarray, half: float,
                     bins: int) -> _Map:
    """Mass per unit area in ``bins`` × ``bins`` pixels of the square ``centre`` ± ``half``
    (particles on its edge count; those outside do not)."""
    lo, hi = centre - half, centre + half
    h, _, _ = np.histogram2d(xy[:, 0], xy[:, 1], bins=bins, weights=mass,
                             range=[[lo[0], hi[0]], [lo[1], hi[1]]])
    pixel = (2 * half / bins) ** 2
    h /= pixel                                  # mass per pixel -> per unit area
    positive = mass[mass > 0]
    lightest = positive.min() if len(positive) else np.nan
    # empty bins: background colour, not log(0)
    return _Map(np.ma.masked_less_equal(h.T, 0.0), (lo[0], hi[0], lo[1], hi[1]), len(xy),
                lightest / pixel, bool(len(positive) and positive.max() == lightest))


def _draw(ax, m: _Map, units: PlotUnits, norm: LogNorm | None):
    """``m`` on ``ax`` (empty pixels black, equal axes); returns the image or None."""
    ax.set_facecolor(EMPTY)
    im = None
    if m.sigma.count():
        im = ax.imshow(m.sigma, origin="lower", extent=m.extent, cmap=CMAP,
                       norm=norm or LogNorm(vmin=m.sigma.min(), vmax=m.sigma.max()),
                       interpolation="nearest")
    x0, x1, y0, y1 = m.extent
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_aspect("equal")
    ax.set_xlabel(units.length_label("x"))
    ax.set_ylabel(units.length_label("y"))
    return im


def _cosmo_map(snapshot: Path, cosmo: SnapshotCosmology, bins: int, width: float | None,
               h_units: bool) -> _Map:
    """The comoving map of :func:`projection_figure` for a cosmological snapshot."""
    units = cosmo.units(h_units)
    box = _box(snapshot, units)
    xy, mass = _comoving_xy(snapshot, units, box)
    if box is not None:             # the box itself, whatever its centre of mass
        return _surface_density(xy, mass, np.full(2, box / 2), box / 2, bins)
    centre = _centre(xy, mass)
    half = width / 2 if width is not None else _sphere_half(xy, centre)
    return _surface_density(xy, mass, centre, half, bins)


def _check_width(width: float | None) -> None:
    if width is not None and not (np.isfinite(width) and width > 0):
        raise UserInputError(f"width must be a positive length (comoving Mpc), not {width!r}")


def projection_figure(snapshot: Path, bins: int = 256, width: float | None = None,
                      h_units: bool = False) -> Figure:
    """The mass-weighted x-y projection of ``snapshot`` as a surface density map
    (``bins`` × ``bins`` pixels, log colour scale), in the snapshot's own units
    (:func:`snapshot_units`): M☉ per squared length unit, e.g. M☉/kpc².

    A cosmological snapshot (:func:`snapshot_cosmology`) is drawn in comoving Mpc (h taken
    out; with ``h_units`` in comoving Mpc/h), as M☉ per comoving Mpc² (with ``h_units``
    (M☉/h) per (comoving Mpc/h)²), centred on the centre of mass, with the redshift in the
    title ("z = 2.50"); the square holds the whole sphere, or is ``width`` wide (comoving
    Mpc, or Mpc/h with ``h_units``).  ``width`` is for cosmological snapshots only."""
    snapshot = Path(snapshot)
    cosmo = snapshot_cosmology(snapshot)
    if cosmo is not None:
        _check_width(width)
        units = cosmo.units(h_units)
        m = _cosmo_map(snapshot, cosmo, bins, width, h_units)
        return _map_figure(m, units, f"{snapshot.name}: z = {cosmo.redshift:.2f}, N = {m.count}")
    if width is not None:
        raise UserInputError(f"{snapshot}: width is for cosmological snapshots only")
    units = snapshot_units(snapshot)
    particles, time, _ = read_particles(snapshot, "all")
    ok = np.isfinite(particles.pos).all(axis=1)
    pos = particles.pos[ok] * units.length_factor
    mass = particles.mass[ok] * units.mass_factor
    if not len(pos):
        raise SnapshotError(f"{snapshot}: no particles with finite positions to plot")
    centre = _centre(pos, mass)
    # Half-width from the central 98 %, so a few escapers do not shrink the cluster to a dot.
    half = float(np.quantile(np.abs(pos[:, :2] - centre[:2]).max(axis=1), 0.98)) * 1.05
    if not half > 0:
        half = 1.0
    title = f"{snapshot.name}: t = {units.time_text(time)}, N = {len(pos)}"
    if len(np.unique(particles.types[ok])) > 1:
        halves = component_halves(pos, mass, particles.types[ok], centre, half)
        return _types_figure(pos, mass, particles.types[ok], centre, halves, bins, units, title)
    m = _surface_density(pos[:, :2], mass, centre[:2], half, bins)
    return _map_figure(m, units, title)


#: GADGET's names of its particle types, for the panels' titles
TYPE_NAMES = ("gas", "halo", "disk", "bulge", "stars", "boundary")
#: the share of a type's mass inside its panels' square (see :func:`component_halves`)
COMPONENT_FRACTION = 0.9


def component_halves(pos: np.ndarray, mass: np.ndarray, types: np.ndarray,
                     centre: np.ndarray, fallback: float) -> dict[int, float]:
    """Per particle type present, the half-width of its panels' square (display lengths,
    as ``pos``): the radius about ``centre`` (the whole system's centre of mass) that
    encloses :data:`COMPONENT_FRACTION` of that type's mass, so that a galaxy's disk and
    bulge fill their panels instead of being dots in the halo's square; ``fallback``
    (the whole system's) for a type without mass."""
    halves = {}
    for t in np.unique(types):
        rows = types == t
        r = (lagrangian_radii(pos[rows], mass[rows], (COMPONENT_FRACTION,), centre=centre)[0]
             if mass[rows].sum() > 0 else 0.0)
        halves[int(t)] = float(r) if r > 0 else fallback
    return halves


def _types_figure(pos: np.ndarray, mass: np.ndarray, types: np.ndarray, centre: np.ndarray,
                  halves: dict[int, float], bins: int, units: PlotUnits, title: str) -> Figure:
    """One column per particle type (a galaxy's halo, disk, bulge): its face-on (x-y) and
    edge-on (x-z) surface density, on one colour scale, each type in its own square
    (``halves``: :func:`component_halves`)."""
    present = [int(t) for t in np.unique(types)]
    fig = Figure(figsize=(2.9 * len(present) + 1.2, 6.0), layout="compressed")
    axes = fig.subplots(2, len(present), squeeze=False)
    panels = []
    for k, t in enumerate(present):
        rows = types == t
        for row, cols in enumerate(([0, 1], [0, 2])):
            m = _surface_density(pos[rows][:, cols], mass[rows], centre[cols], halves[t], bins)
            panels.append((axes[row, k], m, row, t))
    drawn = [m for _, m, _, _ in panels if m.sigma.count()]
    norm = LogNorm(vmin=min(m.sigma.min() for m in drawn), vmax=max(m.sigma.max() for m in drawn))
    im = None
    for ax, m, row, t in panels:
        im = _draw(ax, m, units, norm) or im
        if row:
            ax.set_ylabel(units.length_label("z"))
        else:
            ax.set_title(f"PartType{t} ({TYPE_NAMES[t]}), N = {m.count}", fontsize="medium")
    if im is not None:
        _colour_bar(fig, im, list(axes.flat), [m for _, m, _, _ in panels], units)
    fig.suptitle(title)
    return fig


def _floor_note(floor: float, maps: list[_Map], units: PlotUnits) -> str:
    """What the black pixels and the colour bar's floor ``floor`` (the faintest pixel of
    ``maps``) mean, for the figure's foot, in two lines: "black: no particle in the pixel",
    "the colour bar starts at one particle per pixel, 1.39×10⁹ M☉/kpc²"."""
    one = min(m.one for m in maps)
    if np.isclose(floor, one, rtol=1e-6):
        what = ("one particle per pixel" if all(m.equal_masses for m in maps) else
                "one particle of the lightest mass per pixel")
    else:
        what = "the faintest pixel"
    return (f"{EMPTY}: no particle in the pixel\nthe colour bar starts at {what}, "
            f"{number_text(floor)} {units.surface_density_unit}")


def _as_tall_as(axes: list):
    """An axes locator for a colour bar beside ``axes``: where the layout put it, but
    from the bottom of the lowest of ``axes`` to the top of the highest, as drawn (after
    their equal aspect shrank them).  matplotlib's compressed layout does this for a
    colour bar of one map, not of several."""
    def locate(bar, renderer) -> Bbox:
        pos = bar.get_position(original=True)
        drawn = []
        for ax in axes:
            ax.apply_aspect()
            drawn.append(ax.get_position(original=False))
        return Bbox.from_extents(pos.x0, min(b.y0 for b in drawn), pos.x1,
                                 max(b.y1 for b in drawn))
    return locate


def _colour_bar(fig: Figure, im, axes, maps: list[_Map], units: PlotUnits) -> None:
    """The colour bar of ``im`` beside ``axes`` (a list, or one), as tall as they are,
    ticks in plain numbers where they are of everyday size, and the note that explains its
    floor and the black pixels at the figure's foot."""
    bar = fig.colorbar(im, ax=axes, label=units.surface_density_label)
    bar.ax.set_axes_locator(_as_tall_as(axes if isinstance(axes, list) else [axes]))
    bar.formatter = PlainLogFormatter()
    bar.minorformatter = PlainLogFormatter(labelOnlyBase=False)
    fig.supxlabel(_floor_note(im.norm.vmin, maps, units), fontsize="small")


def _map_figure(m: _Map, units: PlotUnits, title: str) -> Figure:
    """One projected map with its colour bar (surface density) and ``title``."""
    # compressed: no gap between the square map and its colour bar (the bar's height is
    # the map's, see _as_tall_as)
    fig = Figure(figsize=(6, 5.5), layout="compressed")
    ax = fig.subplots()
    im = _draw(ax, m, units, None)
    if im is not None:
        _colour_bar(fig, im, ax, [m], units)
    ax.set_title(title)
    return fig


def cosmological_snapshots(folder: str | Path) -> list[tuple[Path, SnapshotCosmology]]:
    """The cosmological run snapshots in ``folder`` (``snapshot_NNNN.hdf5``, or part 0 of
    a multi-file set), by number, each with its :class:`SnapshotCosmology`; others, and
    files that cannot be read, are left out."""
    found = []
    for p in Path(folder).glob("snapshot_*.hdf5"):
        m = SNAPSHOT_RE.match(p.name)
        if m and m.group(2) in (None, "0"):
            found.append((int(m.group(1)), p))
    out = []
    for _, p in sorted(found):
        try:
            cosmo = snapshot_cosmology(p)
        except SnapshotError:           # unreadable: not one to draw (nor to fail on)
            continue
        if cosmo is not None:
            out.append((p, cosmo))
    return out


def redshift_panels(folder: str | Path, redshifts: tuple[float, ...] = REDSHIFTS,
                    width: float | None = None, bins: int = 256, h_units: bool = False
                    ) -> Figure:
    """The projected density of a cosmological run at several redshifts: one panel per
    entry of ``redshifts`` (2 × 2 for four, else a row), each from the snapshot in
    ``folder`` whose ``Redshift`` is closest to it (the first by number on a tie; the
    panel's title gives the snapshot's own z), in comoving Mpc (comoving Mpc/h with
    ``h_units``), each centred on its centre of mass.

    All panels share one square size (``width``, comoving Mpc or Mpc/h; default the
    largest of the snapshots' whole spheres, see :func:`projection_figure`), pixel size and
    colour normalization (log, from the smallest to the largest surface density of all
    panels, M☉ per comoving Mpc²), so that the growth of structure shows.  Raises
    FileNotFoundError when ``folder`` holds no cosmological snapshot."""
    folder = Path(folder)
    _check_width(width)
    snaps = cosmological_snapshots(folder)
    if not snaps:
        raise FileNotFoundError(f"no cosmological snapshot_*.hdf5 in {folder}")
    if not len(redshifts):
        raise UserInputError("redshift_panels needs at least one redshift")
    # each snapshot once, even where two redshifts are closest to the same one
    chosen = list(dict.fromkeys(min(snaps, key=lambda s: abs(s[1].redshift - z))
                                for z in redshifts))
    units = chosen[0][1].units(h_units)
    box = _box(chosen[0][0], units)
    data = {}                           # (x-y, masses, centre: of mass, or of the box)
    for snap, cosmo in chosen:
        xy, mass = _comoving_xy(snap, cosmo.units(h_units), box)
        data[snap, cosmo] = xy, mass, _centre(xy, mass) if box is None else np.full(2, box / 2)
    half = (width / 2 if width is not None and box is None else box / 2 if box is not None
            else max(_sphere_half(xy, centre) for xy, _, centre in data.values()))
    maps = {key: _surface_density(xy, mass, centre, half, bins)
            for key, (xy, mass, centre) in data.items()}
    filled = [m.sigma for m in maps.values() if m.sigma.count()]
    norm = (LogNorm(vmin=min(s.min() for s in filled), vmax=max(s.max() for s in filled))
            if filled else None)
    rows = 2 if len(chosen) == 4 else 1
    cols = -(-len(chosen) // rows)
    fig = Figure(figsize=(4.2 * cols + 1.2, 4.2 * rows + 0.8), layout="compressed")
    axes = list(fig.subplots(rows, cols, squeeze=False).ravel())
    im = None
    for ax, (snap, cosmo) in zip(axes, chosen):
        im = _draw(ax, maps[(snap, cosmo)], units, norm) or im
        ax.set_title(f"z = {cosmo.redshift:.2f} ({snap.stem})")
    if im is not None:
        _colour_bar(fig, im, axes, list(maps.values()), units)
    fig.suptitle(f"{folder.name}: projected density" + (
        "" if box is None else f" of the slab 0 <= z < {SLAB * box:.4g} ({SLAB:g} of the box)"))
    return fig
