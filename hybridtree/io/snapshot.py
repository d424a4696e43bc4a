"""GADGET-4-style HDF5 snapshots: one file per snapshot, written atomically.

Layout (what GADGET-4 writes for a non-cosmological run, so h5py, pynbody and yt read it):

- ``Header``: ``NumPart_ThisFile``, ``NumPart_Total``, ``NumPart_Total_HighWord``,
  ``MassTable``, ``Time``, ``Redshift`` (0), ``BoxSize`` (0: open boundaries),
  ``NumFilesPerSnapshot`` (1), ``Omega0``/``OmegaLambda`` (0), ``HubbleParam`` (1),
  ``Flag_DoublePrecision`` (1; 0 for float32 files) and the other ``Flag_*`` (0).
- ``PartType1``: ``Coordinates``, ``Velocities``, ``Masses``, ``ParticleIDs``, and for run
  snapshots ``Potential`` and ``Acceleration`` (float64, or float32 where
  ``output.double_precision = false``; internal units, G = 1).  Each
  dataset carries GADGET-4's ``a_scaling``/``h_scaling`` (0: physical quantities) and
  ``to_cgs`` attributes.
- ``Units``: ``UnitLength_in_cm``, ``UnitMass_in_g``, ``UnitVelocity_in_cm_per_s``,
  ``UnitTime_in_s``, ``GravitationalConstant`` (1 in these units).
- ``Parameters``: every validated setting as an attribute ``section.name``, and
  ``Time_GYR`` (the time in Gyr, where pynbody looks for it).
- ``RunState`` (hybridtree's own): ``Step``, ``SnapshotNumber``, ``InitialEnergy``; what a
  restart needs beyond the particles.
- ``Config``: only ``VORONOI`` (:data:`UNITS_MARK`), so that ``yt.load`` and ``pynbody.load``
  read the file as AREPO-flavoured GADGET, the one flavour whose units they take from the
  file (for GADGET files yt assumes 1 kpc, 1e10 Msun, 1 km/s).  yt still sees no domain
  (``BoxSize`` 0); :func:`hybridtree.io.load_yt` gives it one.

A snapshot, its parts and its stem: ``snapshot_0002.hdf5``, or the multi-file set
``snapshot_0002.0.hdf5`` ... ``snapshot_0002.(n-1).hdf5``; the readers take any file of
either or the stem ``snapshot_0002`` (:func:`resolve_snapshot`) and read the whole snapshot.

This is the public module: the writing side lives in :mod:`hybridtree.io.hdf5_write`, the
reading side (with :class:`Particles` and :class:`Snapshot`) in :mod:`hybridtree.io.hdf5_read`;
their public names are re-exported here, beside the names of a run's snapshot files.
Files of other codes are read in the units and the convention they state, or GADGET's
(:mod:`hybridtree.io.gadget_units` says how).
"""

from __future__ import annotations

import re
from pathlib import Path

import h5py
import numpy as np

from . import hdf5_read
from .hdf5_read import (GADGET_DEFAULT_UNITS, Particles, Snapshot, SnapshotError, StatedUnits,
                        check_unique_ids, count_particles, file_cosmology, read_particles,
                        read_snapshot, resolve_snapshot, snapshot_files)
from .hdf5_columns import ParticleChunks, chunks_of
from .hdf5_write import UNITS_MARK, SnapshotWriteError, atomic_path, write_snapshot

__all__ = ["GADGET_DEFAULT_UNITS", "SNAPSHOT_RE", "ParticleChunks", "Particles", "Snapshot",
           "SnapshotError", "chunks_of",
           "SnapshotWriteError", "StatedUnits", "UNITS_MARK", "atomic_path", "check_unique_ids",
           "count_particles", "file_cosmology", "latest_run_point", "latest_snapshot",
           "read_snapshot", "read_particles", "RESTART_STEM", "restart_point", "resolve_snapshot",
           "run_point_step", "snapshot_files", "snapshot_name", "write_snapshot"]

#: the number of GADGET particle types (PartType0..5), also taken from here
N_TYPES = hdf5_read.N_TYPES
#: a run's snapshot file: group 1 the snapshot number, group 2 the part (multi-file) or None
SNAPSHOT_RE = re.compile(r"^snapshot_(\d+)(?:\.(\d+))?\.hdf5$")
#: the restart point's name without ``.hdf5`` (a set: ``restart.K.hdf5``)
RESTART_STEM = "restart"



def snapshot_name(number: int, part: int | None = None) -> str:
    """``snapshot_0005.hdf5``, or part K of a multi-file one: ``snapshot_0005.K.hdf5``."""
    return f"snapshot_{number:04d}.hdf5" if part is None else f"snapshot_{number:04d}.{part}.hdf5"


def latest_snapshot(folder: str | Path) -> Path | None:
    """The newest complete run snapshot in ``folder``: ``snapshot_NNNN.hdf5``, or part 0
    of a multi-file set (written last, so its presence means the set is complete);
    None if there is none.  Temporary files of unfinished writes never match."""
    best: tuple[int, Path] | None = None
    for p in Path(folder).glob("snapshot_*.hdf5"):
        m = SNAPSHOT_RE.match(p.name)
        if m and m.group(2) in (None, "0") and (best is None or int(m.group(1)) > best[0]):
            best = (int(m.group(1)), p)
    return best[1] if best else None


def run_point_step(path: Path) -> int | None:
    """The step stored in a run snapshot's ``RunState`` (None: unreadable or not a run's)."""
    try:
        with h5py.File(path, "r") as f:
            step = f["RunState"].attrs["Step"] if "RunState" in f else None
    except (OSError, KeyError):
        return None
    return None if step is None else int(np.asarray(step).reshape(-1)[0])


def restart_point(folder: str | Path) -> Path | None:
    """The folder's restart point: ``restart.hdf5`` or part 0 of a ``restart.K.hdf5`` set
    (renamed last, so its presence means the set is complete); None if there is none."""
    folder = Path(folder)
    for name in (f"{RESTART_STEM}.hdf5", f"{RESTART_STEM}.0.hdf5"):
        if (folder / name).is_file():
            return folder / name
    return None


def latest_run_point(folder: str | Path) -> Path | None:
    """Where a run in ``folder`` continues: the newest complete snapshot, or the restart
    point if it holds a later step; None if the folder has neither."""
    snap, restart = latest_snapshot(folder), restart_point(folder)
    if restart is None:
        return snap
    step = run_point_step(restart)
    if step is None:
        return snap
    if snap is None or step > (run_point_step(snap) or -1):
        return restart
    return snap
