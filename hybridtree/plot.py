"""Pictures of a run's output folder, for ``hybridtree plot FOLDER``.

``diagnostics.png``: relative energy error and Lagrangian radii against time, from
``diagnostics.csv``.  ``snapshot_NNNN_xy.png``: the surface density of an x-y projection
of a snapshot (the last one unless told).  Either is skipped when its input is missing (a
``diagnostics.csv`` without rows counts as missing); with neither, it is an error.

Axes are in physical units when the run states its units (a snapshot's ``Units`` group,
GADGET-4's unit attributes in ``Parameters``, or hybridtree's ``units.*`` settings there;
see :func:`snapshot_units`): lengths in AU, pc, kpc or Mpc, times in yr, kyr, Myr or Gyr,
masses in solar masses.  A snapshot stating none (e.g. initial conditions from another
tool) is plotted in N-body units.  ``diagnostics.csv`` holds internal units only; its run's
units come from the run's snapshots in the same folder.

Cosmological snapshots (GADGET's convention, see :func:`snapshot_cosmology`: ``Header``
``Time`` = scale factor a, ``Redshift``, ``HubbleParam`` = h, comoving ``Coordinates`` in
UnitLength/h, ``Masses`` in UnitMass/h) are drawn in comoving Mpc with h taken out (or in
comoving Mpc/h on request), surface densities in M☉ per comoving Mpc², with the redshift in
the title.  For a folder holding a cosmological run ``plot_run`` also writes
``redshift_panels.png`` (:func:`redshift_panels`: the projected density at z = 8.9, 2.5,
0.93 and 0 on one colour scale), and plots the energy error against the scale factor a
when ``diagnostics.csv`` has a column ``a``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure

from .diagnostics import read_diagnostics
from .io.hdf5_read import _attr, _file_units, _open, _read_set, attr_number
from .io.snapshot import SNAPSHOT_RE, SnapshotError, atomic_path, latest_snapshot, read_particles
from .units import GYR_S, KPC_CM, MPC_CM, MSUN_1E10_G, MSUN_G, Units

__all__ = ["NBODY", "REDSHIFTS", "PlotUnits", "SnapshotCosmology", "cosmological_snapshots",
           "diagnostics_figure", "plot_diagnostics", "plot_projection", "plot_redshift_panels",
           "plot_run", "plot_units", "projection_figure", "redshift_panels", "run_units",
           "snapshot_cosmology", "snapshot_units"]

AU_CM = 1.495978707e13                      # IAU 2012, exact
PC_CM = KPC_CM / 1e3
YR_S = GYR_S / 1e9                          # Julian year
#: candidate display units, smallest first: (name, size in cm or s)
LENGTHS = (("AU", AU_CM), ("pc", PC_CM), ("kpc", KPC_CM), ("Mpc", MPC_CM))
TIMES = (("yr", YR_S), ("kyr", 1e3 * YR_S), ("Myr", 1e6 * YR_S), ("Gyr", GYR_S))
NBODY_NAME = "N-body units"
#: the unit of quantities left unconverted (a cosmological snapshot's times; a cosmological
#: run's diagnostics where its snapshots state no units)
INTERNAL_NAME = "internal units"
#: the redshifts of the four panels of the Barnes-Hut oct-tree GPU paper's figure
REDSHIFTS = (8.9, 2.5, 0.93, 0.0)


@dataclass(frozen=True)
class PlotUnits:
    """How internal quantities are shown: a value in internal units times ``*_factor``
    is the value in the display unit ``length`` (e.g. "kpc"), ``time`` (e.g. "Myr") or
    ``mass`` (solar masses, or for a cosmological run in h units "M☉/h").  ``physical``
    false: N-body units, every factor 1.  ``cosmological``: the units of a cosmological
    run (:func:`snapshot_units`: comoving lengths, for its snapshots; :func:`run_units`:
    physical ones, for its diagnostics, which are then drawn against the scale factor
    where ``diagnostics.csv`` has it)."""

    length: str
    length_factor: float
    time: str
    time_factor: float
    mass_factor: float
    physical: bool = True
    cosmological: bool = False
    mass: str = "M☉"

    def label(self, what: str, unit: str) -> str:
        return f"{what} ({unit if self.physical else NBODY_NAME})"

    def length_label(self, what: str) -> str:
        """Axis label of a length, e.g. "x (kpc)"."""
        return self.label(what, self.length)

    def time_label(self, what: str = "time") -> str:
        """Axis label of a time, e.g. "time (Myr)"."""
        return self.label(what, self.time)

    @property
    def surface_density_label(self) -> str:
        """Colour bar label of a surface density, e.g. "surface density (M☉/kpc²)",
        "surface density (M☉/comoving Mpc²)" or, in h units,
        "surface density ((M☉/h)/(comoving Mpc/h)²)"."""
        mass = f"({self.mass})" if "/" in self.mass else self.mass
        length = f"({self.length})" if "/" in self.length else self.length
        return self.label("surface density", f"{mass}/{length}²")

    def time_text(self, t: float) -> str:
        """An internal time ``t`` for a title: "4.715 Myr", or "1 (N-body units)"."""
        value = t * self.time_factor
        return f"{value:.4g} {self.time}" if self.physical else f"{value:.4g} ({NBODY_NAME})"


#: a run that states no units
NBODY = PlotUnits(NBODY_NAME, 1.0, NBODY_NAME, 1.0, 1.0, physical=False)


def _pick(size: float, choices: tuple[tuple[str, float], ...], floor: float
          ) -> tuple[str, float]:
    """The largest of ``choices`` of which ``size`` is at least ``floor`` (else the
    smallest): (its name, ``size`` in it)."""
    name, unit = choices[0]
    for n, u in choices:
        if size >= floor * u:
            name, unit = n, u
    return name, size / unit


def plot_units(length_cm: float, mass_g: float, time_s: float) -> PlotUnits:
    """Display units for a run whose internal units are ``length_cm`` cm, ``mass_g`` g
    and ``time_s`` s.

    Length: the largest of AU, pc, kpc, Mpc of which one internal length is at least
    half (1 kpc -> kpc, 1 pc -> pc, 100 kpc -> kpc with factor 100).  Time: the largest
    of yr, kyr, Myr, Gyr of which one internal time is at least 1/100, since a run
    spans many time units (4.715 Myr -> Myr, 0.98 Gyr -> Gyr).  Masses in M☉.
    """
    length, lf = _pick(length_cm, LENGTHS, 0.5)
    time, tf = _pick(time_s, TIMES, 0.01)
    return PlotUnits(length, lf, time, tf, mass_g / MSUN_G)


@dataclass(frozen=True)
class SnapshotCosmology:
    """What a cosmological snapshot states about its cosmology and units (GADGET's
    convention): ``a`` the scale factor (``Header/Time``), ``redshift`` z
    (``Header/Redshift``, else 1/a − 1), ``h`` = H0 / (100 km/s/Mpc) (``HubbleParam``),
    ``omega0`` and ``omega_lambda`` (today), and the code units ``length_cm`` and
    ``mass_g``: comoving position in cm = ``Coordinates`` × ``length_cm`` / h (physical:
    that × a), mass in g = ``Masses`` × ``mass_g`` / h."""

    a: float
    redshift: float
    h: float
    omega0: float
    omega_lambda: float
    length_cm: float
    mass_g: float

    def units(self, h_units: bool = False) -> PlotUnits:
        """Display units of this snapshot's particles: comoving Mpc and M☉ (h taken out),
        or with ``h_units`` comoving Mpc/h and M☉/h.  Times stay in internal units."""
        h = 1.0 if h_units else self.h
        suffix = "/h" if h_units else ""
        return PlotUnits(f"comoving Mpc{suffix}", self.length_cm / h / MPC_CM, INTERNAL_NAME,
                         1.0, self.mass_g / h / MSUN_G, cosmological=True,
                         mass=f"M☉{suffix}")


#: GADGET's default code units where a cosmological file states none: 1 kpc/h, 1e10 M☉/h
GADGET_LENGTH_CM = KPC_CM
GADGET_MASS_G = MSUN_1E10_G


def _flag(value) -> bool:
    value = _attr(value)
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    try:
        return bool(value)
    except (TypeError, ValueError):     # an array: ambiguous
        return False


def snapshot_cosmology(path: str | Path) -> SnapshotCosmology | None:
    """The :class:`SnapshotCosmology` of the snapshot at ``path``, or None if it is not
    cosmological.  Cosmological: ``Header`` has ``HubbleParam`` > 0 and ``Omega0`` > 0,
    or ``Parameters`` has ``cosmology.enabled`` true (hybridtree's setting; h is then
    ``HubbleParam``, else ``cosmology.h``).  Units from the ``Units`` group,
    ``Parameters`` or ``Header`` (``UnitLength_in_cm``, ``UnitMass_in_g``), else
    hybridtree's ``units.length_cm``/``units.mass_g`` in ``Parameters``, else GADGET's
    defaults (1 kpc/h, 1e10 M☉/h).  ValueError for a cosmological snapshot without h > 0
    or without a scale factor or redshift."""
    path = Path(path)
    with _open(path) as f:
        header = f["Header"].attrs if "Header" in f else {}
        params = f["Parameters"].attrs if "Parameters" in f else {}
        h = attr_number(header, "HubbleParam")
        omega0 = attr_number(header, "Omega0")
        enabled = "cosmology.enabled" in params and _flag(params["cosmology.enabled"])
        if not (enabled or (h is not None and h > 0 and omega0 is not None and omega0 > 0)):
            return None
        if not (h is not None and h > 0):
            h = attr_number(params, "cosmology.h") or attr_number(params, "HubbleParam")
        if not (h is not None and h > 0 and np.isfinite(h)):
            raise ValueError(f"{path}: a cosmological snapshot without HubbleParam > 0")
        a = attr_number(header, "Time")
        z = attr_number(header, "Redshift")
        if not (a is not None and a > 0):
            if z is None or z <= -1:
                raise ValueError(f"{path}: a cosmological snapshot without a scale factor "
                                 "(Header/Time) or redshift (Header/Redshift)")
            a = 1.0 / (1.0 + z)
        if z is None:
            z = 1.0 / a - 1.0
        length_cm = mass_g = None
        for group in ("Units", "Parameters", "Header"):
            attrs = f[group].attrs if group in f else {}
            length_cm = length_cm or attr_number(attrs, "UnitLength_in_cm")
            mass_g = mass_g or attr_number(attrs, "UnitMass_in_g")
        # hybridtree's own settings, then GADGET's defaults
        length_cm = length_cm or attr_number(params, "units.length_cm") or GADGET_LENGTH_CM
        mass_g = mass_g or attr_number(params, "units.mass_g") or GADGET_MASS_G
        if omega0 is None:
            omega0 = attr_number(params, "cosmology.omega_m") or 0.0
        omega_lambda = attr_number(header, "OmegaLambda")
        if omega_lambda is None:
            omega_lambda = attr_number(params, "cosmology.omega_lambda") or 0.0
        return SnapshotCosmology(a, z, h, omega0, omega_lambda, length_cm, mass_g)


def snapshot_units(path: str | Path, h_units: bool = False) -> PlotUnits:
    """The display units of the snapshot at ``path``, from the units it states: the
    ``Units`` group or GADGET-4's ``UnitLength_in_cm``/``UnitMass_in_g`` in
    ``Parameters`` (with the file's own ``UnitTime_in_s`` where given: GADGET's internal
    units do not have G = 1), else hybridtree's ``units.length_cm``/``units.mass_g``
    settings in ``Parameters`` (G = 1); :data:`NBODY` if it states none.

    A cosmological snapshot (:func:`snapshot_cosmology`): comoving Mpc and M☉ (or with
    ``h_units`` comoving Mpc/h and M☉/h), times in internal units
    (:meth:`SnapshotCosmology.units`)."""
    cosmo = snapshot_cosmology(path)
    if cosmo is not None:
        return cosmo.units(h_units)
    with _open(Path(path)) as f:
        stated = _file_units(f)
        if stated is not None:
            units, _, time_s = stated
            return plot_units(units.length_cm, units.mass_g, time_s)
        params = f["Parameters"].attrs if "Parameters" in f else {}
        if "units.length_cm" in params and "units.mass_g" in params:
            units = Units(float(params["units.length_cm"]), float(params["units.mass_g"]))
            return plot_units(units.length_cm, units.mass_g, units.time_s)
    return NBODY


def run_units(path: str | Path) -> PlotUnits:
    """The display units of the diagnostics (``diagnostics.csv``, internal units) of the
    run that wrote the snapshot at ``path``: :func:`snapshot_units`, except for a
    cosmological run, which works in physical coordinates: its lengths in physical units
    of the stated ``UnitLength_in_cm`` (e.g. "physical Mpc", h not involved) and its time
    in the stated ``UnitTime_in_s`` (e.g. Gyr), flagged ``cosmological`` (so that the
    diagnostics are drawn against the scale factor where the CSV has it); internal units
    where the file states none."""
    if snapshot_cosmology(path) is None:
        return snapshot_units(path)
    with _open(Path(path)) as f:
        stated = _file_units(f)
    if stated is None:
        return PlotUnits(INTERNAL_NAME, 1.0, INTERNAL_NAME, 1.0, 1.0, cosmological=True)
    units, _, time_s = stated
    u = plot_units(units.length_cm, units.mass_g, time_s)
    return replace(u, length=f"physical {u.length}", cosmological=True)


def _save(fig: Figure, path: Path) -> Path:
    # A reader (an image viewer refreshing, a web page) never sees half a file.
    tmp = atomic_path(path)
    try:
        fig.savefig(tmp, format="png", dpi=120)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _column(rows: list[dict[str, str]], name: str) -> np.ndarray:
    # Rows kept across a restart, or columns added later, may be blank or absent.
    def value(text: str | None) -> float:
        try:
            return float(text) if text else np.nan
        except ValueError:
            return np.nan
    return np.array([value(r.get(name)) for r in rows])


def _positive(y: np.ndarray) -> np.ndarray:
    # A log axis cannot show 0 (e.g. the first step's energy error): leave a gap instead.
    return np.where(y > 0, y, np.nan)


def diagnostics_figure(csv_path: Path, units: PlotUnits = NBODY) -> Figure:
    """Relative energy error |ΔE/E₀| (dimensionless) and the 10/50/90 % Lagrangian radii
    against time, from ``diagnostics.csv`` (internal units), shown in ``units``.

    A cosmological run (``units.cosmological``, see :func:`run_units`): where the CSV has
    a column ``a`` (the scale factor) with values, both panels are drawn against a on a
    log axis instead of against the time t."""
    rows = read_diagnostics(csv_path)
    t = _column(rows, "time") * units.time_factor
    x_label = units.time_label()
    if units.cosmological:
        a = _positive(_column(rows, "a"))
        if np.isfinite(a).any():
            t, x_label = a, "scale factor a"
    fig = Figure(figsize=(7, 6), layout="constrained")
    ax_e, ax_r = fig.subplots(2, 1, sharex=True)
    de = _positive(np.abs(_column(rows, "rel_energy_error")))
    # one curve, named by the axis label: a legend would only cover part of it
    ax_e.plot(t, de, color="C3")
    if np.isfinite(de).any():
        ax_e.set_yscale("log")
    ax_e.set_ylabel("|ΔE / E₀|")
    drew = False
    for name, label in (("r10", "10 %"), ("r50", "50 %"), ("r90", "90 %")):
        r = _positive(_column(rows, name)) * units.length_factor
        ax_r.plot(t, r, label=label)
        drew |= bool(np.isfinite(r).any())
    if drew:
        ax_r.set_yscale("log")
    if x_label == "scale factor a":
        ax_r.set_xscale("log")
    ax_r.set_ylabel(units.length_label("Lagrangian radius"))
    ax_r.set_xlabel(x_label)
    # outside the axes, right of them: the radii span the whole height, so no corner
    # inside is sure to stay clear of them
    ax_r.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0,
                title="mass within")
    ax_e.set_title(f"{csv_path.parent.name}: energy error and Lagrangian radii")
    return fig


def plot_diagnostics(csv_path: Path, out: Path, units: PlotUnits | None = None) -> Path:
    """Write :func:`diagnostics_figure` to ``out`` (PNG); ``units`` default: those of the
    run of the newest snapshot beside ``csv_path`` (:func:`run_units`; N-body units
    without one)."""
    if units is None:
        snap = latest_snapshot(Path(csv_path).parent)
        units = run_units(snap) if snap is not None else NBODY
    return _save(diagnostics_figure(Path(csv_path), units), out)


@dataclass
class _Map:
    """A surface density map: ``sigma`` (masked where empty; x along the second axis
    after the transpose that imshow takes) in M☉ per squared display length, over
    ``extent`` (x0, x1, y0, y1) in display lengths."""

    sigma: np.ma.MaskedArray
    extent: tuple[float, float, float, float]
    count: int


def _comoving_xy(snapshot: Path, units: PlotUnits) -> tuple[np.ndarray, np.ndarray]:
    """(x-y positions in ``units``' comoving lengths, masses in its M☉) of the finite
    particles of a cosmological ``snapshot``, from the columns as stored (comoving
    ``Coordinates`` in UnitLength/h, ``Masses`` in UnitMass/h)."""
    cols = _read_set(snapshot, "all", (0, 1))[0]
    pos, mass = cols["pos"], cols["mass"]
    ok = np.isfinite(pos).all(axis=1)
    if not ok.any():
        raise ValueError(f"{snapshot}: no particles with finite positions to plot")
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
    h /= (2 * half / bins) ** 2                 # mass per pixel -> per unit area
    # empty bins: background colour, not log(0)
    return _Map(np.ma.masked_less_equal(h.T, 0.0), (lo[0], hi[0], lo[1], hi[1]), len(xy))


def _draw(ax, m: _Map, units: PlotUnits, norm: LogNorm | None):
    """``m`` on ``ax`` (black background, equal axes); returns the image or None."""
    ax.set_facecolor("black")
    im = None
    if m.sigma.count():
        im = ax.imshow(m.sigma, origin="lower", extent=m.extent, cmap="inferno",
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
    xy, mass = _comoving_xy(snapshot, cosmo.units(h_units))
    centre = _centre(xy, mass)
    half = width / 2 if width is not None else _sphere_half(xy, centre)
    return _surface_density(xy, mass, centre, half, bins)


def _check_width(width: float | None) -> None:
    if width is not None and not (np.isfinite(width) and width > 0):
        raise ValueError(f"width must be a positive length (comoving Mpc), not {width!r}")


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
        raise ValueError(f"{snapshot}: width is for cosmological snapshots only")
    units = snapshot_units(snapshot)
    particles, time, _ = read_particles(snapshot, "all")
    ok = np.isfinite(particles.pos).all(axis=1)
    xy = particles.pos[ok, :2] * units.length_factor
    mass = particles.mass[ok] * units.mass_factor
    if not len(xy):
        raise ValueError(f"{snapshot}: no particles with finite positions to plot")
    centre = _centre(xy, mass)
    # Half-width from the central 98 %, so a few escapers do not shrink the cluster to a dot.
    half = float(np.quantile(np.abs(xy - centre).max(axis=1), 0.98)) * 1.05
    if not half > 0:
        half = 1.0
    m = _surface_density(xy, mass, centre, half, bins)
    return _map_figure(m, units, f"{snapshot.name}: t = {units.time_text(time)}, N = {len(xy)}")


def _map_figure(m, units, title: str) -> Figure:
    """One projected map with its colour bar (surface density) and ``title``."""
    fig = Figure(figsize=(6, 5.4), layout="constrained")
    ax = fig.subplots()
    im = _draw(ax, m, units, None)
    if im is not None:
        fig.colorbar(im, ax=ax, label=units.surface_density_label)
    ax.set_title(title)
    return fig


def plot_projection(snapshot: Path, out: Path, bins: int = 256, width: float | None = None,
                    h_units: bool = False) -> Path:
    """Write :func:`projection_figure` of ``snapshot`` to ``out`` (PNG)."""
    return _save(projection_figure(Path(snapshot), bins, width, h_units), out)


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
        raise ValueError("redshift_panels needs at least one redshift")
    chosen = [min(snaps, key=lambda s: abs(s[1].redshift - z)) for z in redshifts]
    units = chosen[0][1].units(h_units)
    data = {}                           # each snapshot once: (x-y, masses, centre of mass)
    for snap, cosmo in dict.fromkeys(chosen):
        xy, mass = _comoving_xy(snap, cosmo.units(h_units))
        data[snap, cosmo] = xy, mass, _centre(xy, mass)
    half = (width / 2 if width is not None else
            max(_sphere_half(xy, centre) for xy, _, centre in data.values()))
    maps = {key: _surface_density(xy, mass, centre, half, bins)
            for key, (xy, mass, centre) in data.items()}
    filled = [m.sigma for m in maps.values() if m.sigma.count()]
    norm = (LogNorm(vmin=min(s.min() for s in filled), vmax=max(s.max() for s in filled))
            if filled else None)
    rows = 2 if len(chosen) == 4 else 1
    cols = -(-len(chosen) // rows)
    fig = Figure(figsize=(4.2 * cols + 1.2, 4.2 * rows + 0.6), layout="constrained")
    axes = list(fig.subplots(rows, cols, squeeze=False).ravel())
    im = None
    for ax, (snap, cosmo) in zip(axes, chosen):
        im = _draw(ax, maps[(snap, cosmo)], units, norm) or im
        ax.set_title(f"z = {cosmo.redshift:.2f} ({snap.stem})")
    if im is not None:
        fig.colorbar(im, ax=axes, label=units.surface_density_label)
    fig.suptitle(f"{folder.name}: projected density")
    return fig


def plot_redshift_panels(folder: str | Path, out: Path,
                         redshifts: tuple[float, ...] = REDSHIFTS, width: float | None = None,
                         bins: int = 256, h_units: bool = False) -> Path:
    """Write :func:`redshift_panels` of ``folder`` to ``out`` (PNG)."""
    return _save(redshift_panels(folder, redshifts, width, bins, h_units), out)


def _has_rows(csv_path: Path) -> bool:
    """Whether ``diagnostics.csv`` has at least one row with a time to plot against."""
    try:
        return bool(np.isfinite(_column(read_diagnostics(csv_path), "time")).any())
    except (OSError, UnicodeDecodeError):
        return False


def plot_run(folder: str | Path, snapshot: str | Path | None = None) -> list[Path]:
    """Write ``diagnostics.png`` and ``<snapshot>_xy.png`` into ``folder``, and for a
    cosmological run (a folder holding cosmological snapshots) ``redshift_panels.png``
    (:func:`redshift_panels` at z = 8.9, 2.5, 0.93, 0); return their paths.
    ``snapshot`` (a path, or a name inside ``folder``) defaults to the last one."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no such folder: {folder}")
    if snapshot is not None:
        snap: Path | None = Path(snapshot)
        if not snap.is_file() and (folder / snap).is_file():
            snap = folder / snap
        if not snap.is_file():
            raise FileNotFoundError(f"no such snapshot: {snapshot}")
    else:
        snap = latest_snapshot(folder)
    csv_path = folder / "diagnostics.csv"
    have_csv = csv_path.is_file()
    if not have_csv and snap is None:
        raise FileNotFoundError(f"nothing to plot in {folder}: "
                                "no diagnostics.csv and no snapshot_*.hdf5")
    if have_csv and not _has_rows(csv_path):
        # a run that stopped before its first report: its axes would be empty
        if snap is None:
            raise FileNotFoundError(f"nothing to plot in {folder}: no snapshot_*.hdf5 and "
                                    "no rows in diagnostics.csv")
        have_csv = False
    written = []
    if have_csv:
        # the run's own snapshots know its units; a chosen one may be from elsewhere
        own = latest_snapshot(folder) or snap
        units = run_units(own) if own is not None else NBODY
        written.append(plot_diagnostics(csv_path, folder / "diagnostics.png", units))
    if snap is not None:
        written.append(plot_projection(snap, folder / f"{snap.stem}_xy.png"))
    if cosmological_snapshots(folder):
        written.append(plot_redshift_panels(folder, folder / "redshift_panels.png"))
    return written
