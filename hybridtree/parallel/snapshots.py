"""Snapshots of a run on many processes: written together, read back by any number.

Two layouts (``output.snapshot_files``):

- ``single``: the particles are gathered on process 0 (in ID order) and written as one
  file, ``snapshot_NNNN.hdf5`` -- simple, for small N (process 0 must hold them all);
- ``per_process``: every process writes its own particles to ``snapshot_NNNN.K.hdf5``
  (GADGET's multi-file convention: ``NumFilesPerSnapshot`` = number of processes,
  ``NumPart_ThisFile``/``NumPart_Total``, the same ``RunState/SetId`` in every part).

A set is committed as a whole: every part is first written under a temporary name;
only when all parts are complete do processes 1.. rename theirs, and process 0 renames
part 0 last.  Part 0 under its final name therefore means the whole set is there; a
run killed in between leaves no part 0, and readers refuse a set with a missing part.

Reading (:func:`read_run_share`) works for any number of readers whatever the number
of writers: every reader takes an equal slice of every file (see
:func:`hybridtree.io.snapshot.read_particles`), and IDs are checked to be unique
across all readers.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ..io.snapshot import (Snapshot, SnapshotError, SnapshotWriteError, check_unique_ids, read_particles, read_snapshot, write_snapshot)
from ..particles import N_TYPES, Particles
from ..config.units import Units
from .comm import Comm, CollectiveError

__all__ = ["LAYOUTS", "file_name", "write_run_snapshot", "read_run_share", "read_particles_share",
           "check_unique_ids_across"]

LAYOUTS = ("single", "per_process")

_ROW = np.dtype([("pos", "f8", 3), ("vel", "f8", 3), ("mass", "f8"), ("id", "u8"),
                 ("acc", "f8", 3), ("pot", "f8"), ("type", "u1")])


def _rows(p: Particles) -> np.ndarray:
    rows = np.empty(len(p), _ROW)
    rows["pos"], rows["vel"], rows["mass"], rows["id"] = p.pos, p.vel, p.mass, p.ids
    rows["acc"] = p.acc if p.acc is not None else 0.0
    rows["pot"] = p.pot if p.pot is not None else 0.0
    rows["type"] = p.types
    return rows


def agree(comm: Comm, error: str | None, exc: type[Exception] = CollectiveError) -> None:
    """Collective: raise ``exc`` on every process if any process reports an ``error``
    (the first one, naming its process when the processes disagree), so that no process
    waits for the others in a later collective call."""
    errors = comm.allgather(error)
    found = [(rank, e) for rank, e in enumerate(errors) if e is not None]
    if found:
        rank, e = found[0]
        same = len(found) == comm.size and all(x == e for _, x in found)
        where = "" if same or comm.size == 1 else f" (process {rank} of {comm.size})"
        raise exc(f"{e}{where}")


def file_name(stem: str, part: int | None = None) -> str:
    """``STEM.hdf5``, or part K of a multi-file set: ``STEM.K.hdf5``."""
    return f"{stem}.hdf5" if part is None else f"{stem}.{part}.hdf5"


def write_run_snapshot(comm: Comm, folder: Path, stem: str, p: Particles, time: float,
                       units: Units, parameters: dict[str, Any], run_state: dict[str, Any],
                       layout: str = "single", cosmology: dict[str, float] | None = None,
                       double: bool = True) -> list[Path]:
    """Collective: write this process's particles ``p`` (with their accelerations and
    potentials) as ``folder/STEM.hdf5`` (or the parts ``STEM.K.hdf5`` in the
    ``per_process`` layout); returns the paths this process wrote.  A failure anywhere
    raises CollectiveError everywhere, and no part of the new snapshot is left under its
    final name.  ``cosmology``, ``double``: see :func:`hybridtree.io.snapshot.write_snapshot`
    (one process: ``p`` may be its :class:`~hybridtree.io.hdf5_columns.ParticleChunks`)."""
    if comm.size == 1:
        path = folder / file_name(stem)
        try:
            return [write_snapshot(path, p, time, units, parameters, run_state, overwrite=True,
                                    cosmology=cosmology, double=double)]
        except SnapshotWriteError:      # names the snapshot already
            raise
        except OSError as exc:       # name the file: "No space left on device" alone is not enough
            raise SnapshotWriteError(exc.errno, exc.strerror or str(exc), str(path)) from None
    if layout == "single":
        rows = comm.gather_array(_rows(p))
        error, paths = None, []
        if comm.rank == 0:
            rows = rows[np.argsort(rows["id"], kind="stable")]
            whole = Particles(rows["pos"], rows["vel"], rows["mass"], rows["id"],
                              rows["acc"], rows["pot"], rows["type"])
            try:
                paths = [write_snapshot(folder / file_name(stem), whole, time, units,
                                        parameters, run_state, overwrite=True,
                                        cosmology=cosmology, double=double)]
            except OSError as exc:
                error = f"writing {folder / file_name(stem)}: {exc.strerror or exc}"
        agree(comm, error)
        return paths
    if layout != "per_process":
        raise ValueError(f"unknown snapshot layout {layout!r} (one of {', '.join(LAYOUTS)})")
    total = np.rint(comm.allreduce(np.bincount(p.types, minlength=N_TYPES).astype(float))
                    ).astype(np.uint64)
    set_id = comm.bcast(int.from_bytes(os.urandom(7), "little") if comm.rank == 0 else None)
    final = folder / file_name(stem, comm.rank)
    state = {**run_state, "SetId": set_id}
    tmp, error = None, None
    try:
        tmp = write_snapshot(final, p, time, units, parameters, state, overwrite=True,
                             part=(comm.rank, comm.size, total), commit=False,
                             cosmology=cosmology, double=double)
    except OSError as exc:
        error = f"writing {final}: {exc.strerror or exc}"
    try:
        agree(comm, error)
    except CollectiveError:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        raise
    # part 0 last: its presence under the final name marks a complete set; an older set
    # of this name (a restart point written again) loses its part 0 first, so that
    # for no moment its part 0 stands beside parts of the new set
    if comm.rank == 0:
        final.unlink(missing_ok=True)
    comm.barrier()
    if comm.rank != 0:
        os.replace(tmp, final)
    comm.barrier()
    if comm.rank == 0:
        os.replace(tmp, final)
    comm.barrier()
    return [final]


def check_unique_ids_across(comm: Comm, ids: np.ndarray, where: str) -> None:
    """Collective: every ID occurs once over all processes (IDs meet on process
    ID mod size, one Alltoallv); SnapshotError everywhere otherwise."""
    if comm.size == 1:
        check_unique_ids(ids, where)
        return
    ids = np.asarray(ids, np.uint64)
    owner = (ids % np.uint64(comm.size)).astype(np.int64)
    order = np.argsort(owner, kind="stable")
    mine = comm.alltoallv(ids[order], np.bincount(owner, minlength=comm.size))
    error = None
    try:
        check_unique_ids(mine, where)
    except SnapshotError as exc:
        error = str(exc)
    agree(comm, error, SnapshotError)


def _share(comm: Comm, read, *args):
    """Run a reader on every process for its share; any reader's SnapshotError is
    raised on every process.  One process: the reader checks the IDs itself."""
    result, error = None, None
    try:
        result = read(*args, share=(comm.rank, comm.size))
    except SnapshotError as exc:
        error = str(exc)
    agree(comm, error, SnapshotError)
    return result


def read_run_share(comm: Comm, path: str | Path) -> Snapshot:
    """Collective: this process's share of a run snapshot (one file or a set, written by
    any number of processes)."""
    snap = _share(comm, read_snapshot, path)
    if comm.size > 1:           # one reader has checked its IDs already
        check_unique_ids_across(comm, snap.particles.ids, str(path))
    return snap


def read_particles_share(comm: Comm, path: str | Path, types: str, units: Units
                         ) -> tuple[Particles, float, Units | None]:
    """Collective: this process's share of the particles of a GADGET-style file (ICs)."""
    p, t, u = _share(comm, read_particles, path, types, units)
    if comm.size > 1:           # one reader has checked its IDs already
        check_unique_ids_across(comm, p.ids, str(path))
    return p, t, u
