"""How a :class:`hybridtree.run.simulation.Simulation` opens from its :class:`Start`: the
device (chosen by all processes together), the output folder (prepared, or kept where a
run continues in place), the run log and diagnostics, the stepper with its first forces,
the start line and, for a new run, the first snapshot and diagnostics row.  A start that
does not finish removes what it wrote, even on Ctrl-C.  Units internal (G = 1)."""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hybridtree import __version__
from ..config.settings import Settings
from ..config.units import Units
from ..device.choice import get_runtime, set_device_slot, unusable_devices
from ..device.probe import RSQRT_MODES
from ..faults import inject
from ..integrate.schedule import Cosmic, Uniform
from ..parallel.comm import Comm, node_local_rank
from .assemble import check_parallel, make_stepper
from .folder import prepare_output
from .guards import check_first, check_range
from .options import gravity_keys
from .output import RunOutput
from .processes import together
from .size import device_need
from .start import Start, id_range, virial_warning
from .views import CallerOrder

__all__ = ["Opened", "open_run", "soften"]


@dataclass
class Opened:
    """What a simulation works with once open: the device runtime, the stepper (its
    state holds the particles), the output, the caller's order of the particles and N
    over all processes."""
    rt: Any
    stepper: Any
    output: RunOutput
    view: CallerOrder
    n: int


def soften(stepper: Any, sched: Uniform | Cosmic, settings: Settings, step: int) -> None:
    """The stepper's softening for the forces at ``step``, where the schedule rescales
    it (a cosmological run's comoving gravity.eps)."""
    eps = sched.softening(step, settings.gravity.eps)
    if eps is not None:
        stepper.set_softening(eps)


def open_run(settings: Settings, units: Units, comm: Comm, start: Start,
             sched: Uniform | Cosmic, lam: float, *, output: bool, overwrite: bool,
             quiet: bool, progress: bool | None, caller_ids: np.ndarray | None = None,
             restart_path: str | None = None, log_json: bool = False,
             echo: bool = False) -> Opened:
    """Open a run (collective) from ``start`` (its particles are handed to the state);
    ``lam``: the Λ term's λ; ``output``: write into ``output.dir``; ``caller_ids``: the
    IDs in the caller's order (one process; None: ID order); ``restart_path``: the
    snapshot a continued run starts from; the rest as the simulation's constructors."""
    folder = Path(settings.output.dir) if output else None
    out = RunOutput(settings, units, comm, sched, lam, folder, start.snapshot,
                    start.step if start.restart is not None else None)
    n = int(comm.allreduce(float(len(start.particles)))[0])
    if comm.size > 1:
        together(comm, check_parallel, settings, comm.size)
        if settings.parallel.spread_devices:
            set_device_slot(node_local_rank(comm))
    # DeviceError; the automatic choice passes over devices too small for the run (the
    # same need as check_memory's, so the same device)
    rt = together(comm, get_runtime, settings.gravity.device or None,
                  device_need(settings, n, comm.size, len(start.particles),
                              start.particles.acc is not None))
    rt.memory.reset_peak()      # this run's peak, from what earlier runs left kept
    # the caller's order is that of caller_ids, else ID order; on one process the IDs
    # never change, so whether they are a range lo .. lo + N - 1 is found once, here
    id_lo = (id_range(caller_ids if caller_ids is not None else start.particles.ids)
             if comm.size == 1 else None)
    view = CallerOrder(rt, caller_ids, id_lo)
    in_place = (start.restart is not None and folder is not None
                and folder.resolve() == Path(restart_path).parent.resolve())
    keep = (start.snapshot - 1, start.step) if in_place else None
    created = False
    source = Path(restart_path) if in_place else None
    if folder is not None:
        created = comm.bcast(together(comm, lambda: prepare_output(folder, overwrite, keep,
                                                                   source)
                                      if comm.rank == 0 else None))
    try:
        stepper = _first_state(settings, comm, start, sched, lam, rt, out, n, in_place,
                               quiet, progress, log_json, echo)
    except BaseException:
        out.discard(created)
        raise
    return Opened(rt, stepper, out, view, n)


def _first_state(settings: Settings, comm: Comm, start: Start, sched: Uniform | Cosmic,
                 lam: float, rt: Any, out: RunOutput, n: int, in_place: bool, quiet: bool,
                 progress: bool | None, log_json: bool, echo: bool) -> Any:
    """The stepper, the first forces and (a new run with an output folder) the first
    snapshot; returns the stepper."""
    rep = out.open(start.step, in_place, quiet, progress, log_json, echo)
    p0 = start.particles
    stepper = make_stepper(settings, p0, comm, rt, lam, sched, start.step)
    soften(stepper, sched, settings, start.step)
    check_range(comm, p0, stepper.engine.g, "initial conditions" if start.restart is None
                else "restart snapshot")     # before any force: float32's range
    unusable = unusable_devices()
    passed = {"unusable": "; ".join(unusable)} if unusable else {}
    if rt.info.rsqrt_mode:
        passed["rsqrt"] = RSQRT_MODES[rt.info.rsqrt_mode]
    rep.event("start", version=__version__, device=rt.info.label, **passed, particles=n,
              processes=comm.size, dt=sched.dt(start.step), t_start=start.time,
              state=getattr(stepper, "backend", "host"),
              opening=stepper.engine.g.opening, multipole=stepper.engine.g.multipole,
              config=settings.source,
              output=str(out.folder) if out.folder else "")
    # a plain run continues with the stored accelerations (bit for bit); a hybrid
    # run recomputes its two parts, which is deterministic for the same positions
    reuse = (start.restart is not None and p0.acc is not None and p0.pot is not None
             and gravity_keys(settings.flat()) == gravity_keys(start.restart.parameters))
    del p0
    start.particles = None          # the state holds the particles now
    inject("start", 0, comm.rank)                     # tests only
    stepper.start(reuse)
    check_first(comm, stepper)        # no NaN reaches the first snapshot or energy
    mom = out.attach(stepper, start.step, start.e0)
    virial = virial_warning(mom) if mom and not sched.cosmological else None
    for text in (start.note, virial):       # a restart's changed settings; odd units
        if text is not None:
            rep.warning(text)
            if not echo and comm.rank == 0:
                # the line of the caller of the Simulation's constructor
                warnings.warn(text, RuntimeWarning, stacklevel=_outside_level())
    if start.restart is None:
        if out.folder is not None:
            out.snapshot(start.step, wait=True)
        out.report(start.step)
    return stepper


def _outside_level() -> int:
    """warnings.warn's ``stacklevel`` for its caller that names the first frame outside
    the package (the user's line, however many of the package's frames lie between)."""
    package = str(Path(__file__).resolve().parent.parent)
    frame, level = sys._getframe(1), 1
    while frame is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(
            package):
        frame, level = frame.f_back, level + 1
    return level
