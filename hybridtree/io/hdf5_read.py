"""Reading GADGET-style HDF5 snapshots -- hybridtree's own (:mod:`hybridtree.io.snapshot`
describes their layout), GADGET-4's and other codes' -- and the particle data that the
reading and the writing side (:mod:`hybridtree.io.hdf5_write`) share: :class:`Particles`,
:class:`Snapshot`, :class:`CosmicHeader`.

The readers take any file of a snapshot, one file or a multi-file set
``snapshot_0002.0.hdf5`` ... ``snapshot_0002.(n-1).hdf5``, or its stem ``snapshot_0002``
(:func:`resolve_snapshot`), and read the whole snapshot.  The public names are re-exported
by :mod:`hybridtree.io.snapshot`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ..units import GYR_S, H100_PER_S, Units

__all__ = ["N_TYPES", "CosmicHeader", "Particles", "Snapshot", "SnapshotError",
           "check_unique_ids", "cosmic_header", "hubble_rate", "read_particles", "read_snapshot",
           "resolve_snapshot", "snapshot_files"]

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

    With ``units`` given and unit attributes in the file (``Units`` or ``Parameters``
    group), positions, velocities and masses are converted to ``units``; a file without
    unit attributes is taken to be in ``units`` already.  The file's velocity unit is
    taken as sqrt(G M/L) only when it does not say: GADGET's own
    ``UnitVelocity_in_cm_per_s`` is used when present.  ``share``: see :func:`_read_set`.
    Returns (particles, time, file units).
    """
    path = Path(path)
    cols, time, stated, _, state = _read_set(path, types, share)
    if share[1] == 1:
        check_unique_ids(cols["ids"], str(path))
    time = _physical(path, cols, time, stated, state)
    return _converted(cols, time, stated, units)


def cosmic_header(path: str | Path) -> CosmicHeader | None:
    """The cosmological header of a snapshot (any part or its stem), None when its
    ``Omega0`` is not > 0 (not a cosmological snapshot)."""
    with _open(resolve_snapshot(path)) as f:
        h = f["Header"].attrs if "Header" in f else {}
        om = attr_number(h, "Omega0", 0.0)
        if not om > 0:
            return None
        return CosmicHeader(float(h["Time"]), float(h.get("HubbleParam", 1.0)), om,
                      float(h.get("OmegaLambda", 0.0)))


def _physical(path: Path, cols: dict[str, np.ndarray], time: float, stated: tuple | None,
              state: dict) -> float:
    """Columns of a cosmological snapshot back to physical coordinates and velocities in
    the file's units (in place); returns the time in the file's time units (from
    ``RunState/Time``, else ``Header/Time_GYR``).  Other snapshots: unchanged."""
    cosmic = cosmic_header(path)
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
    time = _physical(path, cols, time, stated, state)
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
