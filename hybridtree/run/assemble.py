"""The machinery of a run built from its settings: the stepper (one process or many),
the schedule of its steps, and the refusals of settings that cannot run on the processes
there are.  Units: internal (G = 1)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..config.rules import process_refusal
from ..config.settings import Settings, redshift_list
from ..gravity.engine import GravitySettings
from ..gravity.periodic import Periodic, default_mesh
from ..integrate.schedule import Cosmic, ScheduleError, Uniform
from ..integrate.choose import Comoving
from ..integrate.schemes import BlockSettings
from ..state import state_backend
from ..integrate.stepper import SerialStepper, Stepper
from ..parallel.comm import Comm
from ..particles import Particles
from .options import box_of
from .processes import RunError

__all__ = ["check_parallel", "grid_shape", "make_stepper", "schedule_of"]


def check_parallel(settings: Settings, size: int) -> None:
    """RunError for settings that cannot run on ``size`` processes (the rules are
    :func:`hybridtree.config.rules.process_refusal`)."""
    why = process_refusal(settings.values, size)
    if why is not None:
        raise RunError(why)


def grid_shape(settings: Settings) -> tuple[int, int, int] | None:
    """The domains per axis of ``parallel.grid`` (None: chosen by the run)."""
    text = settings.parallel.grid
    return tuple(int(v) for v in text.split("x")) if text else None


def make_stepper(settings: Settings, p: Particles, comm: Comm, rt, external: float,
                 sched=None, step: int = 0) -> Stepper:
    """The run's stepper: one process (state on the device where it can be), or many;
    ``external``: the coefficient of the Λ term (0: none); ``sched`` and ``step``: the
    schedule and the step the run starts at (a periodic box's comoving steps follow it).
    The scheme is :func:`hybridtree.integrate.choose.scheme_for`'s."""
    g = GravitySettings.from_settings(settings.gravity, settings.hybrid)
    if box_of(settings) is not None:
        # the mesh's default side from every process's particles, not this one's share
        n_all = len(p) if comm.size == 1 else int(comm.allreduce(float(len(p)))[0])
        g = replace(g, periodic=periodic_of(settings, n_all),
                    time_split=(settings.cosmology.short_steps > 1
                                or settings.time.stepping == "block"))
        if comm.size > 1 and g.periodic.n_mesh < 2 * comm.size:
            raise RunError(f"gravity.pm_grid = {g.periodic.n_mesh} is too small for "
                           f"{comm.size} processes: the mesh in slabs needs at least 2 "
                           f"planes per process (pm_grid >= {2 * comm.size})")
    # "auto": the relative criterion needs a_old on the device on many processes, and
    # does not take the overlapped LET exchange (rules.process_refusal)
    backend = state_backend(rt, g.method, g.build)
    many_ok = backend == "device" and not settings.parallel.overlap
    g = g.settled(rt.info.kind, relative_ok=comm.size == 1 or many_ok,
                  cosmological=settings.cosmology.enabled)
    t = settings.time
    # time.rebin auto: bins chosen once a largest step (no drift, docs/galaxies.md), but
    # at every synchronisation in a box, where the other rule was not measured
    rebin = t.rebin if t.rebin != "auto" else "substep" if g.periodic is not None else "step"
    block = BlockSettings(t.eta, t.max_bin, t.eta_v, rebin) if t.stepping == "block" else None
    # a periodic box steps in comoving coordinates (the box: g.periodic's); on many
    # processes the stepper wraps the particles before they change domain
    comoving = (Comoving(sched, step, settings.cosmology.short_steps, wrap=comm.size == 1)
                if g.periodic is not None else None)
    if comoving is not None and block is not None and (comm.size > 1 or backend != "device"):
        raise RunError("time.stepping = 'block' in a periodic box runs on one process "
                       "with the state on the device (gravity.build = 'device' and a "
                       "device with cl_khr_fp64) for now")
    if comm.size == 1:
        return SerialStepper(g, p, rt, external=external, block=block, comoving=comoving,
                             vel32=settings.memory.velocities == "float32")
    # parallel.overlap with block steps or the relative opening: refused by
    # check_parallel (hybridtree.config.rules) before the device was taken
    for needs, what in ((g.opening != "geometric", "gravity.opening = 'relative'"),
                        (g.periodic is not None,
                         f"a periodic box (ics.kind = '{settings.ics.kind}')")):
        if needs and backend != "device":
            raise RunError(f"{what} on many processes needs the state on the device "
                           "(gravity.build = 'device' and a device with cl_khr_fp64)")
    if settings.memory.mesh == "float32" and g.periodic is not None:
        raise RunError("memory.mesh = 'float32' runs on one process for now (many "
                       "processes share the float64 mesh in slabs): take memory.mesh = "
                       "'float64'")
    from ..parallel.stepping import ParallelStepper
    return ParallelStepper(g, p, rt, comm=comm, grid=grid_shape(settings),
                           samples=settings.parallel.samples,
                           overlap=settings.parallel.overlap, external=external,
                           block=block, comoving=comoving,
                           vel32=settings.memory.velocities == "float32")


def periodic_of(settings: Settings, n: int) -> Periodic:
    """The periodic box of the run (side :func:`hybridtree.run.options.box_of`) holding
    ``n`` particles with the run's mesh settings (gravity.pm_grid, asmth, rcut); RunError
    for a cut that reaches L/2."""
    c = settings.gravity
    try:
        return Periodic(box_of(settings), c.pm_grid or default_mesh(n), c.asmth, c.rcut,
                        single=settings.memory.mesh == "float32")
    except ValueError as exc:
        raise RunError(f"gravity: {exc}") from None


def schedule_of(settings: Settings, background: Any, t0: float, step0: int,
                a0: float | None = None):
    """The run's steps (:mod:`hybridtree.integrate.schedule`); ``t0``: the time at step
    ``step0``; ``a0``: the scale factor there where a cosmological run continues from a
    snapshot (None: a new run, which starts at cosmology.z_start).  RunError where the
    schedule cannot continue from there (it ends before, or starts after)."""
    if background is None:
        dt = settings.time.dt
        return Uniform(t0, step0, dt, round(settings.output.snapshot_dt / dt))
    c = settings.cosmology
    anchor = None if a0 is None else (step0, t0, a0)
    try:
        return Cosmic(background, c.z_start, c.z_end, c.steps, c.stepping,
                      redshift_list(settings.output.redshifts),
                      comoving=box_of(settings) is not None, anchor=anchor)
    except ScheduleError as exc:
        raise RunError(f"restart: {exc}") from None
