"""Pictures of a run's output folder, for ``hybridtree plot FOLDER``.

``diagnostics.png``: relative energy error and Lagrangian radii against time, from
``diagnostics.csv``.  ``snapshot_NNNN_xy.png``: a mass-weighted x-y projection of a
snapshot (the last one unless told).  Either is skipped when its input is missing (a
``diagnostics.csv`` without rows counts as missing); with neither, it is an error.
"""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: must work without a display (clusters, CI)
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.colors import LogNorm  # noqa: E402

from .diagnostics import read_diagnostics  # noqa: E402
from .io.snapshot import atomic_path, latest_snapshot, read_particles  # noqa: E402
from .units import GYR_S  # noqa: E402



def _save(fig: plt.Figure, path: Path) -> Path:
    # A reader (an image viewer refreshing, a web page) never sees half a file.
    tmp = atomic_path(path)
    try:
        fig.savefig(tmp, format="png", dpi=120)
        os.replace(tmp, path)
    finally:
        plt.close(fig)
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


def plot_diagnostics(csv_path: Path, out: Path) -> Path:
    rows = read_diagnostics(csv_path)
    t = _column(rows, "time")
    fig, (ax_e, ax_r) = plt.subplots(2, 1, sharex=True, figsize=(7, 6), constrained_layout=True)
    de = _positive(np.abs(_column(rows, "rel_energy_error")))
    ax_e.plot(t, de, color="C3", label="|ΔE/E|")
    if np.isfinite(de).any():
        ax_e.set_yscale("log")
    ax_e.set_ylabel("|ΔE / E₀|")
    ax_e.legend(loc="best")
    drew = False
    for name, label in (("r10", "10 %"), ("r50", "50 %"), ("r90", "90 %")):
        r = _positive(_column(rows, name))
        ax_r.plot(t, r, label=f"{label} of mass")
        drew |= bool(np.isfinite(r).any())
    if drew:
        ax_r.set_yscale("log")
    ax_r.set_ylabel("Lagrangian radius (internal units)")
    ax_r.set_xlabel("time (internal units)")
    ax_r.legend(loc="best")
    ax_e.set_title(f"{csv_path.parent.name}: energy error and Lagrangian radii")
    return _save(fig, out)


def plot_projection(snapshot: Path, out: Path, bins: int = 256) -> Path:
    particles, time, units = read_particles(snapshot, "all")
    ok = np.isfinite(particles.pos).all(axis=1)
    xy, mass = particles.pos[ok, :2], particles.mass[ok]
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
    h = np.ma.masked_less_equal(h, 0.0)  # empty bins: background colour, not log(0)
    fig, ax = plt.subplots(figsize=(6, 5.4), constrained_layout=True)
    ax.set_facecolor("black")
    if h.count():
        im = ax.imshow(h.T, origin="lower", extent=(lo[0], hi[0], lo[1], hi[1]),
                       norm=LogNorm(vmin=h.min(), vmax=h.max()), cmap="inferno",
                       interpolation="nearest")
        fig.colorbar(im, ax=ax, label="mass per pixel (internal units)")
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    ax.set_aspect("equal")
    ax.set_xlabel("x (internal units)")
    ax.set_ylabel("y (internal units)")
    title = f"{snapshot.name}: t = {time:.4g}"
    if units is not None:
        title += f" ({time * units.time_s / GYR_S * 1e3:.4g} Myr)"
    ax.set_title(f"{title}, N = {len(xy)}")
    return _save(fig, out)


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
        written.append(plot_diagnostics(csv_path, folder / "diagnostics.png"))
    if snap is not None:
        written.append(plot_projection(snap, folder / f"{snap.stem}_xy.png"))
    return written
