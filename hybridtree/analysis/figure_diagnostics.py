"""The diagnostics figure of ``hybridtree plot`` (see :mod:`hybridtree.analysis.plot`): relative
energy error and Lagrangian radii against time, from a run's ``diagnostics.csv``."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

import numpy as np
from matplotlib.figure import Figure

from .diagnostics import read_diagnostics
from .figure_text import plain_log_ticks
from .figure_units import NBODY, PlotUnits

__all__ = ["ENERGY_LABELS", "INTERNAL_TIME_LABEL", "diagnostics_figure", "has_rows"]

#: the energy panel's label by the norm of the run's ``rel_energy_error``: E₀, the initial
#: energy, or W, the gravitational potential energy (a cosmological sphere with a Λ term,
#: whose E is nearly 0: :meth:`hybridtree.run.output.RunOutput.energy_error`)
ENERGY_LABELS = MappingProxyType({"E0": "|ΔE / E₀|",
                                  "W": "|ΔE / W|  (W: gravitational potential energy)"})

#: the label of the second time axis: the times a run's config and console lines give
INTERNAL_TIME_LABEL = "t (internal units, as in the config and the console)"


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


def diagnostics_figure(csv_path: Path, units: PlotUnits = NBODY, norm: str = "E0") -> Figure:
    """Relative energy error |ΔE/E₀| (dimensionless; ``norm`` "W": |ΔE/W|, as a
    cosmological sphere's run measures it, see :data:`ENERGY_LABELS`) and the 10/50/90 %
    Lagrangian radii against time, from ``diagnostics.csv`` (internal units), shown in
    ``units``.  Where ``units`` converts times (e.g. to Myr), a second time axis on top
    gives the run's internal time t, as its config and console lines do.  Log axes are labelled in plain
    numbers where they are of everyday size (0.3, 2, 300).

    A cosmological run (``units.cosmological``, see :func:`run_units`): where the CSV has
    a column ``a`` (the scale factor) with values, both panels are drawn against a on a
    log axis instead of against the time t."""
    rows = read_diagnostics(csv_path)
    t = _column(rows, "time") * units.time_factor
    x_label = units.time_label()
    internal_axis = units.converts_time
    if units.cosmological:
        a = _positive(_column(rows, "a"))
        if np.isfinite(a).any():
            t, x_label, internal_axis = a, "scale factor a", False
    fig = Figure(figsize=(7, 6), layout="constrained")
    ax_e, ax_r = fig.subplots(2, 1, sharex=True)
    de = _positive(np.abs(_column(rows, "rel_energy_error")))
    # one curve, named by the axis label: a legend would only cover part of it
    ax_e.plot(t, de, color="C3")
    if np.isfinite(de).any():
        ax_e.set_yscale("log")
        plain_log_ticks(ax_e.yaxis)
    ax_e.set_ylabel(ENERGY_LABELS[norm])
    drew = False
    for name, label in (("r10", "10 %"), ("r50", "50 %"), ("r90", "90 %")):
        r = _positive(_column(rows, name)) * units.length_factor
        ax_r.plot(t, r, label=label)
        drew |= bool(np.isfinite(r).any())
    if drew:
        ax_r.set_yscale("log")
        plain_log_ticks(ax_r.yaxis)
    if x_label == "scale factor a":
        ax_r.set_xscale("log")
        plain_log_ticks(ax_r.xaxis)
    if internal_axis:
        f = units.time_factor
        top = ax_e.secondary_xaxis("top", functions=(lambda x: x / f, lambda x: x * f))
        top.set_xlabel(INTERNAL_TIME_LABEL)
    ax_r.set_ylabel(units.length_label("Lagrangian radius"))
    ax_r.set_xlabel(x_label)
    # outside the axes, right of them: the radii span the whole height, so no corner
    # inside is sure to stay clear of them
    ax_r.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0,
                title="mass within")
    ax_e.set_title(f"{csv_path.parent.name}: energy error and Lagrangian radii")
    return fig


def has_rows(csv_path: Path) -> bool:
    """Whether ``diagnostics.csv`` has at least one row with a time to plot against."""
    try:
        return bool(np.isfinite(_column(read_diagnostics(csv_path), "time")).any())
    except (OSError, UnicodeDecodeError):
        return False
