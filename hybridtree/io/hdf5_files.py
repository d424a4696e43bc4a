"""The files of a GADGET-style HDF5 snapshot and their attributes: which files a snapshot
(one file, a multi-file set ``BASE.0.hdf5`` ... ``BASE.(n-1).hdf5``, or its stem) consists of
(:func:`resolve_snapshot`, :func:`snapshot_files`), opening one (:func:`open_file`), plain
values of its attributes (:func:`attr_value`, :func:`attr_number`) and the error a file that
is not a usable snapshot raises (:class:`SnapshotError`).  The layer beneath
:mod:`hybridtree.io.gadget_units` and :mod:`hybridtree.io.hdf5_read`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ..errors import HybridtreeError
from ..particles import N_TYPES

__all__ = ["N_TYPES", "PART_RE", "SnapshotError", "attr_number", "attr_value", "check_ids",
           "check_extra_types", "check_type_count", "finite_number", "header_counts",
           "mass_table", "open_file", "resolve_snapshot", "snapshot_files"]


PART_RE = re.compile(r"^(.+)\.(\d+)\.hdf5$")             # BASE.K.hdf5: part K of a set


class SnapshotError(HybridtreeError, ValueError):
    """A file that is missing, unreadable or not a usable snapshot (a user error)."""


def attr_number(attrs: Any, key: str, default: Any = None) -> Any:
    """Attribute ``key`` as a float (the first element of an array); ``default`` when it
    is absent or not a number."""
    if key not in attrs:
        return default
    try:
        return float(np.asarray(attrs[key]).reshape(-1)[0])
    except (TypeError, ValueError, IndexError):
        return default


def attr_value(value: Any) -> Any:
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


def finite_number(path: Path | str, attrs: Any, where: str, key: str) -> float | None:
    """Attribute ``where/key`` as a finite float, None if absent; SnapshotError naming the
    file, the attribute and the value for anything else (a string, NaN, inf)."""
    if key not in attrs:
        return None
    value = attr_number(attrs, key)
    if value is None or not np.isfinite(value):
        raise SnapshotError(f"{path}: {where}/{key} = {attr_value(attrs[key])!r} is not a "
                            f"finite number")
    return value


def _integers(path: Path | str, header: Any, key: str) -> np.ndarray:
    """``Header/key`` as a 1-D array of non-negative integers (checked)."""
    raw = np.asarray(header[key])
    if raw.ndim > 1 or not (np.issubdtype(raw.dtype, np.integer)
                            or (np.issubdtype(raw.dtype, np.floating)
                                and np.all(np.isfinite(raw)) and np.all(raw == np.round(raw)))):
        raise SnapshotError(f"{path}: Header/{key} = {attr_value(header[key])!r} is not a list "
                            f"of particle numbers (one integer per type)")
    values = raw.reshape(-1)
    if key == "NumPart_Total" and "NumPart_Total_HighWord" in header and raw.dtype == np.int32:
        values = values.view(np.uint32)     # a low word written as a signed int
    if (values < 0).any():
        raise SnapshotError(f"{path}: Header/{key} = {values.tolist()} holds a negative "
                            f"particle number")
    return values.astype(np.uint64)


def header_counts(path: Path | str, header: Any, key: str) -> np.ndarray | None:
    """Per-type particle numbers of ``Header/key`` (int64, one per type of the file's code
    -- GADGET-4's NTYPES is a compile-time option, often 2 for dark matter alone -- padded
    with zeros to at least N_TYPES entries), None if absent.  ``NumPart_Total`` gets its
    ``NumPart_Total_HighWord`` (of any length; entries beyond the types must be 0) added
    as the upper 32 bits where the low word is a 32-bit one; GADGET-4 writes 64-bit totals,
    with or without high words that then repeat their upper half.  SnapshotError for
    anything else."""
    if key not in header:
        return None
    low = _integers(path, header, key)
    if key == "NumPart_Total" and "NumPart_Total_HighWord" in header:
        high = _integers(path, header, "NumPart_Total_HighWord")
        if high[len(low):].any():
            raise SnapshotError(f"{path}: Header/NumPart_Total_HighWord = {high.tolist()} has "
                                f"non-zero entries beyond NumPart_Total's {len(low)} types")
        high = np.concatenate([high[:len(low)], np.zeros(max(len(low) - len(high), 0),
                                                         np.uint64)])
        wide = low >> np.uint64(32)
        if ((wide > 0) & (high > 0) & (wide != high)).any():
            raise SnapshotError(f"{path}: Header/NumPart_Total = {low.tolist()} and "
                                f"NumPart_Total_HighWord = {high.tolist()} disagree")
        low = np.where(wide > 0, low, low + (high << np.uint64(32)))
    if (low >= np.uint64(2 ** 62)).any():
        raise SnapshotError(f"{path}: Header/{key} = {low.tolist()}: an impossible particle "
                            f"number")
    return np.concatenate([low, np.zeros(max(N_TYPES - len(low), 0), np.uint64)]
                          ).astype(np.int64)


def check_type_count(path: Path | str, t: int, n: int, where: str) -> None:
    """SnapshotError for ``n`` > 0 particles of a type ``t`` beyond hybridtree's GADGET types
    0 .. N_TYPES - 1 (``where``: what says so); such a type with no particle is fine."""
    if t >= N_TYPES and n > 0:
        raise SnapshotError(f"{path}: {where} = {n}: particles of type {t}, but hybridtree "
                            f"keeps GADGET types 0 .. {N_TYPES - 1} only; move them to one of "
                            f"PartType0 .. PartType{N_TYPES - 1} or leave them out of the file")


def check_extra_types(path: Path | str, f: h5py.File) -> None:
    """SnapshotError where the file holds particles of a type beyond N_TYPES - 1 (a code
    compiled with more types, GADGET-4's NTYPES > 6): by its ``Header`` counts or by a
    ``PartTypeN`` group's rows (:func:`check_type_count`)."""
    header = f["Header"].attrs if isinstance(f.get("Header"), h5py.Group) else {}
    for key in ("NumPart_ThisFile", "NumPart_Total"):
        counts = header_counts(path, header, key)
        for t in range(N_TYPES, 0 if counts is None else len(counts)):
            check_type_count(path, t, int(counts[t]), f"Header/{key}[{t}]")
    for name in f:
        m = re.fullmatch(r"PartType(\d+)", name)
        g = f[name] if m and int(m.group(1)) >= N_TYPES else None
        if isinstance(g, h5py.Group) and isinstance(g.get("Coordinates"), h5py.Dataset):
            shape = g["Coordinates"].shape
            check_type_count(path, int(m.group(1)), int(shape[0]) if shape else 0,
                             f"{name}/Coordinates rows")


def mass_table(path: Path | str, header: Any) -> np.ndarray:
    """``Header/MassTable`` (one mass per type, any number of types; zeros if absent) padded
    with zeros to at least N_TYPES entries; SnapshotError unless finite and >= 0."""
    table = np.zeros(N_TYPES)
    if "MassTable" in header:
        raw = np.asarray(header["MassTable"])
        if raw.ndim > 1 or not np.issubdtype(raw.dtype, np.number):
            raise SnapshotError(f"{path}: Header/MassTable = {attr_value(header['MassTable'])!r}"
                                f" is not a list of masses")
        table = raw.reshape(-1).astype(np.float64)
        bad = ~(np.isfinite(table) & (table >= 0))
        if bad.any():
            t = int(np.flatnonzero(bad)[0])
            raise SnapshotError(f"{path}: Header/MassTable[{t}] = {table[t]} is not a mass "
                                f"(finite, >= 0)")
        table = np.concatenate([table, np.zeros(max(N_TYPES - len(table), 0))])
    return table


def check_ids(path: Path | str, name: str, ids: np.ndarray, first: int = 0) -> np.ndarray:
    """``ids`` (rows of dataset ``name`` from row ``first``) as uint64; SnapshotError for a
    negative one, which would wrap to 2^64 - |id|."""
    if np.issubdtype(ids.dtype, np.signedinteger) and len(ids) and ids.min() < 0:
        bad = int(np.flatnonzero(ids < 0)[0])
        raise SnapshotError(f"{path}: {name}[{first + bad}] = {int(ids[bad])} is negative "
                            f"(particle IDs are integers >= 0)")
    return ids.astype(np.uint64)


def open_file(path: Path) -> h5py.File:
    if not path.is_file():
        raise SnapshotError(f"{path}: no such file")
    try:
        return h5py.File(path, "r")
    except OSError as exc:
        raise SnapshotError(f"{path}: not a readable HDF5 file ({exc})") from None


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
    with open_file(path) as f:
        header = f["Header"].attrs if "Header" in f else {}
        n_files = int(finite_number(path, header, "Header", "NumFilesPerSnapshot") or 1)
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
