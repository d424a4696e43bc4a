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
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure

from .config import KPC_CM, MSUN_1E10_G
from .diagnostics import read_diagnostics
from .io.snapshot import _file_units, _open, atomic_path, latest_snapshot, read_particles
from .units import GYR_S, Units

__all__ = ["NBODY", "PlotUnits", "diagnostics_figure", "plot_diagnostics", "plot_projection",
           "plot_run", "plot_units", "projection_figure", "snapshot_units"]

AU_CM = 1.495978707e13                      # IAU 2012, exact
PC_CM = KPC_CM / 1e3
MPC_CM = KPC_CM * 1e3
MSUN_G = MSUN_1E10_G / 1e10
YR_S = GYR_S / 1e9                          # Julian year
#: candidate display units, smallest first: (name, size in cm or s)
LENGTHS = (("AU", AU_CM), ("pc", PC_CM), ("kpc", KPC_CM), ("Mpc", MPC_CM))
TIMES = (("yr", YR_S), ("kyr", 1e3 * YR_S), ("Myr", 1e6 * YR_S), ("Gyr", GYR_S))
NBODY_NAME = "N-body units"


@dataclass(frozen=True)
class PlotUnits:
    """How internal quantities are shown: a value in internal units times ``*_factor``
    is the value in the display unit ``length`` (e.g. "kpc"), ``time`` (e.g. "Myr") or
    solar masses.  ``physical`` false: N-body units, every factor 1."""

    length: str
    length_factor: float
    time: str
    time_factor: float
    mass_factor: float
    physical: bool = True

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
        """Colour bar label of a surface density, e.g. "surface density (M☉/kpc²)"."""
        return self.label("surface density", f"M☉/{self.length}²")

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


def snapshot_units(path: str | Path) -> PlotUnits:
    """The display units of the snapshot at ``path``, from the units it states: the
    ``Units`` group or GADGET-4's ``UnitLength_in_cm``/``UnitMass_in_g`` in
    ``Parameters`` (with the file's own ``UnitTime_in_s`` where given: GADGET's internal
    units do not have G = 1), else hybridtree's ``units.length_cm``/``units.mass_g``
    settings in ``Parameters`` (G = 1); :data:`NBODY` if it states none."""
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
    against time, from ``diagnostics.csv`` (internal units), shown in ``units``."""
    rows = read_diagnostics(csv_path)
    t = _column(rows, "time") * units.time_factor
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
    ax_r.set_ylabel(units.length_label("Lagrangian radius"))
    ax_r.set_xlabel(units.time_label())
    # outside the axes, right of them: the radii span the whole height, so no corner
    # inside is sure to stay clear of them
    ax_r.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0,
                title="mass within")
    ax_e.set_title(f"{csv_path.parent.name}: energy error and Lagrangian radii")
    return fig


def plot_diagnostics(csv_path: Path, out: Path, units: PlotUnits | None = None) -> Path:
    """Write :func:`diagnostics_figure` to ``out`` (PNG); ``units`` default: those of the
    newest snapshot beside ``csv_path`` (N-body units without one)."""
    if units is None:
        snap = latest_snapshot(Path(csv_path).parent)
        units = snapshot_units(snap) if snap is not None else NBODY
    return _save(diagnostics_figure(Path(csv_path), units), out)


def projection_figure(snapshot: Path, bins: int = 256) -> Figure:
    """The mass-weighted x-y projection of ``snapshot`` as a surface density map
    (``bins`` × ``bins`` pixels, log colour scale), in the snapshot's own units
    (:func:`snapshot_units`): M☉ per squared length unit, e.g. M☉/kpc²."""
    units = snapshot_units(snapshot)
    particles, time, _ = read_particles(snapshot, "all")
    ok = np.isfinite(particles.pos).all(axis=1)
    xy = particles.pos[ok, :2] * units.length_factor
    mass = particles.mass[ok] * units.mass_factor
    if not len(xy):
        raise ValueError(f"{snapshot}: no particles with finite positions to plot")
    centre = (np.average(xy, axis=0, weights=mass) if mass.sum() > 0 else xy.mean(axis=0))
    # Half-width from the central 98 %, so a few escapers do not shrink the cluster to a dot.
    half = float(np.quantile(np.abs(xy - centre).max(axis=1), 0.98)) * 1.05
    if not half > 0:
        half = 1.0
    lo, hi = centre - half, centre + half
    h, _, _ = np.histogram2d(xy[:, 0], xy[:, 1], bins=bins, weights=mass,
                             range=[[lo[0], hi[0]], [lo[1], hi[1]]])
    h /= (2 * half / bins) ** 2                 # mass per pixel -> per unit area
    h = np.ma.masked_less_equal(h, 0.0)  # empty bins: background colour, not log(0)
    fig = Figure(figsize=(6, 5.4), layout="constrained")
    ax = fig.subplots()
    ax.set_facecolor("black")
    if h.count():
        im = ax.imshow(h.T, origin="lower", extent=(lo[0], hi[0], lo[1], hi[1]),
                       norm=LogNorm(vmin=h.min(), vmax=h.max()), cmap="inferno",
                       interpolation="nearest")
        fig.colorbar(im, ax=ax, label=units.surface_density_label)
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    ax.set_aspect("equal")
    ax.set_xlabel(units.length_label("x"))
    ax.set_ylabel(units.length_label("y"))
    ax.set_title(f"{snapshot.name}: t = {units.time_text(time)}, N = {len(xy)}")
    return fig


def plot_projection(snapshot: Path, out: Path, bins: int = 256) -> Path:
    """Write :func:`projection_figure` of ``snapshot`` to ``out`` (PNG)."""
    return _save(projection_figure(Path(snapshot), bins), out)


def _has_rows(csv_path: Path) -> bool:
    """Whether ``diagnostics.csv`` has at least one row with a time to plot against."""
    try:
        return bool(np.isfinite(_column(read_diagnostics(csv_path), "time")).any())
    except (OSError, UnicodeDecodeError):
        return False


def plot_run(folder: str | Path, snapshot: str | Path | None = None) -> list[Path]:
    """Write ``diagnostics.png`` and ``<snapshot>_xy.png`` into ``folder``; return their
    paths.  ``snapshot`` (a path, or a name inside ``folder``) defaults to the last one."""
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
        units = snapshot_units(own) if own is not None else NBODY
        written.append(plot_diagnostics(csv_path, folder / "diagnostics.png", units))
    if snap is not None:
        written.append(plot_projection(snap, folder / f"{snap.stem}_xy.png"))
    return written
