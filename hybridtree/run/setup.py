"""Setting a run up: its particles, its settings, its stepper and schedule, and where a
restart comes from.

Everything here happens before the first force; user mistakes are :class:`RunError`
(or :class:`hybridtree.config.ConfigError`), raised on every process together under MPI.
The run's processes and :class:`RunError` live in :mod:`hybridtree.run.processes` (re-exported
here); what a run needs of the machine's memory is checked by :mod:`hybridtree.run.size`.
Units: internal (G = 1) unless a docstring says otherwise.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..ics import spheres as ics
from ..config.settings import SCHEMA, ConfigError, Settings, redshift_list, settings_from_flat
from ..gravity.engine import GravitySettings
from ..particles import validate_particles
from ..io.hdf5_read import group_attrs
from ..io.snapshot import Snapshot, SnapshotError, count_particles, file_cosmology
from ..particles import Particles
from ..parallel.comm import Comm
from ..parallel.snapshots import agree, read_particles_share, read_run_share
from .processes import RunError, launched_processes, run_comm, together
from .size import check_memory
from ..integrate.schedule import Cosmic, Uniform
from ..integrate.schemes import BlockSettings
from ..integrate.state import state_backend
from ..integrate.stepper import SerialStepper, Stepper
from ..config.units import Units

__all__ = ["RunError", "launched_processes", "run_comm", "together", "initial_conditions",
           "check_particles", "load_restart", "check_parallel", "grid_shape", "api_settings",
           "particles_from_arrays", "SHORT_NAMES", "background_of", "settings_units",
           "gravity_keys", "make_stepper", "schedule_of", "check_file_cosmology"]


def initial_conditions(settings: Settings, units: Units, comm: Comm | None = None
                       ) -> tuple[Particles, float]:
    """Particles (internal units, centre of mass at rest at the origin) and start time;
    with several processes, this process's share: particles (IDs) N·r/K + 1 .. N·(r+1)/K
    of a generated model, or an equal slice of a file's particles.

    A generated model is the same bits for any number of processes K: each process
    draws only the blocks of IDs its share touches (:func:`hybridtree.ics.generate_share`)
    and the centre of mass comes from exact sums of every block's moments."""
    comm = comm or Comm(None)
    c = settings.ics
    t0 = 0.0
    if c.kind == "file":
        try:
            p, t0, _ = read_particles_share(comm, c.file, c.types, units)
        except SnapshotError as exc:
            raise RunError(f"initial conditions: {exc}") from None
        check_particles(p, f"initial conditions ({c.file})", comm)
        start = check_file_cosmology(settings, c.file, t0, "initial conditions")
        if settings.cosmology.enabled:
            # the origin is the centre of the Hubble flow: no shift; the run's schedule
            # starts at z_start, which must be the file's
            return p, start
        if comm.size == 1:
            p.pos, p.vel = ics.to_com_frame(p.pos, p.vel, p.mass)
        else:
            tot = comm.allreduce(np.concatenate([[p.mass.sum()], p.mass @ p.pos,
                                                 p.mass @ p.vel]))
            p.pos, p.vel = p.pos - tot[1:4] / tot[0], p.vel - tot[4:7] / tot[0]
        return p, t0
    if c.kind == "cosmo_sphere":
        return _cosmo_sphere(settings, comm)
    params = {"radius": c.radius} if c.kind == "cold_sphere" else {"r_max": c.r_max}
    lo, hi = c.n * comm.rank // comm.size, c.n * (comm.rank + 1) // comm.size
    share = ics.generate_share(c.kind, c.n, lo, hi, c.seed, **params)
    # one process takes this same path, so K = 1 gives the bits K = 2, 3, ... give; the
    # exact partial sums keep the traffic O(K) however many blocks there are
    x_cm, v_cm = ics.com_offsets(comm.allgather(ics.exact_column_sums(share.sums)))
    share.pos -= x_cm
    share.vel -= v_cm
    p = Particles(share.pos, share.vel, share.mass, share.ids)
    check_particles(p, f"initial conditions ({c.kind})", comm)
    return p, t0


def check_file_cosmology(settings: Settings, path: str, t0: float, what: str) -> float:
    """The start time of a run from the particles of file ``path`` (read at time ``t0``,
    internal units); RunError where the file and the run disagree: a cosmological file
    (comoving coordinates) needs a cosmological run of its cosmology starting at its
    redshift, and a cosmological run from any other file must start at the file's time."""
    try:
        cosmic = file_cosmology(path)
    except SnapshotError as exc:
        raise RunError(f"{what}: {exc}") from None
    c = settings.cosmology
    if cosmic is None:
        if c.enabled:
            _check_start(settings, t0, f"{what} ({path})")
        return t0
    z = 1.0 / cosmic.a - 1.0
    stated = (f"Omega0 = {cosmic.omega_m:.6g}, OmegaLambda = {cosmic.omega_lambda:.6g}, "
              f"HubbleParam = {cosmic.h:.6g}")
    if not c.enabled:
        raise RunError(
            f"{what} ({path}) are a cosmological snapshot (comoving coordinates at a = "
            f"{cosmic.a:.6g}, z = {z:.6g}; {stated}): start a cosmological run from it, with "
            f"cosmology.enabled = true, cosmology.z_start = {z:.6g}, cosmology.omega_m = "
            f"{cosmic.omega_m:.6g}, cosmology.omega_lambda = {cosmic.omega_lambda:.6g}, "
            f"cosmology.h = {cosmic.h:.6g}")
    run = {"omega_m": (c.omega_m, cosmic.omega_m), "omega_lambda": (c.omega_lambda,
                                                                     cosmic.omega_lambda),
           "h": (c.h, cosmic.h)}
    differ = [k for k, (mine, theirs) in run.items() if abs(mine - theirs) > 1e-6 * abs(theirs)]
    if differ:
        raise RunError(f"{what} ({path}) are of a cosmology with {stated}, but the run's has "
                       + ", ".join(f"cosmology.{k} = {run[k][0]:.6g}" for k in differ)
                       + ": set them to the file's")
    a0 = 1.0 / (1.0 + c.z_start)
    if abs(cosmic.a - a0) > 1e-6 * a0:
        raise RunError(f"{what} ({path}) are at z = {z:.6g}, but cosmology.z_start is "
                       f"{c.z_start}")
    return float(background_of(settings).t_of_a(a0))


def _check_start(settings: Settings, t0: float, what: str) -> None:
    bg = background_of(settings)
    z = settings.cosmology.z_start
    t_start = float(bg.t_of_a(1.0 / (1.0 + z)))
    if abs(t0 - t_start) > 1e-6 * t_start:
        z_file = 1.0 / float(bg.a_of_t(t0)) - 1.0
        raise RunError(f"{what} are at z = {z_file:.6g}, but cosmology.z_start is {z}")


def _cosmo_sphere(settings: Settings, comm: Comm) -> tuple[Particles, float]:
    """This process's share of a cosmological sphere (:mod:`hybridtree.ics.cosmological`) at
    cosmology.z_start, in physical coordinates, and the age then (internal units).  Not
    moved to a centre-of-mass frame: the cube's centre is the origin of the Hubble flow."""
    from ..ics.cosmological import cosmo_sphere_share, sphere_count
    c, bg = settings.ics, background_of(settings)
    count = sphere_count(c.n_grid, c.box, c.radius)
    lo, hi = count * comm.rank // comm.size, count * (comm.rank + 1) // comm.size
    a0 = 1.0 / (1.0 + settings.cosmology.z_start)
    pos, vel, mass, ids = cosmo_sphere_share(c.n_grid, c.box, c.radius, a0, bg, c.seed,
                                             lo, hi, order=c.lpt)
    p = Particles(pos, vel, mass, ids)
    check_particles(p, "initial conditions (cosmo_sphere)", comm)
    return p, float(bg.t_of_a(a0))


def check_particles(p: Particles, what: str, comm: Comm | None = None) -> None:
    """RunError (on every process) for no particles, bad values, or zero total mass."""
    comm = comm or Comm(None)
    error = None
    try:
        validate_particles(p.pos, p.mass)
        validate_particles(p.vel, p.mass, "velocities")
    except ValueError as exc:
        error = f"{what}: {exc}"
    agree(comm, error, RunError)
    count, total = comm.allreduce(np.array([len(p), p.mass.sum()]))
    if count == 0:
        raise RunError(f"{what}: no particles")
    if total <= 0:
        raise RunError(f"{what}: total mass is zero")


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
        return settings, count_particles(path, "PartType1")
    except SnapshotError as exc:
        raise RunError(f"restart: {exc}") from None


def check_parallel(settings: Settings, size: int) -> None:
    """RunError for settings that cannot run on ``size`` processes."""
    if settings.gravity.method != "tree":
        raise RunError("gravity.method = 'direct' runs as one process; use the tree method "
                       "under mpiexec")
    shape = grid_shape(settings)
    if shape is not None and int(np.prod(shape)) != size:
        raise RunError(f"parallel.grid = {settings.parallel.grid!r} has "
                           f"{int(np.prod(shape))} domains but {size} processes run")


def grid_shape(settings: Settings) -> tuple[int, int, int] | None:
    text = settings.parallel.grid
    return tuple(int(v) for v in text.split("x")) if text else None


#: short names the API takes for settings (``theta`` for ``gravity.theta``): every name
#: that only one section has, and ``hybrid`` for ``hybrid.enabled``
SHORT_NAMES = {name: f"{section}.{name}" for section, opts in SCHEMA.items() for name in opts
               if sum(name in o for o in SCHEMA.values()) == 1 and section != "ics"}
SHORT_NAMES["hybrid"] = "hybrid.enabled"


def api_settings(settings: dict[str, Any] | None, options: dict[str, Any],
                  units: Units | tuple[float, float] | None,
                  output: str | Path | None, fill: bool = False) -> dict[str, Any]:
    """Flat ``section.name`` settings from the API's arguments (short names resolved).
    ``fill``: settings from arrays, with no file behind them -- time.t_end and
    output.snapshot_dt default to values that are whole steps of the ``dt`` given."""
    flat = dict(settings or {})
    for name, value in options.items():
        if name not in SHORT_NAMES:
            near = difflib.get_close_matches(name, list(SHORT_NAMES), 1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise TypeError(f"Simulation: unknown setting {name!r}{hint}; any setting can be "
                            f"given as settings={{'section.name': value}}")
        flat[SHORT_NAMES[name]] = value
    if units is not None:
        length, mass = ((units.length_cm, units.mass_g) if isinstance(units, Units)
                        else units)
        flat["units.length_cm"], flat["units.mass_g"] = float(length), float(mass)
    if output is not None:
        flat["output.dir"] = str(output)
    if fill and "time.dt" in flat:
        # defaults that are whole numbers of steps of any dt the caller picks
        dt = float(flat["time.dt"])
        flat.setdefault("time.t_end", 0.0)
        default = SCHEMA["output"]["snapshot_dt"].default
        flat.setdefault("output.snapshot_dt", dt * max(1, round(default / dt)))
    return flat


def particles_from_arrays(pos: Any, vel: Any, mass: Any, ids: Any) -> Particles:
    """Checked float64 copies of the caller's arrays (ValueError naming the problem)."""
    arrays = {}
    for name, a, shape in (("pos", pos, 2), ("vel", vel, 2), ("mass", mass, 1)):
        a = np.asarray(a)
        if np.iscomplexobj(a) or a.dtype.kind not in "fiu":
            raise ValueError(f"Simulation: {name} must be real numbers, got dtype {a.dtype}")
        arrays[name] = np.array(a, dtype=np.float64)
    n = len(arrays["mass"]) if arrays["mass"].ndim == 1 else -1
    for name, want in (("pos", (n, 3)), ("vel", (n, 3)), ("mass", (n,))):
        if arrays[name].shape != want or n < 0:
            raise ValueError(f"Simulation: {name} has shape {arrays[name].shape}, expected "
                             f"{'(N, 3)' if len(want) == 2 else '(N,)'} with N = len(mass)")
    if ids is None:
        ids = np.arange(1, n + 1, dtype=np.uint64)
    else:
        ids = np.asarray(ids)
        if ids.shape != (n,) or ids.dtype.kind not in "iu" or (ids.dtype.kind == "i"
                                                              and (ids < 0).any()):
            raise ValueError(f"Simulation: ids must be N = {n} integers >= 0")
        ids = ids.astype(np.uint64)
        if len(np.unique(ids)) != n:
            raise ValueError("Simulation: ids must be unique")
    return Particles(arrays["pos"], arrays["vel"], arrays["mass"], ids)


def background_of(settings: Settings) -> Any:
    """The expansion history of a cosmological run
    (:class:`hybridtree.cosmo.background.Cosmology`, internal units); None otherwise."""
    c = settings.cosmology
    if not c.enabled:
        return None
    from ..cosmo.background import Cosmology
    return Cosmology(omega_m=c.omega_m, omega_l=c.omega_lambda, omega_b=c.omega_b,
                     h=c.h, sigma8=c.sigma8, n_s=c.n_s, units=Units(settings.units.length_cm, settings.units.mass_g))


def settings_units(settings: Settings) -> Units:
    return Units(settings.units.length_cm, settings.units.mass_g)


def gravity_keys(flat: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in flat.items() if k.startswith("gravity.")}


def make_stepper(settings: Settings, p: Particles, comm: Comm, rt, external: float) -> Stepper:
    """The run's stepper: one process (state on the device where it can be), or many;
    ``external``: the coefficient of the Λ term (0: none)."""
    g = GravitySettings.from_settings(settings.gravity, settings.hybrid)
    t = settings.time
    block = BlockSettings(t.eta, t.max_bin) if t.stepping == "block" else None
    if comm.size == 1:
        return SerialStepper(g, p, rt, external=external, block=block)
    if (block is not None or g.opening != "geometric") and settings.parallel.overlap:
        raise RunError("time.stepping = 'block' and gravity.opening = 'relative' do not take "
                       "parallel.overlap = true")
    if g.opening != "geometric" and state_backend(rt, g.method, g.build) != "device":
        raise RunError("gravity.opening = 'relative' on many processes needs the state on the "
                       "device (gravity.build = 'device' and a device with cl_khr_fp64)")
    from ..parallel.stepping import ParallelStepper
    return ParallelStepper(g, p, rt, comm=comm, grid=grid_shape(settings),
                           samples=settings.parallel.samples, overlap=settings.parallel.overlap,
                           external=external, block=block)


def schedule_of(settings: Settings, background: Any, t0: float, step0: int):
    """The run's steps (:mod:`hybridtree.integrate.schedule`); ``t0``: the time at step ``step0``."""
    if background is None:
        dt = settings.time.dt
        return Uniform(t0, step0, dt, round(settings.output.snapshot_dt / dt))
    c = settings.cosmology
    return Cosmic(background, c.z_start, c.z_end, c.steps, c.stepping,
                  redshift_list(settings.output.redshifts))
