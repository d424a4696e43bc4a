"""Display units of ``hybridtree plot``'s figures (see :mod:`hybridtree.analysis.plot`): which
physical units a run or a snapshot states (a snapshot's ``Units`` group, GADGET-4's unit
attributes in ``Parameters``, or hybridtree's ``units.*`` settings there), and how
internal quantities are shown in them (:class:`PlotUnits`).  Cosmological snapshots
(GADGET's convention): :func:`snapshot_cosmology`."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..io.gadget_units import file_units
from ..io.hdf5_files import SnapshotError, attr_number, attr_value, open_file
from ..config.units import GYR_S, KPC_CM, MPC_CM, MSUN_1E10_G, MSUN_G, Units

__all__ = ["INTERNAL_NAME", "NBODY", "NBODY_NAME", "PlotUnits", "SnapshotCosmology",
           "plot_units", "run_units", "snapshot_cosmology", "snapshot_units"]

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
    def surface_density_unit(self) -> str:
        """The unit of a surface density, e.g. "M☉/kpc²", "M☉/comoving Mpc²", in h units
        "(M☉/h)/(comoving Mpc/h)²", or "N-body units"."""
        mass = f"({self.mass})" if "/" in self.mass else self.mass
        length = f"({self.length})" if "/" in self.length else self.length
        return f"{mass}/{length}²" if self.physical else NBODY_NAME

    @property
    def surface_density_label(self) -> str:
        """Colour bar label of a surface density, e.g. "surface density (M☉/kpc²)",
        "surface density (M☉/comoving Mpc²)" or, in h units,
        "surface density ((M☉/h)/(comoving Mpc/h)²)"."""
        return f"surface density ({self.surface_density_unit})"

    @property
    def converts_time(self) -> bool:
        """Whether times are shown in another unit than the run's internal one (the one
        of its config and its console lines)."""
        return self.physical and self.time != INTERNAL_NAME

    def time_text(self, t: float) -> str:
        """An internal time ``t`` for a title, as the config and the console give it and,
        where converted, in the display unit: "4 (18.86 Myr)", or "1 (N-body units)"."""
        if self.converts_time:
            return f"{t:.4g} ({t * self.time_factor:.4g} {self.time})"
        return f"{t:.4g} ({self.time if self.physical else NBODY_NAME})"


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
    value = attr_value(value)
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
    with open_file(path) as f:
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
            raise SnapshotError(f"{path}: a cosmological snapshot without HubbleParam > 0")
        a = attr_number(header, "Time")
        z = attr_number(header, "Redshift")
        if not (a is not None and a > 0):
            if z is None or z <= -1:
                raise SnapshotError(f"{path}: a cosmological snapshot without a scale factor "
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
    with open_file(Path(path)) as f:
        stated = file_units(f)
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
    with open_file(Path(path)) as f:
        stated = file_units(f)
    if stated is None:
        return PlotUnits(INTERNAL_NAME, 1.0, INTERNAL_NAME, 1.0, 1.0, cosmological=True)
    units, _, time_s = stated
    u = plot_units(units.length_cm, units.mass_g, time_s)
    return replace(u, length=f"physical {u.length}", cosmological=True)
