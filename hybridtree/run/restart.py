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
from .options import BOX_KINDS
from .processes import RunError
from .size import check_memory

__all__ = ["FIXED", "IGNORED", "changes", "exact_box_state", "load_restart", "snapshot_a"]


#: settings a restart cannot change: the snapshot's particles are the initial
#: conditions, so ``ics.*`` given on a restart are ignored (and said to be)
IGNORED = "ics."
#: what a restart with other values of these would make of the snapshot's state is no
#: continuation of its run: refused
FIXED = ("cosmology.enabled", "cosmology.omega_m", "cosmology.omega_lambda", "cosmology.h")


def load_restart(path: str, overrides: dict[str, Any], comm: Comm
                 ) -> tuple[Settings, Snapshot, str | None]:
    """This process's share of run snapshot ``path``, its settings changed by
    ``overrides`` (output.dir defaults to the snapshot's folder) and what to say of the
    changes (None: nothing changed; :func:`changes`).  The settings and the particle count
    come from the attributes first: a file that is no run snapshot, a change a restart
    cannot take, or a run too big for this machine (:func:`check_memory`), is refused
    before any particle is read."""
    settings, n, note, error = None, 0, None, None
    try:
        settings, n, note = _restart_header(path, overrides)
    except RunError as exc:
        error = str(exc)
    agree(comm, error, RunError)        # every process, before the collective check
    check_memory(settings, comm, n, restart=True)
    try:
        snap = read_run_share(comm, path)
    except SnapshotError as exc:
        raise RunError(f"restart: {exc}") from None
    return settings, snap, note


def _same(given: Any, stored: Any) -> bool:
    """An override ``given`` says what the snapshot's setting ``stored`` does (numbers as
    numbers: 60 is 60.0)."""
    if isinstance(given, (int, float)) and isinstance(stored, (int, float, np.number)):
        return float(given) == float(stored)
    return str(given).lower() == str(stored).lower()


def _refusal(old: dict[str, Any], overrides: dict[str, Any]) -> str | None:
    """Why a run of flat settings ``old`` cannot continue with ``overrides`` (None: it
    can)."""
    for key in FIXED:
        if key in overrides and not _same(overrides[key], old.get(key)):
            if key == "cosmology.enabled":
                was = "a cosmological" if old.get(key) else "an isolated (not cosmological)"
                return (f"cosmology.enabled = {str(overrides[key]).lower()} on a restart of "
                        f"{was} run: a restart continues the snapshot's run, whose state "
                        f"is {'comoving' if old.get(key) else 'not'} in an expanding "
                        f"universe; start a new run instead")
            return (f"{key} = {overrides[key]} on a restart of a run with {key} = "
                    f"{old.get(key)}: the snapshot's state is of its own cosmology; start a "
                    f"new run for another one")
    kind = overrides.get("ics.kind", old.get("ics.kind"))
    was_box = str(old.get("ics.kind")) in BOX_KINDS
    if (str(kind) in BOX_KINDS) != was_box:
        what = "a periodic box" if was_box else "open boundaries"
        return (f"ics.kind = '{kind}' on a restart of a run of ics.kind = "
                f"'{old.get('ics.kind')}' ({what}): a restart continues the snapshot's run "
                f"with its boundaries; start a new run instead")
    return None


def changes(old: dict[str, Any], new: dict[str, Any], ignored: dict[str, Any]
            ) -> str | None:
    """What a restart says of its settings (None: nothing): those that differ between
    the snapshot's flat settings ``old`` and the run's ``new`` (old -> new), and the
    ``ignored`` ones (``ics.*``) given other values than the snapshot's."""
    changed = [f"{k} {old[k]!r} -> {new[k]!r}" for k in sorted(new)
               if k in old and k != "output.dir" and new[k] != old[k]]
    kept = [f"{k} = {v!r} (the run keeps {old.get(k)!r})" for k, v in sorted(ignored.items())
            if not _same(v, old.get(k))]
    parts = []
    if changed:
        parts.append("settings changed from the snapshot's run: " + ", ".join(changed))
    if kept:
        parts.append("ignored (a restart continues from the snapshot's particles, not from "
                     "initial conditions): " + ", ".join(kept))
    return "restart: " + "; ".join(parts) if parts else None


def _restart_header(path: str, overrides: dict[str, Any]
                    ) -> tuple[Settings, int, str | None]:
    """The settings (changed by ``overrides``), particle count of run snapshot ``path``
    and what to say of the changes, from its attributes and datasets' shapes alone."""
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
    _refuse_single_precision(path, str(params.get("ics.kind")) in BOX_KINDS)
    flat = {k: v for k, v in params.items() if "." in k}
    ignored = {k: v for k, v in overrides.items() if k.startswith(IGNORED)}
    try:
        stored = settings_from_flat(flat, path)
        old = stored.flat()
        why = _refusal(old, overrides)
        if why is not None:
            raise RunError(f"restart: {why}")
        kept = {k: v for k, v in overrides.items() if k not in ignored}
        if "output.dir" not in kept:
            kept["output.dir"] = str(Path(path).parent)
        settings = stored.with_overrides(kept)
    except ConfigError as exc:
        raise RunError(f"restart: {exc}") from None
    try:
        return (settings, count_particles(path, "all"),
                changes(old, settings.flat(), ignored))
    except SnapshotError as exc:
        raise RunError(f"restart: {exc}") from None


def _refuse_single_precision(path: str, box: bool) -> None:
    """RunError where run snapshot ``path`` holds float32 particles
    (``output.double_precision = false``: ``Header/Flag_DoublePrecision`` 0): a run
    continued from positions rounded to 2^-24 is no continuation bit for bit.  ``box``:
    a periodic run's snapshot (a new run from it is ``ics.kind = box_file``)."""
    try:
        flag = group_attrs(path, "Header").get("Flag_DoublePrecision", 1)
    except SnapshotError as exc:
        raise RunError(f"restart: {exc}") from None
    if int(np.asarray(flag).reshape(-1)[0]) == 0:
        full, kind = os.path.abspath(path), "box_file" if box else "file"
        raise RunError(f"restart: {path} was written in single precision (output."
                       f"double_precision = false), so a run continued from it would not "
                       f"be the same run bit for bit; restart from a double-precision "
                       f"snapshot or restart point (restart.hdf5), or start a new run from "
                       f"its particles: --set ics.kind={kind} --set ics.file={full}")


def snapshot_a(path: str) -> float:
    """The scale factor of a cosmological run's snapshot ``path`` (its Header/Time, as
    the run's schedule had it); RunError where it has none."""
    try:
        header = group_attrs(path, "Header")
    except SnapshotError as exc:
        raise RunError(f"restart: {exc}") from None
    a = float(np.asarray(header.get("Time", np.nan)).reshape(-1)[0])
    if not (np.isfinite(a) and a > 0):
        raise RunError(f"restart: {path} has no scale factor (Header/Time = {a}): it is "
                       f"not a snapshot of a cosmological run")
    return a


def exact_box_state(path: str, particles: Any, required: bool = True) -> None:
    """A cosmological run's particles (read in GADGET's convention, physical) replaced by
    the exact state its snapshot ``path`` keeps (:data:`hybridtree.io.hdf5_write.
    BOX_STATE`: a periodic box's comoving one, a sphere's physical one), matched by ID, so
    that a restart continues bit for bit.  Without it: RunError where ``required`` (a
    periodic snapshot), else the particles stay as read (a sphere's snapshot of a version
    that did not keep it: the restart is then not bit for bit)."""
    states, id_sets = [], []
    for part in snapshot_files(path):           # every file of a per-process set
        with h5py.File(part, "r") as f:
            for g in (f[f"PartType{t}"] for t in range(N_TYPES) if f"PartType{t}" in f):
                if BOX_STATE not in g:
                    if not required:
                        return
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

