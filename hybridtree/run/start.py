"""Where a :class:`hybridtree.run.simulation.Simulation` begins (:class:`Start`): the
particles of a new run (its settings' initial conditions, the API caller's arrays, or a
file that is no run snapshot), or the state of a run snapshot it continues; and the
warning for a first state whose units look wrong.  Each is refused (:class:`RunError`)
before its particles are drawn or read when the run is too big for this machine.
Units: internal (G = 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config.settings import Settings, settings_from_flat
from ..config.units import Units
from ..ics.cosmo_box import BoxRows
from ..ics.rows import ModelRows
from ..io.snapshot import Snapshot, SnapshotError, count_particles, resolve_snapshot
from ..parallel.comm import Comm
from ..parallel.snapshots import check_unique_ids_across, read_particles_share
from ..particles import Particles
from .assemble import schedule_of
from .options import background_of, box_of, settings_units
from .processes import RunError, run_comm, together
from .restart import exact_box_state, load_restart, snapshot_a
from .setup import (box_file, check_end, check_file_cosmology, check_particles, drawn_rows,
                    drawn_time, draws_into_state, initial_conditions, particles_from_arrays)
from .size import check_memory, ics_count

__all__ = ["Start", "VIRIAL_RANGE", "caller_particles", "continued_start", "foreign_particles",
           "id_range", "new_start", "snapshot_path", "virial_warning"]

#: 2K/|W| of a new run's first state outside this range is said in a warning (a run that
#: starts cold, K = 0, is taken as meant): above 10 nearly every particle is unbound, below
#: 0.01 the velocities are all but nil -- both the mark of initial conditions read in other
#: units than they were written in (velocities in km/s taken as 207 km/s, or the reverse,
#: move 2K/|W| by a factor 43 000)
VIRIAL_RANGE = (0.01, 10.0)


@dataclass
class Start:
    """Where a simulation begins: its particles (a generated sphere not yet drawn:
    :class:`hybridtree.ics.rows.ModelRows`, drawn into the state), time, step, next
    snapshot number, initial energy (None: measure it) and the snapshot it continues
    (None: new run)."""
    particles: Particles | ModelRows | BoxRows
    time: float
    step: int
    snapshot: int              # number of the next scheduled snapshot
    e0: float | None
    restart: Snapshot | None
    a: float | None = None      # a continued cosmological run: the snapshot's scale factor
    note: str | None = None     # a continued run: what to say of its changed settings


def new_start(settings: Settings, comm: Comm, to_end: bool = False
              ) -> tuple[Settings, Start]:
    """The settings and the start of a new run of ``settings``: its initial conditions at
    their time; a periodic box read from a file sets ics.box to the file's side (its one
    home from then on: :func:`hybridtree.run.options.box_of`, stored with the run).
    ``to_end``: the run goes to time.t_end, which must be a whole number of steps after
    the start."""
    n, grid = together(comm, ics_count, settings)
    # before any particle is drawn or read
    check_memory(settings, comm, n, grid=grid, drawn=draws_into_state(settings, comm.size))
    if settings.ics.kind == "box_file":
        p, t0, box = together(comm, box_file, settings, settings_units(settings))
        lo, hi = len(p) * comm.rank // comm.size, len(p) * (comm.rank + 1) // comm.size
        share = Particles(p.pos[lo:hi], p.vel[lo:hi], p.mass[lo:hi], p.ids[lo:hi],
                          types=p.types[lo:hi])
        return settings.with_overrides({"ics.box": box}), Start(share, t0, 0, 0, None, None)
    rows = together(comm, drawn_rows, settings, comm)
    if rows is not None:        # drawn block by block into the state: never whole on the host
        t0 = drawn_time(settings)
        if to_end:
            check_end(settings, t0)
        return settings, Start(rows, t0, 0, 0, None, None)
    particles, t0 = together(comm, initial_conditions, settings, settings_units(settings), comm)
    if to_end:
        check_end(settings, t0)
    return settings, Start(particles, t0, 0, 0, None, None)


def continued_start(path: str, overrides: dict[str, Any], comm: Comm, to_end: bool = False
                    ) -> tuple[Settings, Start]:
    """The settings (changed by flat ``overrides``) and the state of run snapshot
    ``path``; ``to_end`` as :func:`new_start`'s."""
    settings, snap, note = together(comm, load_restart, path, overrides, comm)
    step = int(snap.run_state["Step"])
    a = None
    if settings.cosmology.enabled:
        # the schedule goes on from the snapshot's a and t, whatever its settings say
        # (refused here, before the device is taken, where it cannot)
        a = together(comm, snapshot_a, path)
        together(comm, schedule_of, settings, background_of(settings), snap.time, step, a)
    periodic = box_of(settings) is not None
    if periodic or settings.cosmology.enabled:
        together(comm, exact_box_state, path, snap.particles, periodic)
    if to_end:
        check_end(settings, snap.time)
    together(comm, check_particles, snap.particles, f"restart snapshot {path}", comm)
    return settings, Start(snap.particles, snap.time, step,
                           int(snap.run_state["SnapshotNumber"]) + 1,
                           float(snap.run_state["InitialEnergy"]), snap, a=a, note=note)


def caller_particles(settings: Settings, comm: Comm, pos: Any, vel: Any, mass: Any,
                     ids: Any, types: Any = None) -> Particles:
    """Checked float64 copies of this process's share of the API caller's arrays; IDs
    default to 1..N over all processes, in rank order."""
    shape = np.shape(mass)
    n_local = int(shape[0]) if shape else 0
    # refused before the arrays are copied (or reach the device) when too big
    check_memory(settings, comm, int(comm.allreduce(float(n_local))[0]), n_local=n_local)
    p = together(comm, particles_from_arrays, pos, vel, mass, ids, types)
    if comm.size > 1:
        if ids is None:         # 1..N over all processes, in rank order
            counts = comm.allgather(len(p))
            p.ids += np.uint64(sum(counts[:comm.rank]))
        check_unique_ids_across(comm, p.ids, "Simulation ids")
    check_particles(p, "Simulation particles", comm)
    return p


def snapshot_path(path: Any) -> str:
    """The snapshot file ``path`` names (a file, or a stem of files one per process)."""
    try:
        return str(resolve_snapshot(path))
    except SnapshotError as exc:
        raise RunError(f"{exc}") from None


def foreign_particles(path: str, flat: dict[str, Any]) -> tuple[Particles, float, Units]:
    """This process's share of the particles of ``path``, a file that is no run
    snapshot, in the units of the new run of flat settings ``flat`` (as ics.kind = "file"
    reads them), their start time and those units."""
    comm = run_comm()
    cfg = together(comm, settings_from_flat, flat)
    units = settings_units(cfg)
    try:
        n = together(comm, count_particles, path, "all")
    except SnapshotError as exc:
        raise RunError(f"{exc}") from None
    check_memory(cfg, comm, n)          # before any particle is read
    try:
        p, t, _ = read_particles_share(comm, path, "all", units)
    except SnapshotError as exc:
        raise RunError(f"{exc}") from None
    t = together(comm, check_file_cosmology, cfg, path, t, "the particles")
    return p, t, units


def virial_warning(mom: dict) -> str | None:
    """What to say (None: nothing) of a first state whose 2K/|W| is outside
    :data:`VIRIAL_RANGE` (``mom``: the stepper's sums with ``kinetic`` and ``potential``)."""
    kin, pot = float(mom["kinetic"]), float(mom["potential"])
    if not (kin > 0 and pot < 0):
        return None
    q = 2 * kin / abs(pot)
    low, high = VIRIAL_RANGE
    if low <= q <= high:
        return None
    why = (f"above {high:g} nearly every particle is unbound" if q > high else
           f"below {low:g} the velocities are all but nil")
    return (f"the initial state has 2K/|W| = {q:.3g} (1 in virial equilibrium; {why}): "
            f"are the initial conditions in the units they are read in? (hybridtree info "
            f"FILE shows the units a file states; internal units: G = 1)")


def id_range(ids: np.ndarray | range) -> int | None:
    """lo when the (unique) ``ids`` are lo .. lo + len - 1, else None (``ids`` a range:
    a generated model's, :attr:`hybridtree.ics.rows.ModelRows.ids`, never made whole)."""
    if not len(ids):
        return None
    if isinstance(ids, range):
        return ids.start if ids.step == 1 else None
    lo = int(ids.min())
    return lo if int(ids.max()) - lo + 1 == len(ids) else None
