"""One run as an object: :class:`Simulation` (the Python API), and :func:`run` (the CLI's
``hybridtree run``), which drives the same object.

A simulation holds this process's particles in a stepper (on the device where it can
be), its settings (:mod:`hybridtree.config`: the same names as a config file's), its
time and step count, and the diagnostics measured every ``output.diag_every`` steps.
With an output folder it also writes what ``hybridtree run`` writes
(:mod:`hybridtree.run.folder`): snapshots every ``output.snapshot_dt`` with their own
numbers (the first state is number 0), ``diagnostics.csv``, ``run.log``, and a restart
point ``restart.hdf5`` when a signal stops it.  A failure before the first snapshot
removes whatever the run had created, and snapshots are written atomically, so a crash
leaves only complete files.  A restart continues from a snapshot and reproduces the
uninterrupted run bit for bit (same device, same settings, one process).

Under ``mpiexec -n K`` every process holds the particles of its domain
(:mod:`hybridtree.parallel`); process 0 writes the log and diagnostics; snapshots are
gathered into one file or written one file per process (``output.snapshot_files``).
Units: internal (G = 1; ``units.length_cm``, ``units.mass_g``) throughout.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..config.settings import ConfigError, Settings, load_config, settings_from_flat
from ..config.quantities import Units, accepts_quantities
from ..analysis.diagnostics import COLUMNS
from ..errors import UserInputError, UserTypeError, real_argument
from ..faults import inject
from ..parallel.comm import Comm
from ..particles import Particles
from .assemble import schedule_of
from .folder import run_point_step
from .guards import NumericalError, RunInterrupted, Signals, check_step
from .opening import open_run, soften
from .options import api_settings, background_of, box_of, settings_units
from .processes import RunError, launched_processes, run_comm, together
from .setup import initial_conditions
from .start import (VIRIAL_RANGE, Start, caller_particles, continued_start, foreign_particles,
                    new_start, snapshot_path)
from .views import ParticleViews

__all__ = ["NumericalError", "RunError", "RunInterrupted", "Simulation", "Start",
           "initial_conditions", "launched_processes", "settings_units", "VIRIAL_RANGE"]


class Simulation(ParticleViews):
    """An N-body simulation: particles, settings, time; :meth:`evolve` and :meth:`step`
    advance it, :meth:`save` writes a snapshot ``hybridtree run --restart`` continues.

    ``Simulation(pos, vel, mass, ids=None, *, types=None, time=0.0, units=None, settings=None,
    output=None, overwrite=False, quiet=False, progress=None, **options)``

    - ``pos``, ``vel`` (N, 3) and ``mass`` (N,) in internal units (G = 1): lengths in
      ``units.length_cm``, masses in ``units.mass_g``, velocities in sqrt(G M / L);
      copied as float64, not shifted.  ``ids``: unique particle IDs (default 1..N).
      ``types``: GADGET particle types 0..5 (N,) (default 1), kept through the run: each
      type is written to its own ``PartTypeN`` group.
    - ``units``: (length_cm, mass_g) or :class:`hybridtree.config.units.Units`; default 1 kpc
      and 1e10 Msun (what snapshots and plots convert with).
    - settings by their short name (``dt=``, ``eps=``, ``theta=``, ``device=``,
      ``multipole=``, ``hybrid=True``, ``r_out=`` ...) or as ``settings={"gravity.theta":
      0.6}``; names and defaults are those of a config file (docs/configuration.md).
    - ``output``: a folder to write snapshots, diagnostics.csv and run.log into, as
      ``hybridtree run`` does (None: nothing is written but what :meth:`save` writes).
    - ``quiet``: no progress bar and no printed lines; ``progress``: force the bar on or
      off (default: on in a terminal or notebook).

    Under ``mpiexec`` each process passes its own particles (IDs unique over all).
    """

    @accepts_quantities(pos="length", vel="velocity", mass="mass", time="time")
    def __init__(self, pos: Any, vel: Any, mass: Any, ids: Any = None, *, types: Any = None,
                 time: float = 0.0,
                 units: Units | tuple[float, float] | None = None,
                 settings: dict[str, Any] | None = None, output: str | Path | None = None,
                 overwrite: bool = False, quiet: bool = False, progress: bool | None = None,
                 **options: Any):
        time = real_argument("Simulation(time)", time)
        flat = api_settings(settings, options, units, output, fill=True)
        try:
            cfg = settings_from_flat(flat, "Simulation")
        except ConfigError as exc:
            raise ConfigError(f"Simulation: {exc}", exc.keys) from None
        comm = run_comm()
        p = caller_particles(cfg, comm, pos, vel, mass, ids, types)
        self._setup(cfg, comm, Start(p, time, 0, 0, None, None),
                    output=output is not None, overwrite=overwrite, quiet=quiet,
                    progress=progress, caller_ids=p.ids.copy() if comm.size == 1 else None)

    @classmethod
    def from_config(cls, path: str | Path, settings: dict[str, Any] | None = None, *,
                    output: bool | str | Path = False, overwrite: bool = False,
                    quiet: bool = False, progress: bool | None = None,
                    **options: Any) -> "Simulation":
        """A simulation of a config file's initial conditions and settings (changed by
        ``settings``/``options``).  ``output``: True writes into the config's
        ``output.dir``, a path into that folder, False (default) nothing."""
        over = api_settings(settings, options, None,
                             output if isinstance(output, (str, Path)) else None)
        cfg = together(run_comm(), load_config, path, over)
        return cls.from_settings(cfg, output=bool(output), overwrite=overwrite, quiet=quiet,
                                 progress=progress)

    @classmethod
    def from_settings(cls, settings: Settings, *, output: bool = False,
                      overwrite: bool = False, quiet: bool = False,
                      progress: bool | None = None, to_end: bool = False,
                      log_json: bool = False, echo: bool = False) -> "Simulation":
        """A new run of validated ``settings``: their initial conditions (drawn or read
        after the memory check), ``output``: write into ``output.dir``.  ``to_end``: the run
        will evolve to ``time.t_end``, refused when that is not a whole number of steps
        after the start; ``log_json``, ``echo``: the CLI's log lines (``hybridtree run``)."""
        comm = run_comm()
        sim = cls.__new__(cls)
        settings, start = new_start(settings, comm, to_end)
        sim._setup(settings, comm, start, output=output,
                   overwrite=overwrite, quiet=quiet, progress=progress, log_json=log_json,
                   echo=echo)
        return sim

    @classmethod
    def from_restart(cls, path: str, overrides: dict[str, Any], *, output: bool = False,
                     overwrite: bool = False, quiet: bool = False,
                     progress: bool | None = None, to_end: bool = False,
                     log_json: bool = False, echo: bool = False) -> "Simulation":
        """Continue run snapshot ``path`` with its settings changed by flat ``overrides``
        (``output.dir`` defaults to the snapshot's folder); the other arguments as
        :meth:`from_settings`'s."""
        comm = run_comm()
        settings, start = continued_start(path, overrides, comm, to_end)
        sim = cls.__new__(cls)
        sim._setup(settings, comm, start, restart_path=path, output=output,
                   overwrite=overwrite, quiet=quiet, progress=progress, log_json=log_json,
                   echo=echo)
        return sim

    @classmethod
    def from_snapshot(cls, path: str | Path, settings: dict[str, Any] | None = None, *,
                      output: bool | str | Path = False, overwrite: bool = False,
                      quiet: bool = False, progress: bool | None = None,
                      **options: Any) -> "Simulation":
        """Continue a run snapshot (written by a run or :meth:`save`) with its settings,
        changed by ``settings``/``options``; the particles of any other GADGET-style file
        start a new run (with ``options``).  ``output``: True continues in the snapshot's
        folder (later snapshots keep their numbers), a path writes there."""
        path = snapshot_path(path)
        if run_point_step(Path(path)) is None:
            # not a run's snapshot: its particles, in the new run's units (as ics.kind =
            # "file" reads them), start a new run
            p, t, units = foreign_particles(path, api_settings(settings, options, None, None))
            if output is True:
                raise RunError(f"{path} is not a snapshot of a run, so it has no run folder "
                               f"to continue in: give output a folder")
            return cls(p.pos, p.vel, p.mass, p.ids, types=p.types, time=t, units=units,
                       settings=settings,
                       output=output or None,
                       overwrite=overwrite, quiet=quiet, progress=progress, **options)
        over = api_settings(settings, options, None,
                             output if isinstance(output, (str, Path)) else None)
        return cls.from_restart(path, over, output=bool(output), overwrite=overwrite,
                                quiet=quiet, progress=progress)

    # -- setting up ---------------------------------------------------------------------

    def _setup(self, settings: Settings, comm: Comm, start: Start, **how: Any) -> None:
        """Open the run from ``start``; ``how``: :func:`hybridtree.run.opening.open_run`'s
        keywords."""
        self.settings, self.units, self._comm = settings, settings_units(settings), comm
        self._step0 = self._step = start.step
        background = background_of(settings)
        self._sched = schedule_of(settings, background, start.time, start.step, start.a)
        # the Λ term of an expanding sphere in physical coordinates: an acceleration λ r
        # (a periodic box integrates comoving coordinates: no Λ term there)
        self._lambda = (background.lambda_term if background is not None
                        and box_of(settings) is None else 0.0)
        self._ended = False
        self._broken: str | None = None    # why the state can no longer be stepped
        self._wall = 0.0            # seconds spent in step() and evolve()
        opened = open_run(settings, self.units, comm, start, self._sched, self._lambda, **how)
        self._rt, self._stepper, self._output = opened.rt, opened.stepper, opened.output
        self._view, self._n = opened.view, opened.n

    # -- state ----------------------------------------------------------------------------

    @property
    def t(self) -> float:
        """The time (internal units); counted from the start, so it never drifts."""
        return self._sched.time(self._step)

    @property
    def dt(self) -> float:
        """The (soft) step from here, internal units."""
        return self._sched.dt(self._step)

    @property
    def a(self) -> float:
        """Scale factor of a cosmological run (NaN otherwise)."""
        return self._sched.a(self._step)

    @property
    def redshift(self) -> float:
        """Redshift 1/a - 1 of a cosmological run (NaN otherwise)."""
        return 1.0 / self.a - 1.0

    @property
    def t_end(self) -> float:
        """The run's end: time.t_end, or the time of cosmology.z_end (internal units)."""
        if self._sched.cosmological:
            return self._sched.time(self._sched.steps)
        return self.settings.time.t_end

    @property
    def steps(self) -> int:
        """Steps since the run began (a continued run counts its earlier steps)."""
        return self._step

    def energy(self) -> dict[str, float]:
        """Kinetic, potential (½ Σ m φ) and total energy of all processes' particles."""
        mom = self._output.moments()
        kin, pot = float(mom["kinetic"]), float(mom["potential"])
        return {"kinetic": kin, "potential": pot, "total": kin + pot}

    @property
    def energy_error(self) -> float:
        """(E - E0) / |E0|, E0 the total energy when the run began; in a cosmological
        run (E ≈ 0) (E - E0) / |W|, W the gravitational potential energy now (without
        the Λ term's)."""
        return self._output.energy_error(self._output.moments())

    @property
    def diagnostics(self) -> dict[str, np.ndarray]:
        """The diagnostics rows (every ``output.diag_every`` steps and at the end of each
        :meth:`evolve`/:meth:`step`) as columns: the columns of diagnostics.csv."""
        return {k: np.array([r.get(k, np.nan) for r in self._output.records], dtype=float)
                for k in COLUMNS}

    # -- stepping -------------------------------------------------------------------------

    def step(self, n: int = 1) -> None:
        """``n`` (soft) steps of ``dt``."""
        if real_argument("step(n)", n) % 1 or n < 0:
            raise UserInputError(f"step(n): n must be a whole number >= 0, got {n!r}")
        self._advance(int(n))

    @accepts_quantities(t="time")
    def evolve(self, t: float | None = None, *, z: float | None = None) -> None:
        """Step to time ``t`` (internal units), a whole number of steps from now; or, in a
        cosmological run, to the step closest to redshift ``z``."""
        if (t is None) == (z is None):
            raise UserTypeError("evolve: give a time t or (cosmological runs) a redshift z")
        if z is None:
            t = real_argument("evolve(t)", t)
            now = self.t
            if t < now - 1e-9 * max(abs(now), self.dt):
                raise UserInputError(f"evolve({t}): t = {t} is in the past: the simulation "
                                     f"is at t = {now:.10g} already and only steps forward")
            try:
                n = self._sched.steps_to(t, self._step)
            except ValueError as exc:       # not a whole number of steps away
                raise UserInputError(str(exc)) from None
        else:
            z = real_argument("evolve(z)", z)
            if not self._sched.cosmological:
                raise UserInputError("evolve(z=...): this is not a cosmological run")
            n = self._sched.step_of_redshift(z) - self._step
            if n < 0:
                raise UserInputError(f"evolve(z={z}): the run is at z = {self.redshift:.4g} "
                                     f"already")
        self._advance(n)

    def _advance(self, n: int) -> None:
        self._check_open()
        comm, stepper, out = self._comm, self._stepper, self._output
        rep = out.reporter
        every_diag = self.settings.output.diag_every
        last = self._step + n
        rep.begin(n)
        wall0 = time.perf_counter()
        signals = Signals()
        try:
            with signals:
                while self._step < last:
                    soften(stepper, self._sched, self.settings, self._step + 1)      # the forces at the step's end
                    stepper.step(self._sched.dt(self._step))
                    self._step += 1
                    self._view.forget()
                    step = self._step
                    inject("step", step, comm.rank, stepper)      # tests only
                    caught = check_step(comm, stepper, step, signals.caught)
                    out.check_writes()
                    wrote = False
                    if step % every_diag == 0 or step == last:
                        out.report(step)
                    if out.folder is not None and self._sched.scheduled(step):
                        out.snapshot(step)
                        wrote = True
                    rep.tick(self.t)
                    if caught and step < last:
                        self._stop(caught, wrote)
            out.wait_writes()
        except RunInterrupted:          # _stop: after a complete step, the state is whole
            raise
        except BaseException as exc:
            # mid-step or a bad step: nothing more of this state may be written
            self._view.forget()
            self._broken = (f"step {self._step} did not complete "
                            f"({type(exc).__name__}: {' '.join(str(exc).split())})")
            out.finish_writes()
            if isinstance(exc, KeyboardInterrupt) and out.folder is not None:
                rep.message(f"interrupted at step {self._step}; continue with: hybridtree run "
                            f"--restart {out.folder}")
            raise
        finally:
            self._wall += time.perf_counter() - wall0
            rep.end()

    def _stop(self, caught: int, wrote: bool) -> None:
        """A signal arrived during the step just done: write the restart point (with an
        output folder) and stop."""
        name = signal.Signals(caught).name
        if self._output.folder is None:
            raise RunInterrupted(f"{name}: stopped after step {self._step}", 128 + caught)
        then = self._output.stop_point(self._step, name, wrote)
        raise RunInterrupted(f"stopped by {name} after step {self._step}; {then}", 128 + caught)

    # -- output -----------------------------------------------------------------------------

    def particles(self) -> Particles:
        """This process's particles (float64 host copies, internal units) in the order
        they were given (arrays on one process), else sorted by ID; ``acc`` and ``pot``
        are those of the current positions.  Read-only (the same arrays until the next
        step): ``.copy()`` them to change them."""
        return self._view.particles(self._stepper)

    def timebins(self) -> list[dict[str, Any]]:
        """Block time steps: one row per time bin (:class:`hybridtree.integrate.schemes.BinStats`:
        its particles at the start of the last step, and the substeps, wall seconds,
        interactions and forces charged to it); empty for shared steps."""
        return self._output.timebins()

    def save(self, path: str | Path, overwrite: bool = False) -> Path:
        """Collective: write the current state as one snapshot file ``path`` (all
        processes' particles, gathered on process 0) that ``hybridtree run --restart
        PATH --set time.t_end=T`` or :meth:`from_snapshot` continues; returns the path.
        An existing file is refused unless ``overwrite=True``."""
        self._check_open()
        path = Path(path)
        if path.suffix != ".hdf5":
            raise UserInputError(f"save({str(path)!r}): the name must end in .hdf5")
        if not path.parent.is_dir():
            raise FileNotFoundError(f"save({str(path)!r}): folder {str(path.parent)!r} "
                                    f"does not exist")
        # process 0 writes the file: its view decides (others may see it being written)
        there = self._comm.bcast(("folder" if path.is_dir() else "file" if path.exists()
                                  else None) if self._comm.rank == 0 else None)
        if there == "folder" or (there and not overwrite):
            raise RunError(f"save({str(path)!r}): {str(path)!r} exists already"
                           + (" and is a folder" if there == "folder" else
                              "; save(..., overwrite=True) replaces it"))
        self._output.save(path, self._step)
        return path

    def close(self) -> None:
        """Finish the run (collective): with an output folder, the last state is written as
        the next snapshot unless one was just written, and the run log gets its end line
        (under MPI: interactions summed over the processes, phase seconds their mean)."""
        if self._ended:
            return
        self._ended = True
        self._output.close(self._step, self._step - self._step0, self._wall,
                           self._broken is not None)

    def __enter__(self) -> "Simulation":
        return self

    def __exit__(self, kind: Any, *exc: Any) -> None:
        if kind is None:
            self.close()
        else:       # an error: nothing more is written, what was written stays
            self._ended = True
            self._output.abandon()

    def _check_open(self) -> None:
        if self._ended:
            raise RuntimeError("this Simulation is closed")
        if self._broken is not None:
            raise RuntimeError(f"this Simulation cannot go on: {self._broken}; start again "
                               f"from its last snapshot or save")

    def __repr__(self) -> str:
        return (f"<hybridtree.Simulation N={self._n} t={self.t:.6g} steps={self._step} "
                f"dt={self.dt:g} on {self._rt.info.label}>")
