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

__all__ = ["N_TYPES", "PART_RE", "SnapshotError", "attr_number", "attr_value", "open_file",
           "resolve_snapshot", "snapshot_files"]


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
