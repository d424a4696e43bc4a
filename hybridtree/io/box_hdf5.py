"""One file of a GADGET-style HDF5 periodic box (monofonIC's ``gadget_hdf5``, MUSIC's
hdf5 output, GADGET-4's ICs and snapshots), its numbers as the file stores them:
:func:`read_hdf5_part`, the HDF5 half of :func:`hybridtree.io.box_ics.read_box_ics`.

The layout is GADGET-2's header turned into attributes::

    Header      attrs  NumPart_ThisFile[NTYPES], NumPart_Total[NTYPES],
                       NumPart_Total_HighWord[NTYPES], MassTable[NTYPES] (NTYPES = 6, or
                       what GADGET-4 was compiled with: 2 for dark matter alone),
                       Time (the scale factor a), Redshift, BoxSize,
                       NumFilesPerSnapshot, and often Omega0, OmegaLambda, HubbleParam
    Parameters  attrs  GADGET-4 writes its parameter file here: Omega0, OmegaLambda,
                       HubbleParam, UnitLength_in_cm, UnitMass_in_g, UnitVelocity_in_cm_per_s
    PartTypeN   Coordinates (n, 3), Velocities (n, 3), ParticleIDs (n,), Masses (n,)
                (Masses only where MassTable[N] is 0)

Each value is looked for in ``Header`` first, then ``Parameters``.  The numbers are
GADGET's comoving ones: lengths in UnitLength/h, masses in UnitMass/h, velocities
u = v_pec / sqrt(a) in UnitVelocity; a file stating no units is in GADGET's (kpc/h,
10^10 Msun/h, km/s).  A file that states some of the three units but not all is refused,
as :mod:`hybridtree.io.gadget_units` refuses it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import h5py
import numpy as np

from .gadget_binary import FilePart
from .gadget_defaults import GADGET_DEFAULT_UNITS
from .hdf5_files import (N_TYPES, SnapshotError, check_extra_types, check_ids, finite_number,
                         header_counts, mass_table, open_file)

__all__ = ["read_hdf5_part"]


def _stated(path: Path, groups: list[tuple[str, Any]], key: str) -> float | None:
    """Attribute ``key`` of the first group that has it, as a finite float (SnapshotError
    naming the value if it is not one); None if none has."""
    for name, attrs in groups:
        if key in attrs:
            return finite_number(path, attrs, name, key)
    return None


def _dataset(path: Path, g: h5py.Group, key: str, n: int, width: int, integer: bool = False
             ) -> np.ndarray | None:
    """Dataset ``g/key`` (n rows, ``width`` columns, or (n,) for width 1), checked; None
    if absent."""
    d = g.get(key)
    if d is None:
        return None
    shape = (n, width) if width > 1 else (n,)
    if not isinstance(d, h5py.Dataset) or d.shape != shape:
        got = d.shape if isinstance(d, h5py.Dataset) else "a group"
        raise SnapshotError(f"{path}: {g.name[1:]}/{key} is {got}, expected {shape} "
                            f"(Coordinates has {n} rows): inconsistent block sizes")
    if not np.issubdtype(d.dtype, np.integer if integer else np.number):
        raise SnapshotError(f"{path}: {g.name[1:]}/{key} has dtype {d.dtype}")
    values = d[...]
    if integer:
        return check_ids(path, f"{g.name[1:]}/{key}", values)
    if key == "Masses" and not (np.isfinite(values) & (values >= 0)).all():
        bad = int(np.flatnonzero(~(np.isfinite(values) & (values >= 0)))[0])
        raise SnapshotError(f"{path}: {g.name[1:]}/Masses[{bad}] = {values[bad]} is not a "
                            f"mass (finite, >= 0)")
    return values


def read_hdf5_part(path: Path, header_only: bool = False) -> FilePart:
    """One file of a GADGET-style HDF5 set, its numbers as stored (:class:`FilePart`);
    SnapshotError (a ValueError) for a file that is not one.  A file of a code compiled
    with any number of types (GADGET-4's NTYPES) is read; particles of a type beyond
    PartType5 are refused.  ``header_only``: the counts (from the datasets' shapes),
    time, cosmology and units alone, nothing read of the particles."""
    with open_file(path) as f:
        if not isinstance(f.get("Header"), h5py.Group):
            raise SnapshotError(f"{path}: an HDF5 file without a Header group: not a "
                                f"GADGET-style snapshot or IC file")
        header = f["Header"].attrs
        groups = [("Header", header)]
        if isinstance(f.get("Parameters"), h5py.Group):
            groups.append(("Parameters", f["Parameters"].attrs))
        keys = tuple(GADGET_DEFAULT_UNITS)
        given = {k: _stated(path, groups, k) for k in keys}
        units = None
        if any(v is not None for v in given.values()):
            missing = [k for k, v in given.items() if v is None]
            if missing:
                raise SnapshotError(f"{path}: states some units but not {', '.join(missing)}: "
                                    f"cannot tell its units")
            if not all(v > 0 for v in given.values()):
                raise SnapshotError(f"{path}: its units {given} must be positive")
            units = tuple(float(given[k]) for k in keys)
        check_extra_types(path, f)
        this_file = header_counts(path, header, "NumPart_ThisFile")
        table = mass_table(path, header)
        npart = np.zeros(N_TYPES, np.int64)
        pos, vel, ids, mass = [], [], [], []
        for t in range(N_TYPES):
            g = f.get(f"PartType{t}")
            if not isinstance(g, h5py.Group) or "Coordinates" not in g:
                n = 0
            else:
                shape = g["Coordinates"].shape
                n = shape[0] if len(shape) == 2 else -1
            if this_file is not None and this_file[t] != n:
                raise SnapshotError(f"{path}: Header/NumPart_ThisFile[{t}] is {this_file[t]} "
                                    f"but PartType{t}/Coordinates has {n} rows: inconsistent "
                                    f"block sizes")
            npart[t] = n
            if n == 0 or header_only:
                pos.append(np.zeros((0, 3)))
                vel.append(np.zeros((0, 3)))
                ids.append(np.zeros(0, np.uint64))
                mass.append(np.zeros(0))
                continue
            pos.append(_dataset(path, g, "Coordinates", n, 3))
            v = _dataset(path, g, "Velocities", n, 3)
            if v is None:
                raise SnapshotError(f"{path}: PartType{t} has no Velocities")
            vel.append(v)
            i = _dataset(path, g, "ParticleIDs", n, 1, integer=True)
            ids.append(i)
            m = _dataset(path, g, "Masses", n, 1)
            if m is None and not table[t] > 0:
                raise SnapshotError(f"{path}: PartType{t} has no Masses and no MassTable "
                                    f"entry")
            mass.append(np.full(n, table[t]) if m is None else m)
        # Header only: GADGET-4's Parameters/NumFilesPerSnapshot is the run's setting for
        # its outputs, not a count of this set's files
        files = _stated(path, [groups[0]], "NumFilesPerSnapshot")
        total = header_counts(path, header, "NumPart_Total")
        return FilePart(path, "GADGET HDF5", npart, None if total is None else total[:N_TYPES],
                        1 if files is None else int(files), _stated(path, [groups[0]], "Time"),
                        _stated(path, [groups[0]], "Redshift"), _stated(path, groups, "BoxSize"),
                        _stated(path, groups, "Omega0"), _stated(path, groups, "OmegaLambda"),
                        _stated(path, groups, "HubbleParam"), pos, vel, ids, mass, units)
