"""Where a continued run comes from: a run snapshot's settings and this process's share of
its particles, refused before any particle is read when the file is no run snapshot or
the run is too big for this machine."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ..config.settings import ConfigError, Settings, settings_from_flat
from ..io.hdf5_files import N_TYPES, snapshot_files
from ..io.hdf5_read import group_attrs
from ..io.hdf5_write import BOX_STATE
from ..io.snapshot import Snapshot, SnapshotError, count_particles
from ..parallel.comm import Comm
from ..parallel.snapshots import agree, read_run_share
from .processes import RunError
from .size import check_memory

__all__ = ["exact_box_state", "load_restart"]


def load_restart(path: str, overrides: dict[str, Any], comm: Comm
                 ) -> tuple[Settings, Snapshot]:
    """This process's share of run snapshot ``path`` and its settings changed by
    ``overrides`` (output.dir defaults to the snapshot's folder).  The settings and the
    particle count come from the attributes first: a file that is no run snapshot, or a
    run too big for this machine (:func:`check_memory`), is refused before any particle
    is read."""
    settings, n, error = None, 0, None
    try:
        settings, n = _restart_header(path, overrides)
    except RunError as exc:
        error = str(exc)
    agree(comm, error, RunError)        # every process, before the collective check
    check_memory(settings, comm, n, restart=True)
    try:
        snap = read_run_share(comm, path)
    except SnapshotError as exc:
        raise RunError(f"restart: {exc}") from None
    return settings, snap


def _restart_header(path: str, overrides: dict[str, Any]) -> tuple[Settings, int]:
    """The settings (changed by ``overrides``) and particle count of run snapshot ``path``,
    from its attributes and datasets' shapes alone."""
    try:
        state = group_attrs(path, "RunState")
        params = group_attrs(path, "Parameters") if "Step" in state else {}
    except SnapshotError as exc:
        raise RunError(f"restart: {exc}") from None
    if "Step" not in state:
        full = os.path.abspath(path)        # a relative ics.file is the config's folder's
        raise RunError(f"restart: {path} is not a snapshot of a hybridtree run (it has no "
                       f"RunState group), so there is no run to continue; to start a new run "
                       f"from its particles use ics.kind = \"file\": a config with the lines "
                       f"ics.kind = \"file\" and ics.file = \"{full}\" (hybridtree run "
                       f"CONFIG), or --set ics.kind=file --set ics.file={full}")
    flat = {k: v for k, v in params.items() if "." in k}
    try:
        settings = settings_from_flat(flat, path)
        if "output.dir" not in overrides:
            overrides = {**overrides, "output.dir": str(Path(path).parent)}
        settings = settings.with_overrides(overrides)
    except ConfigError as exc:
        raise RunError(f"restart: {exc}") from None
    try:
        return settings, count_particles(path, "all")
    except SnapshotError as exc:
        raise RunError(f"restart: {exc}") from None


def exact_box_state(path: str, particles: Any) -> None:
    """A periodic run's particles (read in GADGET's convention, physical) replaced by the
    exact comoving state its snapshot ``path`` keeps (:data:`hybridtree.io.hdf5_write.
    BOX_STATE`), matched by ID, so that a restart continues bit for bit; RunError for a
    periodic snapshot without it."""
    states, id_sets = [], []
    for part in snapshot_files(path):           # every file of a per-process set
        with h5py.File(part, "r") as f:
            for g in (f[f"PartType{t}"] for t in range(N_TYPES) if f"PartType{t}" in f):
                if BOX_STATE not in g:
                    raise RunError(f"restart: {part} has no {BOX_STATE} dataset (the exact "
                                   f"state of a periodic run): it was not written by a "
                                   f"periodic run")
                states.append(g[BOX_STATE][:])
                id_sets.append(g["ParticleIDs"][:].astype(np.uint64))
    state, ids = np.concatenate(states), np.concatenate(id_sets)
    order = np.argsort(ids)
    rows = order[np.searchsorted(ids[order], particles.ids)]
    assert np.array_equal(ids[rows], particles.ids), "the snapshot's IDs and its state's differ"
    particles.pos, particles.vel, particles.mass = (state[rows, :3].copy(),
                                                    state[rows, 3:6].copy(),
                                                    state[rows, 6].copy())

