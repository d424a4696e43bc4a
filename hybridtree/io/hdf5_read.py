"""Reading GADGET-style HDF5 snapshots -- hybridtree's own (:mod:`hybridtree.io.snapshot`
describes their layout), GADGET-4's and other codes' -- and the particle data that the
reading and the writing side (:mod:`hybridtree.io.hdf5_write`) share: :class:`Particles`,
:class:`Snapshot`, :class:`CosmicHeader`.

The readers take any file of a snapshot, one file or a multi-file set
``snapshot_0002.0.hdf5`` ... ``snapshot_0002.(n-1).hdf5``, or its stem ``snapshot_0002``
(:func:`resolve_snapshot`), and read the whole snapshot.  The public names are re-exported
by :mod:`hybridtree.io.snapshot`.

Units (:func:`_convention`): a file with a ``Units`` group (hybridtree's) is read in the
units that group states.  A file without one (GADGET-2's, GADGET-4's, other codes') is read
as GADGET writes it: units from ``UnitLength_in_cm``, ``UnitMass_in_g`` and
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

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ..units import G_CGS, GYR_S, H100_PER_S, Units

__all__ = ["GADGET_DEFAULT_UNITS", "N_TYPES", "CosmicHeader", "Particles", "Snapshot",
           "SnapshotError", "StatedUnits", "check_unique_ids", "cosmic_header",
           "count_particles", "file_cosmology", "group_attrs", "hubble_rate", "read_particles",
           "read_snapshot", "resolve_snapshot", "snapshot_files"]

#: GADGET's usual internal units (its example parameter files; yt and pynbody assume them
#: too) for a file that states none: 1 kpc/h, 10^10 Msun/h and 1 km/s (h only where the
#: coordinates are comoving)
GADGET_DEFAULT_UNITS = {"UnitLength_in_cm": 3.085678e21, "UnitMass_in_g": 1.989e43,
                        "UnitVelocity_in_cm_per_s": 1e5}

N_TYPES = 6
PART_RE = re.compile(r"^(.+)\.(\d+)\.hdf5$")             # BASE.K.hdf5: part K of a set


class SnapshotError(ValueError):
    """A file that is missing, unreadable or not a usable snapshot (a user error)."""


@dataclass
class Particles:
    """Particle state in internal units (float64): positions, velocities, masses, IDs."""

    pos: np.ndarray
    vel: np.ndarray
    mass: np.ndarray
    ids: np.ndarray
    acc: np.ndarray | None = None
    pot: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.mass)


@dataclass
class Snapshot:
    particles: Particles
    time: float
    units: Units
    parameters: dict[str, Any] = field(default_factory=dict)
    run_state: dict[str, Any] = field(default_factory=dict)
    path: str = ""


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


def attr_number(attrs: Any, key: str, default: Any = None) -> Any:
    """Attribute ``key`` as a float (the first element of an array); ``default`` when it
    is absent or not a number."""
    if key not in attrs:
        return default
    try:
        return float(np.asarray(attrs[key]).reshape(-1)[0])
    except (TypeError, ValueError, IndexError):
        return default


def _attr(value: Any) -> Any:
    """HDF5 attribute -> plain Python value."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def _open(path: Path) -> h5py.File:
    if not path.is_file():
        raise SnapshotError(f"{path}: no such file")
    try:
        return h5py.File(path, "r")
    except OSError as exc:
        raise SnapshotError(f"{path}: not a readable HDF5 file ({exc})") from None


def _file_units(f: h5py.File) -> tuple[Units, float, float] | None:
    """The file's units from ``Units`` or (GADGET-4) ``Parameters``: (length and mass,
    velocity unit in cm/s, time unit in s), the last two as the file states them
    (else derived with G = 1); None if absent."""
    for group in ("Units", "Parameters"):
        if group in f and "UnitLength_in_cm" in f[group].attrs and "UnitMass_in_g" in f[group].attrs:
            a = f[group].attrs
            u = Units(float(a["UnitLength_in_cm"]), float(a["UnitMass_in_g"]))
            v = float(a.get("UnitVelocity_in_cm_per_s", u.velocity_cm_per_s))
            return u, v, float(a.get("UnitTime_in_s", u.length_cm / v))
    return None


@dataclass(frozen=True)
class _Convention:
    """How a file's values are to be read: ``stated`` (units, velocity unit in cm/s, time
    unit in s; None: none), ``cosmic`` (comoving coordinates: the file's cosmology),
    ``foreign`` (no ``Units`` group: not hybridtree's)."""
    stated: tuple[Units, float, float] | None
    cosmic: CosmicHeader | None
    foreign: bool


_UNIT_KEYS = tuple(GADGET_DEFAULT_UNITS)


def _convention(path: Path) -> _Convention:
    """The convention of the snapshot at ``path`` (read from its first file's attributes)."""
    with _open(resolve_snapshot(path)) as f:
        if "Units" in f:
            attrs = f["Units"].attrs
            if "UnitLength_in_cm" not in attrs or "UnitMass_in_g" not in attrs:
                names = ", ".join(attrs) or "none"
                raise SnapshotError(f"{path}: its Units group has no UnitLength_in_cm and "
                                    f"UnitMass_in_g (it has: {names}): cannot tell its units")
            return _Convention(_file_units(f), _own_cosmic(f), False)
        return _foreign_convention(f, path)


def _own_cosmic(f: h5py.File) -> CosmicHeader | None:
    """A hybridtree snapshot's cosmological header: Header/Omega0 > 0."""
    h = f["Header"].attrs if "Header" in f else {}
    om = attr_number(h, "Omega0", 0.0)
    if not om > 0:
        return None
    return CosmicHeader(float(np.asarray(h["Time"]).reshape(-1)[0]),
                        attr_number(h, "HubbleParam", 1.0), om,
                        attr_number(h, "OmegaLambda", 0.0))


def _foreign_convention(f: h5py.File, path: Path) -> _Convention:
    """GADGET's convention for a file without a ``Units`` group (module docstring)."""
    params = f["Parameters"].attrs if "Parameters" in f else {}
    header = f["Header"].attrs if "Header" in f else {}

    def stated(key: str) -> tuple[float | None, str]:
        for where, attrs in (("Parameters", params), ("Header", header)):
            if key in attrs:
                value = attr_number(attrs, key)
                if value is None or not np.isfinite(value):
                    raise SnapshotError(f"{path}: {where}/{key} is not a number "
                                        f"({_attr(attrs[key])!r})")
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
        length, mass = float(params["units.length_cm"]), float(params["units.mass_g"])
        velocity = Units(length, mass).velocity_cm_per_s
        source = "hybridtree's units.length_cm and units.mass_g in Parameters"
    else:
        length, mass, velocity = GADGET_DEFAULT_UNITS.values()
        source = ("the file states no units: GADGET's defaults 1 kpc/h, 1e10 Msun/h, 1 km/s, "
                  "h only for comoving coordinates")

    flag, _ = stated("ComovingIntegrationOn")
    a, z = attr_number(header, "Time"), attr_number(header, "Redshift")
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
    return _Convention((units, velocity, length / velocity), cosmic, True)


def file_cosmology(path: str | Path) -> CosmicHeader | None:
    """The cosmology of a snapshot whose coordinates are comoving (the readers convert
    them to physical ones), None for any other; SnapshotError for a file the readers
    cannot interpret."""
    return _convention(Path(path)).cosmic


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


def count_particles(path: str | Path, types: str = "all") -> int:
    """How many particles the readers would read from the snapshot at ``path`` (a file,
    any part of a set or its stem; ``types`` as for :func:`read_particles`), from the
    datasets' shapes alone: nothing is read but attributes."""
    total = 0
    for q in snapshot_files(path):
        with _open(q) as f:
            names = [f"PartType{t}" for t in range(N_TYPES)] if types == "all" else [types]
            try:
                for name in names:
                    g = f.get(name)
                    if (isinstance(g, h5py.Group)
                            and isinstance(g.get("Coordinates"), h5py.Dataset)):
                        shape = g["Coordinates"].shape
                        total += int(shape[0]) if shape else 0
            except (OSError, KeyError, ValueError, TypeError) as exc:
                raise SnapshotError(f"{q}: cannot read its layout ({exc}): a damaged "
                                    f"file") from None
    return total


def group_attrs(path: str | Path, group: str) -> dict[str, Any]:
    """The attributes of ``group`` in the first file of the snapshot at ``path`` as plain
    Python values ({} when there is no such group); nothing else is read."""
    with _open(resolve_snapshot(path)) as f:
        g = f.get(group)
        if not isinstance(g, h5py.Group):
            return {}
        try:
            return {k: _attr(v) for k, v in g.attrs.items()}
        except (OSError, KeyError, ValueError, TypeError) as exc:
            raise SnapshotError(f"{path}: cannot read {group} ({exc}): a damaged file") from None


def resolve_snapshot(path: str | Path) -> Path:
    """``path`` itself if it is a file, else for a stem (``out/snapshot_0002``) its file
    ``STEM.hdf5`` or part 0 of its multi-file set ``STEM.0.hdf5``; SnapshotError if none
    of these exists."""
    path = Path(path)
    if path.is_file():
        return path
    others = [] if path.suffix == ".hdf5" else [path.with_name(f"{path.name}.hdf5"),
                                                 path.with_name(f"{path.name}.0.hdf5")]
    for q in others:
        if q.is_file():
            return q
    nor = f" (nor {others[0].name} or {others[1].name})" if others else ""
    raise SnapshotError(f"{path}: no such file{nor}")


def snapshot_files(path: str | Path) -> list[Path]:
    """The files of the snapshot that ``path`` (a file, or a stem: :func:`resolve_snapshot`)
    belongs to: ``[path]`` for a one-file snapshot, ``BASE.0.hdf5`` ... ``BASE.(n-1).hdf5``
    for a part of an n-file one (all must be there: a missing part means an incomplete
    snapshot)."""
    path = resolve_snapshot(path)
    with _open(path) as f:
        header = f["Header"].attrs if "Header" in f else {}
        n_files = int(np.asarray(header.get("NumFilesPerSnapshot", 1)).reshape(-1)[0])
    if n_files <= 1:
        return [path]
    m = PART_RE.match(path.name)
    if not m:
        raise SnapshotError(f"{path}: Header/NumFilesPerSnapshot is {n_files}, but the name is "
                            f"not BASE.K.hdf5, so the other parts cannot be found")
    files = [path.with_name(f"{m.group(1)}.{k}.hdf5") for k in range(n_files)]
    for q in files:
        if not q.is_file():
            raise SnapshotError(f"{path}: {q.name}, part of this {n_files}-file snapshot, is "
                                f"missing (an incomplete snapshot)")
    return files


def _rows(path: Path, g: h5py.Group, key: str, lo: int, hi: int, n: int,
          width: int | None, kind: str = "number") -> np.ndarray:
    """Rows [lo, hi) of dataset ``g/key``, checked: length n, (n, width) or (n,), numeric."""
    d = g[key]
    if not isinstance(d, h5py.Dataset):
        raise SnapshotError(f"{path}: {g.name[1:]}/{key} is not a dataset")
    shape = (n, width) if width else (n,)
    if d.shape != shape:
        raise SnapshotError(f"{path}: {g.name[1:]}/{key} has shape {d.shape}, expected {shape}")
    numeric = np.issubdtype(d.dtype, np.integer if kind == "integer" else np.number)
    if not numeric or np.issubdtype(d.dtype, np.complexfloating):
        raise SnapshotError(f"{path}: {g.name[1:]}/{key} has dtype {d.dtype}, expected "
                            f"{'integers' if kind == 'integer' else 'real numbers'}")
    try:
        rows = d[lo:hi]
    except (OSError, ValueError, TypeError) as exc:
        raise SnapshotError(f"{path}: cannot read {g.name[1:]}/{key} ({exc}): a damaged or "
                            f"truncated file") from None
    if kind == "number" and not np.isfinite(rows).all():
        bad = np.flatnonzero(~np.isfinite(rows.reshape(len(rows), -1)).all(axis=1))[0]
        raise SnapshotError(f"{path}: {g.name[1:]}/{key}[{lo + bad}] is not finite "
                            f"({rows[bad].tolist()})")
    if key == "Masses" and (rows < 0).any():
        bad = np.flatnonzero(rows < 0)[0]
        raise SnapshotError(f"{path}: {g.name[1:]}/Masses[{lo + bad}] = {rows[bad]} is negative")
    return rows


def _header_counts(header: Any, key: str) -> np.ndarray | None:
    """Per-type counts of ``Header/key`` (``NumPart_Total`` with its high word), or None
    if absent or malformed."""
    low = np.asarray(header[key], np.uint64).reshape(-1) if key in header else None
    if low is None or len(low) != N_TYPES:
        return None
    if key == "NumPart_Total" and "NumPart_Total_HighWord" in header:
        high = np.asarray(header["NumPart_Total_HighWord"], np.uint64).reshape(-1)
        if len(high) != N_TYPES:
            return None
        low = low + (high << np.uint64(32))
    return low.astype(np.int64)


def _read_set(path: Path, types: str, share: tuple[int, int], extra: tuple[str, ...] = ()
              ) -> tuple[dict[str, np.ndarray], float, tuple | None, dict, dict]:
    """Read this share of every (file, type) of the snapshot at ``path``.

    ``share`` (rank, size): of each (file, PartType) block of n rows this reader takes rows
    [n·rank/size, n·(rank+1)/size), so ``size`` readers together read everything once.
    Returns (columns, time, stated units, parameters, run state); particles without
    ``ParticleIDs`` anywhere are numbered 1.. by their row in the whole snapshot.
    """
    rank, size = share
    files = snapshot_files(path)
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("pos", "vel", "mass", "ids", "row")}
    for key in extra:
        cols[key] = []
    time = 0.0
    stated, params, state = None, {}, {}
    offset, any_missing_ids, seen = 0, False, np.zeros(N_TYPES, np.int64)
    total = None
    for i, q in enumerate(files):
        with _open(q) as f:
            header = f["Header"].attrs if "Header" in f else {}
            try:
                t_file = float(np.asarray(header.get("Time", 0.0)).reshape(-1)[0])
            except (TypeError, ValueError):
                raise SnapshotError(f"{q}: Header/Time is not a number") from None
            if i == 0:
                time, stated, total = t_file, _file_units(f), _header_counts(header, "NumPart_Total")
                if "Parameters" in f:
                    params = {k: _attr(v) for k, v in f["Parameters"].attrs.items()}
                if "RunState" in f:
                    state = {k: _attr(v) for k, v in f["RunState"].attrs.items()}
            elif t_file != time:
                raise SnapshotError(f"{q}: Header/Time {t_file} differs from {files[0].name}'s "
                                    f"{time}: parts of different snapshots")
            elif "RunState" in f and f["RunState"].attrs.get("SetId") != state.get("SetId"):
                raise SnapshotError(f"{q}: RunState/SetId differs from {files[0].name}'s: parts "
                                    f"of different snapshots")
            names = [f"PartType{t}" for t in range(N_TYPES) if f"PartType{t}" in f]
            if types != "all":
                if types not in f and len(files) == 1:
                    raise SnapshotError(f"{q}: no group {types!r} (has "
                                        f"{', '.join(names) or 'none'})")
                names = [types] if types in f else []
            this_file = _header_counts(header, "NumPart_ThisFile")
            table = np.asarray(header.get("MassTable", np.zeros(N_TYPES)), np.float64).reshape(-1)
            for name in names:
                g = f[name]
                t = int(name[len("PartType"):])
                if not isinstance(g, h5py.Group) or "Coordinates" not in g:
                    raise SnapshotError(f"{q}: {name} has no Coordinates")
                n = g["Coordinates"].shape[0] if g["Coordinates"].ndim else -1
                if this_file is not None and this_file[t] != n:
                    raise SnapshotError(f"{q}: Header/NumPart_ThisFile[{t}] is {this_file[t]} "
                                        f"but {name}/Coordinates has {n} rows")
                lo, hi = n * rank // size, n * (rank + 1) // size
                cols["pos"].append(_rows(q, g, "Coordinates", lo, hi, n, 3))
                cols["vel"].append(_rows(q, g, "Velocities", lo, hi, n, 3) if "Velocities" in g
                                   else np.zeros((hi - lo, 3)))
                if "Masses" in g:
                    cols["mass"].append(_rows(q, g, "Masses", lo, hi, n, None))
                elif t < len(table) and table[t] > 0:
                    cols["mass"].append(np.full(hi - lo, table[t]))
                else:
                    raise SnapshotError(f"{q}: {name} has no Masses and no MassTable entry")
                if "ParticleIDs" in g:
                    cols["ids"].append(_rows(q, g, "ParticleIDs", lo, hi, n, None, "integer"))
                else:
                    any_missing_ids = True
                    cols["ids"].append(np.zeros(hi - lo, np.uint64))
                for key in extra:
                    if key in g:
                        cols[key].append(_rows(q, g, key, lo, hi, n, 3 if key == "Acceleration"
                                               else None))
                cols["row"].append(np.arange(offset + lo, offset + hi, dtype=np.uint64))
                offset += n
                seen[t] += n
    if not cols["pos"] and types == "all":
        raise SnapshotError(f"{path}: no PartType groups: not a GADGET-style snapshot")
    if not cols["pos"]:
        raise SnapshotError(f"{path}: no group {types!r} in any file of the snapshot")
    checked = (list(range(N_TYPES)) if types == "all" else
               [int(types[8:])] if re.fullmatch(r"PartType[0-5]", types) else [])
    if total is not None and len(files) > 1 and np.any(seen[checked] != total[checked]):
        raise SnapshotError(f"{path}: Header/NumPart_Total is {total.tolist()} but the "
                            f"{len(files)} files hold {seen.tolist()} particles")
    out = {k: np.concatenate(v) for k, v in cols.items() if v}
    out["pos"] = out["pos"].astype(np.float64, copy=False)
    out["vel"] = out["vel"].astype(np.float64, copy=False)
    out["mass"] = out["mass"].astype(np.float64, copy=False)
    out["ids"] = (out["row"] + np.uint64(1) if any_missing_ids
                  else out["ids"].astype(np.uint64, copy=False))
    for key in extra:
        if key in out and len(cols[key]) != len(cols["pos"]):
            raise SnapshotError(f"{path}: {key} is missing in some files or groups")
    return out, time, stated, params, state


def read_particles(path: str | Path, types: str = "all", units: Units | None = None,
                   share: tuple[int, int] = (0, 1)) -> tuple[Particles, float, Units | None]:
    """Particles of a GADGET-style HDF5 snapshot (one file, or every file of a multi-file
    one; ``path`` any of its files or its stem, see :func:`snapshot_files`): ``types``
    "all" (every ``PartTypeN`` in order, flattened) or one group name.
    Masses from ``Masses`` or the ``MassTable``; IDs from ``ParticleIDs`` (numbered 1..
    by row where a group lacks them).  Duplicate IDs are an error (with ``share`` of
    size > 1 the caller must check across readers).

    The file's units are those it states, or GADGET's where it states none (the module
    docstring; a cosmological file's comoving values are read as physical); with ``units``
    given, positions, velocities, masses and the time are converted to ``units``.  The
    velocity unit of a ``Units`` group is taken as sqrt(G M/L) only when it does not say.
    ``share``: see :func:`_read_set`.  Returns (particles, time, file units: a
    :class:`StatedUnits` for a file without a ``Units`` group).
    """
    path = Path(path)
    convention = _convention(path)
    cols, time, _, _, state = _read_set(path, types, share)
    if share[1] == 1:
        check_unique_ids(cols["ids"], str(path))
    time = _physical(path, cols, time, convention, state)
    return _converted(cols, time, convention.stated, units)


def cosmic_header(path: str | Path) -> CosmicHeader | None:
    """The cosmological header of a snapshot (any part or its stem), None when it is not
    a cosmological snapshot: :func:`file_cosmology` (hybridtree's snapshots: ``Omega0`` >
    0; other files: GADGET's convention, the module docstring)."""
    return file_cosmology(path)


def _physical(path: Path, cols: dict[str, np.ndarray], time: float, convention: _Convention,
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
        return float(state["Time"])
    if convention.foreign:
        return _age(cosmic, t_unit)
    with _open(resolve_snapshot(path)) as f:
        gyr = f["Header"].attrs.get("Time_GYR")
    if gyr is None:
        raise SnapshotError(f"{path}: a cosmological snapshot without Header/Time_GYR "
                            f"(the age is needed to continue from it)")
    return float(gyr) * GYR_S / t_unit


def check_unique_ids(ids: np.ndarray, where: str) -> None:
    """SnapshotError naming an ID that occurs more than once."""
    s = np.sort(ids)
    dup = np.flatnonzero(s[1:] == s[:-1])
    if len(dup):
        raise SnapshotError(f"{where}: ParticleIDs are not unique ({len(dup)} repeats, e.g. "
                            f"ID {int(s[dup[0]])})")


def _converted(cols: dict[str, np.ndarray], time: float, stated: tuple | None,
               units: Units | None) -> tuple[Particles, float, Units | None]:
    file_units = stated[0] if stated else None
    pos, vel, mass = cols["pos"], cols["vel"], cols["mass"]
    if units is not None and stated is not None and file_units != units:
        _, v_file, t_file = stated
        pos = pos * (file_units.length_cm / units.length_cm)
        vel = vel * (v_file / units.velocity_cm_per_s)
        mass = mass * (file_units.mass_g / units.mass_g)
        time = time * (t_file / units.time_s)
    return Particles(pos, vel, mass, cols["ids"]), time, file_units


def read_snapshot(path: str | Path, share: tuple[int, int] = (0, 1)) -> Snapshot:
    """A run snapshot written by :func:`write_snapshot` (one file or a multi-file set;
    ``path`` any of its files or its stem), for restarts and ``hybridtree info``;
    ``share`` as for :func:`read_particles`."""
    path = Path(path)
    cols, time, stated, params, state = _read_set(path, "PartType1", share,
                                                  ("Acceleration", "Potential"))
    if stated is None:
        raise SnapshotError(f"{path}: no Units group")
    time = _physical(path, cols, time, _convention(path), state)
    if share[1] == 1:
        check_unique_ids(cols["ids"], str(path))
    particles, time, units = _converted(cols, time, stated, None)
    particles.acc = cols.get("Acceleration")
    particles.pot = cols.get("Potential")
    if particles.acc is not None:
        particles.acc = particles.acc.astype(np.float64, copy=False)
    if particles.pot is not None:
        particles.pot = particles.pot.astype(np.float64, copy=False)
    return Snapshot(particles, time, units, params, state, str(path))
