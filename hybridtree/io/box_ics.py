"""Reading the periodic-box initial conditions that cosmologists bring -- from MUSIC,
monofonIC, N-GenIC, 2LPTic, or a GADGET-2/GADGET-4 snapshot -- kept comoving, for a
periodic run: :func:`read_box_ics` -> :class:`BoxICs`.

Two families of files, told apart by their content, not their names:

* GADGET-2 binary, format 1 or 2 (:mod:`hybridtree.io.gadget_binary` describes the
  layout): N-GenIC, 2LPTic, MUSIC's ``gadget2`` output, GADGET's ICFormat/SnapFormat 1, 2.
* GADGET-style HDF5 (:mod:`hybridtree.io.box_hdf5`): monofonIC's ``gadget_hdf5``, MUSIC's
  hdf5, GADGET-4's ICs and snapshots (format 3).

Either may be a set of files: ``STEM.0`` ... ``STEM.(n-1)`` (binary, monofonIC's
``ics.hdf5.0``) or ``STEM.0.hdf5`` ... (GADGET-4), n from the header's ``num_files`` /
``NumFilesPerSnapshot``; the caller names any file of the set or its stem.

Both hold GADGET's comoving numbers: positions x in L/h, masses in M/h, velocities
u = v_pec / sqrt(a) in V (v_pec = a dx/dt), with L, M, V the file's units (stated in an
HDF5 file's ``Header`` or ``Parameters``; a binary file states none: GADGET's kpc/h,
10^10 Msun/h, km/s, unless the caller says otherwise -- MUSIC often writes Mpc/h).
:func:`read_box_ics` divides h out and converts to the run's internal units (G = 1):

    pos = x L / (h L_int),   vel = sqrt(a) u V / V_int,   mass = m M / (h M_int),
    box = BoxSize L / (h L_int),

and wraps positions into [0, box) (particles slightly outside are wrapped; more than one
box outside means a wrong box or unit, an error).  A file without ``HubbleParam`` (or 0)
is taken to have no h in its units.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np

from ..config.units import Units
from .box_hdf5 import read_hdf5_part
from .gadget_binary import FilePart, binary_layout, read_binary_part
from .gadget_defaults import GADGET_DEFAULT_UNITS
from .hdf5_files import N_TYPES, SnapshotError

__all__ = ["BoxICs", "read_box_ics", "box_ics_count", "box_ics_files"]

#: part K of a set: STEM.K (GADGET-2, monofonIC) or STEM.K.hdf5 (GADGET-4)
_PART = re.compile(r"^(.+)\.(\d+)(\.hdf5)?$")


@dataclass
class BoxICs:
    """A periodic box of particles, comoving, in internal units (G = 1), h divided out:
    ``pos`` (N, 3) positions in [0, box), ``vel`` (N, 3) peculiar velocities a dx/dt,
    ``mass`` (N,), ``ids`` (N,) uint64, ``types`` (N,) int8 GADGET types, ordered by
    type, then file, then row; ``box`` the side; ``a`` the scale factor (the header's
    Time); ``omega_m``, ``omega_lambda``, ``h`` from Omega0, OmegaLambda, HubbleParam
    (None where absent); ``source`` the format read, in words."""
    pos: np.ndarray
    vel: np.ndarray
    mass: np.ndarray
    ids: np.ndarray
    types: np.ndarray
    box: float
    a: float
    omega_m: float | None
    omega_lambda: float | None
    h: float | None
    source: str


def _read_part(path: Path, header_only: bool = False) -> FilePart:
    """One file, by its content: GADGET-2 binary (either format; ``header_only``: its
    header alone, :func:`read_binary_part`) or HDF5."""
    if not path.is_file():
        raise SnapshotError(f"{path}: no such file")
    if binary_layout(path) is not None:
        return read_binary_part(path, header_only)
    if h5py.is_hdf5(path):
        return read_hdf5_part(path, header_only)
    raise SnapshotError(f"{path}: neither a GADGET-2 binary file (format 1 or 2) nor an HDF5 "
                        f"file")


def _first_file(path: Path) -> Path:
    """``path`` if it is a file, else for a stem its first part or its HDF5 file."""
    if path.is_file():
        return path
    tried = [path.with_name(f"{path.name}{end}") for end in (".0", ".0.hdf5", ".hdf5")]
    for q in tried:
        if q.is_file():
            return q
    raise SnapshotError(f"{path}: no such file (nor {', '.join(q.name for q in tried)})")


def box_ics_files(path: str | Path) -> list[Path]:
    """The files of the IC set that ``path`` (any of its files, or its stem) belongs to,
    in order; SnapshotError if one is missing."""
    return _set(Path(path), header_only=True)[0]


def box_ics_count(path: str | Path) -> int:
    """The number of particles of the IC set at ``path`` from its files' headers and
    block sizes (nothing of the particles read), to size a run before the set is read;
    SnapshotError where they disagree (a truncated file, a lying header)."""
    files, first = _set(Path(path), header_only=True)
    parts = [first] + [_read_part(q, header_only=True) for q in files[1:]]
    seen = np.sum([p.npart for p in parts], axis=0)
    _check_total(first, seen, len(parts))
    return int(seen.sum())


def _check_total(first: FilePart, seen: np.ndarray, n_files: int) -> None:
    """SnapshotError unless the first file's totals (if a set's) are the files' sum."""
    if n_files > 1 and first.npart_total is not None and (seen != first.npart_total).any():
        raise SnapshotError(f"{first.path}: its header's total particle numbers "
                            f"{first.npart_total.tolist()} differ from the {n_files} files' "
                            f"{seen.tolist()}: an incomplete or mixed set")


def _set(path: Path, header_only: bool = False) -> tuple[list[Path], FilePart]:
    """The files of the set at ``path`` and its first part (``header_only``: see
    :func:`_read_part`)."""
    first = _first_file(path)
    part = _read_part(first, header_only)
    n = part.num_files
    if n <= 1:
        return [first], part
    m = _PART.match(first.name)
    if not m:
        raise SnapshotError(f"{first}: its header says the set has {n} files, but the name is "
                            f"not STEM.K or STEM.K.hdf5, so the others cannot be found")
    files = [first.with_name(f"{m.group(1)}.{k}{m.group(3) or ''}") for k in range(n)]
    for k, q in enumerate(files):
        if not q.is_file():
            raise SnapshotError(f"{first}: {q.name}, file {k} of this {n}-file set, is "
                                f"missing (an incomplete set)")
    return files, part


def _check_positions(part: FilePart, box: float) -> None:
    """Positions (file units) within one box of [0, box), and finite."""
    for t in range(N_TYPES):
        x = part.pos[t]
        bad = ~((x >= -box) & (x < 2 * box)).all(axis=1)      # NaN fails both
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            odd = "" if np.isfinite(x[bad]).all() else " (or are not finite)"
            raise SnapshotError(
                f"{part.path}: {int(bad.sum())} particles of type {t} lie more than one box "
                f"outside [0, BoxSize = {box:g}){odd} (e.g. row {i} at {x[i].tolist()}): a "
                f"wrong BoxSize or length unit?")


def read_box_ics(path: str | Path, units: Units, *, length_unit_cm: float | None = None,
                 mass_unit_g: float | None = None,
                 velocity_unit_cm_per_s: float | None = None) -> BoxICs:
    """The periodic box in ``path`` (a GADGET-2 binary or GADGET-style HDF5 file, any
    file of a multi-file set, or the set's stem), comoving, in the internal ``units``
    with h divided out (:class:`BoxICs`; the module docstring gives the conversion).

    ``length_unit_cm``, ``mass_unit_g``, ``velocity_unit_cm_per_s``: the unit of the
    file's numbers (cgs; length and mass *with* h: 3.085678e24 for Mpc/h), replacing what
    the file states or GADGET's defaults (3.085678e21, 1.989e43, 1e5: kpc/h, 10^10 Msun/h,
    km/s).  Raises SnapshotError (a ValueError) naming the file for anything that is not a
    readable periodic box.
    """
    files, first = _set(Path(path))
    parts = [first if q == first.path else _read_part(q) for q in files]
    for p in parts[1:]:
        if p.source.split(" (")[0] != first.source.split(" (")[0]:
            raise SnapshotError(f"{p.path}: {p.source}, but {first.path.name} is "
                                f"{first.source}: files of different sets")
        if (p.time, p.box) != (first.time, first.box):
            raise SnapshotError(f"{p.path}: Time {p.time} and BoxSize {p.box} differ from "
                                f"{first.path.name}'s {first.time}, {first.box}: files of "
                                f"different sets")
    box, a, z = first.box, first.time, first.redshift
    if box is None or not box > 0:
        raise SnapshotError(f"{first.path}: BoxSize is {'absent' if box is None else box}: "
                            f"not a periodic box")
    if a is None or not a > 0:
        raise SnapshotError(f"{first.path}: Time (the scale factor) is "
                            f"{'absent' if a is None else a}, not positive")
    if z is not None and abs(a * (1.0 + z) - 1.0) > 1e-3:
        raise SnapshotError(f"{first.path}: Time = {a:g} is not the scale factor of Redshift "
                            f"= {z:g} (1/(1 + z) = {1 / (1 + z):g}): not comoving coordinates")
    seen = np.sum([p.npart for p in parts], axis=0)
    _check_total(first, seen, len(parts))
    for p in parts:
        _check_positions(p, box)

    stated = first.units or tuple(GADGET_DEFAULT_UNITS.values())
    length = length_unit_cm or stated[0]
    mass_u = mass_unit_g or stated[1]
    velocity = velocity_unit_cm_per_s or stated[2]
    h = first.h if first.h is not None and first.h > 0 else None
    hh = 1.0 if h is None else h
    to_length = length / hh / units.length_cm

    def gather(key: str) -> list[np.ndarray]:
        return [getattr(p, key)[t] for t in range(N_TYPES) for p in parts]

    ids_list = gather("ids")
    n = int(seen.sum())
    if any(i is None for i in ids_list):
        if not all(i is None or len(i) == 0 for i in ids_list):
            raise SnapshotError(f"{first.path}: ParticleIDs are missing in some files or "
                                f"types but not in others")
        ids = np.arange(1, n + 1, dtype=np.uint64)      # GADGET numbers them so too
    else:
        ids = np.concatenate(ids_list).astype(np.uint64)
    box_int = box * to_length
    pos = np.concatenate(gather("pos")).astype(np.float64) * to_length
    pos = np.mod(pos, box_int)
    pos[pos >= box_int] = 0.0      # a tiny negative x mod box rounds to box itself
    vel = np.concatenate(gather("vel")).astype(np.float64) * (
        np.sqrt(a) * velocity / units.velocity_cm_per_s)
    mass = np.concatenate(gather("mass")).astype(np.float64) * (
        mass_u / hh / units.mass_g)
    types = np.repeat(np.arange(N_TYPES, dtype=np.int8), seen)
    # an empty file says no element sizes: describe the set by one that holds particles
    source = next((p.source for p in parts if p.npart.sum()), first.source)
    source += f", {len(parts)} files" if len(parts) > 1 else ""
    return BoxICs(pos.reshape(n, 3), vel.reshape(n, 3), mass, ids, types, float(box_int),
                  float(a), first.omega_m, first.omega_lambda, h, source)
