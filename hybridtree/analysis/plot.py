"""Pictures of a run's output folder, for ``hybridtree plot FOLDER`` (or ``hybridtree plot
SNAPSHOT``: the projection of that snapshot, and the diagnostics of the run folder it sits
in: :func:`plot_snapshot`).

``diagnostics.png``: relative energy error (|ΔE/E₀|; a cosmological sphere's |ΔE/W|, W its
gravitational potential energy, as its run measures it) and Lagrangian radii against
time, from ``diagnostics.csv``.  ``snapshot_NNNN_xy.png``: the surface density of an x-y
projection of a snapshot (the last one unless told; a snapshot of several particle types
gets a column per type, each zoomed to the radius holding 90 % of that type's mass).
Either is skipped when its input is missing (a ``diagnostics.csv`` without rows counts
as missing); with neither, it is an error.

Axes are in physical units when the run states its units (a snapshot's ``Units`` group,
GADGET-4's unit attributes in ``Parameters``, or hybridtree's ``units.*`` settings there;
see :func:`snapshot_units`): lengths in AU, pc, kpc or Mpc, times in yr, kyr, Myr or Gyr,
masses in solar masses.  Times are also given in the run's internal units, as its config
and console lines give them (a second time axis; "t = 4 (18.86 Myr)" in titles).  A
snapshot stating none (e.g. initial conditions from another tool) is plotted in N-body
units.  ``diagnostics.csv`` holds internal units only; its run's units come from the run's
snapshots in the same folder.  Log axes read in plain numbers where these are of everyday
size (0.3, 2, 300); a map's foot says what its black pixels and its colour bar's floor
mean (no particle; one particle per pixel).

Cosmological snapshots (GADGET's convention, see :func:`snapshot_cosmology`: ``Header``
``Time`` = scale factor a, ``Redshift``, ``HubbleParam`` = h, comoving ``Coordinates`` in
UnitLength/h, ``Masses`` in UnitMass/h) are drawn in comoving Mpc with h taken out (or in
comoving Mpc/h on request), surface densities in M☉ per comoving Mpc², with the redshift in
the title.  For a folder holding a cosmological run ``plot_run`` also writes
``redshift_panels.png`` (:func:`redshift_panels`: the projected density at z = 8.9, 2.5,
0.93 and 0 on one colour scale), and plots the energy error against the scale factor a
when ``diagnostics.csv`` has a column ``a``.

The figures are built in :mod:`hybridtree.analysis.figure_diagnostics` and
:mod:`hybridtree.analysis.figure_maps`, in the units of :mod:`hybridtree.analysis.figure_units`, with the
numbers of :mod:`hybridtree.analysis.figure_text`; this module writes them (every PNG through
:func:`save_figure`, the seam where the tests see each figure saved).
"""

from __future__ import annotations

import os
from pathlib import Path

import h5py
from matplotlib.figure import Figure

from ..errors import UserInputError
from .figure_diagnostics import diagnostics_figure, has_rows
from .figure_maps import (REDSHIFTS, cosmological_snapshots, projection_figure,
                          redshift_panels)
from .figure_units import (NBODY, PlotUnits, SnapshotCosmology, plot_units, run_units,
                           snapshot_cosmology, snapshot_units)
from ..io.snapshot import SnapshotError, atomic_path, latest_snapshot, resolve_snapshot

__all__ = ["NBODY", "REDSHIFTS", "PlotUnits", "SnapshotCosmology", "cosmological_snapshots",
           "diagnostics_figure", "energy_norm", "plot_diagnostics", "plot_projection",
           "plot_redshift_panels", "plot_run", "plot_snapshot", "plot_units",
           "projection_figure", "redshift_panels", "run_units", "save_figure",
           "snapshot_cosmology", "snapshot_units"]


def save_figure(fig: Figure, path: Path) -> Path:
    """Write ``fig`` to ``path`` (PNG, 120 dpi) under its final name at once; every figure
    of this module goes through this module function (tests wrap it to measure them)."""
    # A reader (an image viewer refreshing, a web page) never sees half a file.
    tmp = atomic_path(path)
    try:
        fig.savefig(tmp, format="png", dpi=120)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path



def plot_diagnostics(csv_path: Path, out: Path, units: PlotUnits | None = None,
                     norm: str | None = None) -> Path:
    """Write :func:`diagnostics_figure` to ``out`` (PNG); ``units`` and the energy
    error's ``norm`` default: those of the run of the newest snapshot beside ``csv_path``
    (:func:`run_units`, :func:`energy_norm`; N-body units and E₀ without one)."""
    if units is None or norm is None:
        snap = latest_snapshot(Path(csv_path).parent)
        units = units or (run_units(snap) if snap is not None else NBODY)
        norm = norm or energy_norm(snap)
    return save_figure(diagnostics_figure(Path(csv_path), units, norm), out)


def energy_norm(snap: Path | None) -> str:
    """What the energy error of the run that wrote ``snap`` is relative to: "W" (the
    gravitational potential energy) for a cosmological sphere with a Λ term, whose
    energy is nearly 0; else "E0" (the initial energy; also without a snapshot)."""
    cosmo = snapshot_cosmology(snap) if snap is not None else None
    if cosmo is None or cosmo.omega_lambda <= 0:
        return "E0"
    with h5py.File(snap, "r") as f:
        box = float(f["Header"].attrs.get("BoxSize", 0.0)) if "Header" in f else 0.0
    return "E0" if box > 0 else "W"


def plot_projection(snapshot: Path, out: Path, bins: int = 256, width: float | None = None,
                    h_units: bool = False) -> Path:
    """Write :func:`projection_figure` of ``snapshot`` to ``out`` (PNG)."""
    return save_figure(projection_figure(Path(snapshot), bins, width, h_units), out)


def plot_redshift_panels(folder: str | Path, out: Path,
                         redshifts: tuple[float, ...] = REDSHIFTS, width: float | None = None,
                         bins: int = 256, h_units: bool = False) -> Path:
    """Write :func:`redshift_panels` of ``folder`` to ``out`` (PNG)."""
    return save_figure(redshift_panels(folder, redshifts, width, bins, h_units), out)


def _snapshot_file(path: Path) -> Path:
    """The snapshot file that ``path`` (not a folder) names: the file itself or the stem of
    one (``out/snapshot_0002``, see :func:`resolve_snapshot`); FileNotFoundError if there
    is none, ValueError if it is not an HDF5 file."""
    if not path.exists():
        try:
            path = resolve_snapshot(path)
        except SnapshotError:
            raise FileNotFoundError(f"no such run folder or snapshot file: {path}") from None
    if not (path.is_file() and h5py.is_hdf5(path)):
        raise SnapshotError(f"expects a run folder (the folder a run wrote) or a snapshot file, "
                            f"got {path}: not an HDF5 file")
    return path


def plot_run(folder: str | Path, snapshot: str | Path | None = None) -> list[Path]:
    """Write ``diagnostics.png`` and ``<snapshot>_xy.png`` into ``folder``, and for a
    cosmological run (a folder holding cosmological snapshots) ``redshift_panels.png``
    (:func:`redshift_panels` at z = 8.9, 2.5, 0.93, 0); return their paths.
    ``snapshot`` (a path, or a name inside ``folder``) defaults to the last one.

    ``folder`` may be a snapshot file instead (or its stem; ``snapshot`` not given): then
    :func:`plot_snapshot` of it."""
    folder = Path(folder)
    if not folder.is_dir():
        file = _snapshot_file(folder)
        if snapshot is not None:
            raise UserInputError(f"a snapshot to draw (--snapshot {snapshot}) goes with a run "
                                 f"folder, not with a snapshot file ({file}): give the run "
                                 "folder and the snapshot, or the snapshot file alone")
        return plot_snapshot(file)
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
    if have_csv and not has_rows(csv_path):
        # a run that stopped before its first report: its axes would be empty
        if snap is None:
            raise FileNotFoundError(f"nothing to plot in {folder}: no snapshot_*.hdf5 and "
                                    "no rows in diagnostics.csv")
        have_csv = False
    written = _diagnostics(folder, snap) if have_csv else []
    if snap is not None:
        written.append(plot_projection(snap, folder / f"{snap.stem}_xy.png"))
    if cosmological_snapshots(folder):
        written.append(plot_redshift_panels(folder, folder / "redshift_panels.png"))
    return written


def plot_snapshot(snapshot: str | Path) -> list[Path]:
    """What can be drawn of one snapshot file (``hybridtree plot FILE``), beside it: the
    diagnostics of the run whose folder it sits in (``diagnostics.png``, where that folder
    has a ``diagnostics.csv`` with rows), then its projection ``<snapshot>_xy.png``;
    return their paths."""
    snap = _snapshot_file(Path(snapshot))
    folder = snap.parent
    csv_path = folder / "diagnostics.csv"
    written = _diagnostics(folder, snap) if csv_path.is_file() and has_rows(csv_path) else []
    written.append(plot_projection(snap, folder / f"{snap.stem}_xy.png"))
    return written


def _diagnostics(folder: Path, snap: Path | None) -> list[Path]:
    """[``diagnostics.png``] of the run in ``folder``, in the units of its newest snapshot
    (else of ``snap``; N-body units without either)."""
    # the run's own snapshots know its units; a chosen one may be from elsewhere
    own = latest_snapshot(folder) or snap
    units = run_units(own) if own is not None else NBODY
    return [plot_diagnostics(folder / "diagnostics.csv", folder / "diagnostics.png", units,
                             energy_norm(own))]
