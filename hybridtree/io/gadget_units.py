"""The units of a snapshot and how its values are to be read
(:func:`snapshot_convention`): hybridtree's ``Units`` group, or the interpretation of
foreign GADGET files.

A file with a ``Units`` group (hybridtree's) is read in the units that group states.  A
file without one (GADGET-2's, GADGET-4's, other codes') is read as GADGET writes it: units from ``UnitLength_in_cm``, ``UnitMass_in_g`` and
``UnitVelocity_in_cm_per_s`` in ``Parameters`` (GADGET-4) or ``Header``, else hybridtree's
``units.length_cm``/``units.mass_g`` settings in ``Parameters`` (G = 1), else GADGET's
defaults (:data:`GADGET_DEFAULT_UNITS`: kpc/h, 10^10 Msun/h, km/s); the time unit is
length / velocity.  A cosmological file (``ComovingIntegrationOn`` = 1, or without that flag a
``Header/Time`` that is the scale factor of ``Header/Redshift``) holds comoving coordinates in
length/h, masses in mass/h and velocities u = v_pec / sqrt(a) (GADGET's convention): they are
read back as physical r = a x / h, m / h and v = sqrt(a) u + H(a) r, with h, Ω_m and Ω_Λ
from ``HubbleParam``, ``Omega0``, ``OmegaLambda``; its time is the age at ``Header/Time``.
What cannot be interpreted (some unit attributes but not all, a non-positive unit, a
``Redshift`` that does not match ``Time`` with no flag to settle it, comoving coordinates
without h or Ω's, a ``Units`` group without GADGET's names) is a :class:`SnapshotError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ..config.units import G_CGS, GYR_S, H100_PER_S, Units
from .gadget2_read import binary_files, binary_header
from .gadget_binary import read_binary_part
from .gadget_defaults import GADGET_DEFAULT_UNITS
from .hdf5_files import (SnapshotError, attr_number, attr_value, finite_number, open_file,
                         resolve_snapshot)

__all__ = ["GADGET_DEFAULT_UNITS", "Convention", "CosmicHeader", "StatedUnits",
           "cosmic_header", "file_cosmology", "file_units", "foreign_convention", "hubble_rate",
           "snapshot_convention",
           "to_physical"]


def hubble_rate(a: float, h: float, omega_m: float, omega_lambda: float,
                time_unit_s: float) -> float:
    """H(a) of a matter + Λ (+ curvature) universe in units of 1/``time_unit_s`` -- the
    expansion GADGET's velocity convention refers to (no radiation)."""
    e2 = omega_m / a ** 3 + (1.0 - omega_m - omega_lambda) / a ** 2 + omega_lambda
    return h * H100_PER_S * time_unit_s * np.sqrt(e2)


@dataclass(frozen=True)
class CosmicHeader:
    """A cosmological snapshot's header values: scale factor ``a``, ``h``, Ω_m, Ω_Λ."""
    a: float
    h: float
    omega_m: float
    omega_lambda: float

    def hubble(self, time_unit_s: float) -> float:
        return hubble_rate(self.a, self.h, self.omega_m, self.omega_lambda, time_unit_s)


@dataclass(frozen=True)
class StatedUnits(Units):
    """The units of a file that is not hybridtree's: length and mass (cgs) as
    :class:`Units`, with the file's own velocity unit (GADGET's internal units do not have
    G = 1) and time unit length / velocity; ``source``: where they come from; ``cosmic``:
    the file's cosmology when its coordinates are comoving (the readers return physical
    ones)."""

    velocity: float = 0.0
    source: str = ""
    cosmic: CosmicHeader | None = None

    @property
    def velocity_cm_per_s(self) -> float:
        return self.velocity

    @property
    def time_s(self) -> float:
        return self.length_cm / self.velocity

    @property
    def gravitational_constant(self) -> float:
        return G_CGS * self.mass_g * self.time_s ** 2 / self.length_cm ** 3

    @property
    def note(self) -> str:
        """Where the units come from, G in them and (cosmological) how the file's values
        were read: the words ``hybridtree info`` prints after its units line."""
        text = f"{self.source}; G = {self.gravitational_constant:.6g} in these units"
        c = self.cosmic
        if c is not None:
            text += (f"; cosmological, read as physical from comoving Coordinates x a / h, "
                     f"Masses / h, Velocities x sqrt(a) + H r (a = {c.a:.6g}, "
                     f"z = {1 / c.a - 1:.6g}, h = {c.h:.6g}, Omega0 = {c.omega_m:.6g}, "
                     f"OmegaLambda = {c.omega_lambda:.6g})")
        return text


def file_units(f: h5py.File) -> tuple[Units, float, float] | None:
    """The file's units from ``Units`` or (GADGET-4) ``Parameters``: (length and mass,
    velocity unit in cm/s, time unit in s), the last two as the file states them
    (else derived with G = 1); None if absent.  SnapshotError naming the attribute for a
    unit that is not a finite positive number."""
    for group in ("Units", "Parameters"):
        if group in f and "UnitLength_in_cm" in f[group].attrs and "UnitMass_in_g" in f[group].attrs:
            a = f[group].attrs

            def unit(key: str) -> float | None:
                value = finite_number(f.filename, a, group, key)
                if value is not None and not value > 0:
                    raise SnapshotError(f"{f.filename}: {group}/{key} = {value:g} is not a "
                                        f"positive unit")
                return value

            u = Units(unit("UnitLength_in_cm"), unit("UnitMass_in_g"))
            v = unit("UnitVelocity_in_cm_per_s") or u.velocity_cm_per_s
            return u, v, unit("UnitTime_in_s") or u.length_cm / v
    return None


@dataclass(frozen=True)
class Convention:
    """How a file's values are to be read: ``stated`` (units, velocity unit in cm/s, time
    unit in s; None: none), ``cosmic`` (comoving coordinates: the file's cosmology),
    ``foreign`` (no ``Units`` group: not hybridtree's)."""
    stated: tuple[Units, float, float] | None
    cosmic: CosmicHeader | None
    foreign: bool


_UNIT_KEYS = tuple(GADGET_DEFAULT_UNITS)


def snapshot_convention(path: Path) -> Convention:
    """The convention of the snapshot at ``path`` (read from its first file's attributes;
    a GADGET-2 binary file's header)."""
    files = binary_files(path)
    if files is not None:
        return foreign_convention({}, binary_header(read_binary_part(files[0], header_only=True)),
                                  files[0])
    with open_file(resolve_snapshot(path)) as f:
        if isinstance(f.get("Header"), h5py.Group):
            finite_number(path, f["Header"].attrs, "Header", "Time")
        if "Units" in f:
            attrs = f["Units"].attrs
            if "UnitLength_in_cm" not in attrs or "UnitMass_in_g" not in attrs:
                names = ", ".join(attrs) or "none"
                raise SnapshotError(f"{path}: its Units group has no UnitLength_in_cm and "
                                    f"UnitMass_in_g (it has: {names}): cannot tell its units")
            return Convention(file_units(f), _own_cosmic(f), False)
        return foreign_convention(f["Parameters"].attrs if "Parameters" in f else {},
                                  f["Header"].attrs if "Header" in f else {}, path)


def _own_cosmic(f: h5py.File) -> CosmicHeader | None:
    """A hybridtree snapshot's cosmological header: Header/Omega0 > 0."""
    h = f["Header"].attrs if "Header" in f else {}
    om = attr_number(h, "Omega0", 0.0)
    if not om > 0:
        return None
    return CosmicHeader(float(np.asarray(h["Time"]).reshape(-1)[0]),
                        attr_number(h, "HubbleParam", 1.0), om,
                        attr_number(h, "OmegaLambda", 0.0))


def foreign_convention(params: Mapping[str, Any], header: Mapping[str, Any],
                       path: Path) -> Convention:
    """GADGET's convention for a file without a ``Units`` group (module docstring), from
    its ``Parameters`` and ``Header`` attributes."""

    def stated(key: str) -> tuple[float | None, str]:
        for where, attrs in (("Parameters", params), ("Header", header)):
            if key in attrs:
                value = attr_number(attrs, key)
                if value is None or not np.isfinite(value):
                    raise SnapshotError(f"{path}: {where}/{key} is not a number "
                                        f"({attr_value(attrs[key])!r})")
                return value, where
        return None, ""

    found = {key: stated(key) for key in _UNIT_KEYS}
    given = [key for key in _UNIT_KEYS if found[key][0] is not None]
    if given and len(given) < len(_UNIT_KEYS):
        missing = [key for key in _UNIT_KEYS if key not in given]
        raise SnapshotError(f"{path}: states {' and '.join(given)} but not "
                            f"{' or '.join(missing)}: cannot tell its units")
    for key in given:
        value, where = found[key]
        if not value > 0:
            raise SnapshotError(f"{path}: {where}/{key} = {value:g} is not a positive unit")
    if given:
        length, mass, velocity = (found[key][0] for key in _UNIT_KEYS)
        source = f"as stated in {found['UnitLength_in_cm'][1]}"
    elif "units.length_cm" in params and "units.mass_g" in params:
        length, mass = (finite_number(path, params, "Parameters", k)
                        for k in ("units.length_cm", "units.mass_g"))
        if not (length > 0 and mass > 0):
            raise SnapshotError(f"{path}: Parameters/units.length_cm = {length:g}, "
                                f"units.mass_g = {mass:g}: units must be positive")
        velocity = Units(length, mass).velocity_cm_per_s
        source = "hybridtree's units.length_cm and units.mass_g in Parameters"
    else:
        length, mass, velocity = GADGET_DEFAULT_UNITS.values()
        source = ("the file states no units: GADGET's defaults 1 kpc/h, 1e10 Msun/h, 1 km/s, "
                  "h only for comoving coordinates")

    flag, _ = stated("ComovingIntegrationOn")
    a = finite_number(path, header, "Header", "Time")
    z = finite_number(path, header, "Header", "Redshift")
    as_scale = a is not None and a > 0 and z is not None and abs(a * (1.0 + z) - 1.0) <= 1e-6
    om, _ = stated("Omega0")
    if flag is None:
        if z is not None and z != 0 and not as_scale:
            a_text = "absent" if a is None else f"{a:g}"
            raise SnapshotError(
                f"{path}: Header/Redshift = {z:g} but Header/Time = {a_text} is not the scale "
                f"factor 1/(1 + z) = {1 / (1 + z):g}, and no Parameters/ComovingIntegrationOn "
                f"says whether its coordinates are comoving: cannot interpret it")
        comoving = as_scale and (z > 0 or (om or 0.0) > 0)
        why = (f"Header/Time = {a:g} is the scale factor of Header/Redshift = {z:g}"
               if comoving else "")
    else:
        comoving = flag != 0
        why = f"Parameters/ComovingIntegrationOn = {flag:g}"
        if comoving and not as_scale:
            if a is None or not a > 0:
                raise SnapshotError(f"{path}: {why} but Header/Time (the scale factor) is "
                                    f"{'absent' if a is None else f'{a:g}'}")
            if z is not None:
                raise SnapshotError(f"{path}: {why} but Header/Redshift = {z:g} is not "
                                    f"1/Time - 1 = {1 / a - 1:g}")
    cosmic = None
    if comoving:
        h, _ = stated("HubbleParam")
        ol, _ = stated("OmegaLambda")
        missing = [k for k, v in (("HubbleParam", h), ("Omega0", om), ("OmegaLambda", ol))
                   if v is None]
        if missing:
            raise SnapshotError(f"{path}: {why}, so its coordinates are comoving, but it states "
                                f"no {', '.join(missing)}: cannot convert them")
        if not (h > 0 and om > 0 and ol >= 0):
            raise SnapshotError(f"{path}: HubbleParam = {h:g}, Omega0 = {om:g}, OmegaLambda "
                                f"= {ol:g}: need h > 0, Omega0 > 0, OmegaLambda >= 0")
        cosmic = CosmicHeader(a, h, om, ol)
    units = StatedUnits(length, mass, velocity, source, cosmic)
    return Convention((units, velocity, length / velocity), cosmic, True)


def file_cosmology(path: str | Path) -> CosmicHeader | None:
    """The cosmology of a snapshot whose coordinates are comoving (the readers convert
    them to physical ones), None for any other; SnapshotError for a file the readers
    cannot interpret."""
    return snapshot_convention(Path(path)).cosmic


def cosmic_header(path: str | Path) -> CosmicHeader | None:
    """The cosmological header of a snapshot (any part or its stem), None when it is not
    a cosmological snapshot: :func:`file_cosmology` (hybridtree's snapshots: ``Omega0`` >
    0; other files: GADGET's convention, the module docstring)."""
    return file_cosmology(path)


def _age(cosmic: CosmicHeader, time_unit_s: float) -> float:
    """Age of the (matter + Λ + curvature) universe at ``cosmic.a``, in ``time_unit_s``:
    t = 2 / (3 H0) ∫_0^{a^{3/2}} du / sqrt(Ω_m + Ω_k u^{2/3} + Ω_Λ u²) (u = a^{3/2})."""
    from scipy import integrate
    om, ol = cosmic.omega_m, cosmic.omega_lambda
    ok = 1.0 - om - ol
    h0 = cosmic.h * H100_PER_S * time_unit_s
    value, _ = integrate.quad(lambda u: 1.0 / np.sqrt(om + ok * u ** (2.0 / 3.0) + ol * u * u),
                              0.0, cosmic.a ** 1.5, epsabs=0.0, epsrel=1e-13, limit=200)
    return 2.0 / (3.0 * h0) * value


def to_physical(path: Path, cols: dict[str, np.ndarray], time: float, convention: Convention,
              state: dict) -> float:
    """Columns of a cosmological snapshot back to physical coordinates and velocities in
    the file's units (in place); returns the time in the file's time units (from
    ``RunState/Time``, else ``Header/Time_GYR`` for hybridtree's snapshots, else the age at
    the scale factor ``Header/Time``).  Other snapshots: unchanged."""
    cosmic, stated = convention.cosmic, convention.stated
    if cosmic is None:
        return time
    if stated is None:
        raise SnapshotError(f"{path}: a cosmological snapshot without units")
    a, h = cosmic.a, cosmic.h
    t_unit = stated[2]
    cols["pos"] = cols["pos"] * (a / h)
    cols["mass"] = cols["mass"] / h
    cols["vel"] = cols["vel"] * np.sqrt(a) + cosmic.hubble(t_unit) * cols["pos"]
    if "Time" in state:
        return finite_number(path, state, "RunState", "Time")
    if convention.foreign:
        return _age(cosmic, t_unit)
    with open_file(resolve_snapshot(path)) as f:
        gyr = finite_number(path, f["Header"].attrs, "Header", "Time_GYR")
    if gyr is None:
        raise SnapshotError(f"{path}: a cosmological snapshot without Header/Time_GYR "
                            f"(the age is needed to continue from it)")
    return float(gyr) * GYR_S / t_unit
