"""Reading GADGET-style HDF5 snapshots -- hybridtree's own (:mod:`hybridtree.io.snapshot`
describes their layout), GADGET-4's and other codes' -- and the particle data that the
reading and the writing side (:mod:`hybridtree.io.hdf5_write`) share: :class:`Particles`
and :class:`Snapshot`.

The readers take any file of a snapshot, one file or a multi-file set
``snapshot_0002.0.hdf5`` ... ``snapshot_0002.(n-1).hdf5``, or its stem ``snapshot_0002``
(:func:`resolve_snapshot`), and read the whole snapshot.  The public names are re-exported
by :mod:`hybridtree.io.snapshot`.

Files of other codes are read in the units and the convention they state, or GADGET's
(:mod:`hybridtree.io.gadget_units` says how); finding a snapshot's files and reading their
attributes is :mod:`hybridtree.io.hdf5_files`.  The names in ``__all__`` that those two
modules define are re-exported here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ..particles import Particles
from ..config.units import Units
from .gadget_units import (GADGET_DEFAULT_UNITS, CosmicHeader, StatedUnits,
                           cosmic_header, file_cosmology, file_units, hubble_rate,
                           snapshot_convention, to_physical)
from .gadget2_read import binary_files, count_binary, read_binary_columns
from .hdf5_files import (N_TYPES, SnapshotError, attr_value, check_extra_types, check_ids,
                         finite_number, header_counts, mass_table, open_file, resolve_snapshot,
                         snapshot_files)

__all__ = ["GADGET_DEFAULT_UNITS", "N_TYPES", "CosmicHeader", "Particles", "Snapshot",
           "SnapshotError", "StatedUnits", "check_unique_ids", "cosmic_header",
           "count_particles", "file_cosmology", "group_attrs", "hubble_rate", "read_particles",
           "read_snapshot", "resolve_snapshot", "snapshot_files"]


@dataclass
class Snapshot:
    particles: Particles
    time: float
    units: Units
    parameters: dict[str, Any] = field(default_factory=dict)
    run_state: dict[str, Any] = field(default_factory=dict)
    path: str = ""


def count_particles(path: str | Path, types: str = "all") -> int:
    """How many particles the readers would read from the snapshot at ``path`` (a file,
    any part of a set or its stem; ``types`` as for :func:`read_particles`), from the
    datasets' shapes alone: nothing is read but attributes; a GADGET-2 binary set: its
    headers)."""
    binary = binary_files(path)
    if binary is not None:
        return count_binary(binary, types)
    total = 0
    for q in snapshot_files(path):
        with open_file(q) as f:
            names = [f"PartType{t}" for t in range(N_TYPES)] if types == "all" else [types]
            try:
                check_extra_types(q, f)
                for name in names:
                    g = f.get(name)
                    if (isinstance(g, h5py.Group)
                            and isinstance(g.get("Coordinates"), h5py.Dataset)):
                        shape = g["Coordinates"].shape
                        total += int(shape[0]) if shape else 0
            except SnapshotError:
                raise
            except (OSError, KeyError, ValueError, TypeError) as exc:
                raise SnapshotError(f"{q}: cannot read its layout ({exc}): a damaged "
                                    f"file") from None
    return total


def group_attrs(path: str | Path, group: str) -> dict[str, Any]:
    """The attributes of ``group`` in the first file of the snapshot at ``path`` as plain
    Python values ({} when there is no such group); nothing else is read."""
    with open_file(resolve_snapshot(path)) as f:
        g = f.get(group)
        if not isinstance(g, h5py.Group):
            return {}
        try:
            return {k: attr_value(v) for k, v in g.attrs.items()}
        except (OSError, KeyError, ValueError, TypeError) as exc:
            raise SnapshotError(f"{path}: cannot read {group} ({exc}): a damaged file") from None


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


def read_set(path: Path, types: str, share: tuple[int, int], extra: tuple[str, ...] = ()
              ) -> tuple[dict[str, np.ndarray], float, tuple | None, dict, dict]:
    """Read this share of every (file, type) of the snapshot at ``path``.

    ``share`` (rank, size): of each (file, PartType) block of n rows this reader takes rows
    [n·rank/size, n·(rank+1)/size), so ``size`` readers together read everything once.
    Returns (columns, time, stated units, parameters, run state); particles without
    ``ParticleIDs`` anywhere are numbered 1.. by their row in the whole snapshot.
    """
    rank, size = share
    files = snapshot_files(path)
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("pos", "vel", "mass", "ids", "row",
                                                          "types")}
    for key in extra:
        cols[key] = []
    time = 0.0
    stated, params, state = None, {}, {}
    offset, any_missing_ids, seen = 0, False, np.zeros(N_TYPES, np.int64)
    total = None
    for i, q in enumerate(files):
        with open_file(q) as f:
            header = f["Header"].attrs if "Header" in f else {}
            t_file = finite_number(q, header, "Header", "Time") or 0.0
            check_extra_types(q, f)
            if i == 0:
                time, stated = t_file, file_units(f)
                total = header_counts(q, header, "NumPart_Total")
                if "Parameters" in f:
                    params = {k: attr_value(v) for k, v in f["Parameters"].attrs.items()}
                if "RunState" in f:
                    state = {k: attr_value(v) for k, v in f["RunState"].attrs.items()}
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
            this_file = header_counts(q, header, "NumPart_ThisFile")
            table = mass_table(q, header)
            for name in names:
                g = f[name]
                t = int(name[len("PartType"):])
                if t >= N_TYPES:
                    raise SnapshotError(f"{q}: ics.types = {types!r}, but hybridtree keeps "
                                        f"GADGET types 0 .. {N_TYPES - 1} only")
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
                elif table[t] > 0:
                    cols["mass"].append(np.full(hi - lo, table[t]))
                else:
                    raise SnapshotError(f"{q}: {name} has no Masses and no MassTable entry")
                if "ParticleIDs" in g:
                    cols["ids"].append(check_ids(q, f"{name}/ParticleIDs", _rows(
                        q, g, "ParticleIDs", lo, hi, n, None, "integer"), lo))
                else:
                    any_missing_ids = True
                    cols["ids"].append(np.zeros(hi - lo, np.uint64))
                for key in extra:
                    if key in g:
                        cols[key].append(_rows(q, g, key, lo, hi, n, 3 if key == "Acceleration"
                                               else None))
                cols["row"].append(np.arange(offset + lo, offset + hi, dtype=np.uint64))
                cols["types"].append(np.full(hi - lo, t, np.uint8))
                offset += n
                seen[t] += n
    if not cols["pos"] and types == "all":
        raise SnapshotError(f"{path}: no PartType groups: not a GADGET-style snapshot")
    if not cols["pos"]:
        raise SnapshotError(f"{path}: no group {types!r} in any file of the snapshot")
    checked = (list(range(N_TYPES)) if types == "all" else
               [int(types[8:])] if re.fullmatch(r"PartType[0-5]", types) else [])
    if total is not None and len(files) > 1 and np.any(seen[checked] != total[checked]):
        raise SnapshotError(f"{path}: Header/NumPart_Total is {total[:N_TYPES].tolist()} but the "
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
    one; ``path`` any of its files or its stem, see :func:`snapshot_files`) or of a
    GADGET-2 binary one (:mod:`hybridtree.io.gadget2_read`): ``types``
    "all" (every ``PartTypeN`` in order, flattened) or one group name.
    Masses from ``Masses`` or the ``MassTable``; IDs from ``ParticleIDs`` (numbered 1..
    by row where a group lacks them).  Duplicate IDs are an error (with ``share`` of
    size > 1 the caller must check across readers).

    The file's units are those it states, or GADGET's where it states none
    (:mod:`hybridtree.io.gadget_units`; a cosmological file's comoving values are read as
    physical); with ``units`` given, positions, velocities, masses and the time are
    converted to ``units``.  The velocity unit of a ``Units`` group is taken as
    sqrt(G M/L) only when it does not say.  ``share``: see :func:`read_set`.  Returns
    (particles, time, file units: a :class:`StatedUnits` for a file without a ``Units``
    group).
    """
    path = Path(path)
    convention = snapshot_convention(path)
    binary = binary_files(path)
    if binary is not None:
        cols, time, _ = read_binary_columns(binary, types, share)
        state = {}
    else:
        cols, time, _, _, state = read_set(path, types, share)
    if share[1] == 1:
        check_unique_ids(cols["ids"], str(path))
    time = to_physical(path, cols, time, convention, state)
    return _converted(cols, time, convention.stated, units)


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
    return Particles(pos, vel, mass, cols["ids"], types=cols["types"]), time, file_units


def read_snapshot(path: str | Path, share: tuple[int, int] = (0, 1)) -> Snapshot:
    """A run snapshot written by :func:`write_snapshot` (one file or a multi-file set;
    ``path`` any of its files or its stem), for restarts and ``hybridtree info``;
    ``share`` as for :func:`read_particles`."""
    path = Path(path)
    cols, time, stated, params, state = read_set(path, "all", share,
                                                  ("Acceleration", "Potential"))
    if stated is None:
        raise SnapshotError(f"{path}: no Units group")
    time = to_physical(path, cols, time, snapshot_convention(path), state)
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
