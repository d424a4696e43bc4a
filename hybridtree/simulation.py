"""A whole run: settings -> initial conditions -> leapfrog loop -> snapshots and diagnostics.

Output folder (``output.dir``): ``snapshot_NNNN.hdf5`` (the first state, every
``output.snapshot_dt``, and the last state), ``diagnostics.csv`` (every
``output.diag_every`` steps) and ``run.log``.  An existing run there is never replaced
unless ``overwrite`` is given; a failure before the first snapshot removes whatever
the run had created, and snapshots are written atomically, so a crash leaves only
complete files.  A restart continues from a snapshot and reproduces the uninterrupted
run bit for bit (same device, same settings, one process): the snapshot holds the
float64 positions, velocities and the accelerations used by the next half kick.

Under ``mpiexec -n K`` the same command runs on K processes (mpi4py): each holds the
particles of its domain (:mod:`hybridtree.parallel`); process 0 writes the run log and
diagnostics; snapshots are gathered into one file or written one file per process
(``output.snapshot_files``, :mod:`hybridtree.parallel.snapshots`).  Any K restarts any
snapshot, whatever K wrote it; with K > 1 the continuation agrees with the uninterrupted
run to the tree's accuracy (the particle order on each process differs), not bit for bit.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import __version__, ics
from .config import ConfigError, Settings, load_config, parse_overrides, settings_from_flat
from .diagnostics import DiagnosticsFile, Reporter, breakdown_record, measure
from .faults import inject
from .gravity import validate_particles
from .guards import NumericalError, RunInterrupted, Signals, check_step
from .engine import GravitySettings
from .io.background import BackgroundWriter
from .io.snapshot import (SNAPSHOT_RE, Particles, Snapshot, SnapshotError, latest_snapshot,
                          snapshot_name)
from .opencl import get_runtime, set_device_slot
from .parallel.comm import Comm, node_local_rank
from .parallel.snapshots import agree, read_particles_share, read_run_share, write_run_snapshot
from .stepper import SerialStepper, Stepper
from .units import Units

__all__ = ["NumericalError", "RunError", "RunInterrupted", "initial_conditions", "run"]

RUN_FILES = ("diagnostics.csv", "run.log")
#: temporary names of unfinished writes (hybridtree.io.snapshot.atomic_path)
TEMP_RE = re.compile(r"^\.(snapshot_\d+(\.\d+)?\.hdf5|diagnostics\.csv)\.\d+\.tmp$")


def launched_processes() -> int:
    """How many processes an MPI launcher started (1 without one), read from the launcher's
    environment so that mpi4py need not be imported."""
    for name in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"):
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return 1


class RunError(ValueError):
    """A user mistake found while setting a run up (bad input, output conflicts)."""


def run_comm(launched: int | None = None) -> Comm:
    """The run's communicator: one process, or COMM_WORLD when a launcher started several."""
    launched = launched_processes() if launched is None else launched
    if launched <= 1:
        return Comm(None)
    try:
        from mpi4py import MPI
    except ImportError:
        raise RunError(f"hybridtree run was started as {launched} MPI processes, but mpi4py "
                       "is not installed (pip install mpi4py, or the 'mpi' extra)") from None
    comm = Comm(MPI.COMM_WORLD)
    if comm.size != launched:
        raise RunError(f"the launcher started {launched} processes but mpi4py sees "
                       f"{comm.size}: mpiexec and mpi4py come from different MPI libraries")
    return comm


def together(comm: Comm, fn, *args, **kwargs):
    """``fn(*args)`` on every process; a user error on any of them is raised on all of
    them (as CollectiveError), so none is left waiting.  One process: ``fn`` as it is."""
    if comm.size == 1:
        return fn(*args, **kwargs)
    result, error = None, None
    try:
        result = fn(*args, **kwargs)
    except (ValueError, OSError, RuntimeError) as exc:
        error = " ".join(str(exc).split()) or type(exc).__name__
    agree(comm, error)
    return result


@dataclass
class _Start:
    particles: Particles
    time: float
    step: int
    snapshot: int              # number of the next snapshot to write
    e0: float | None
    restart: Snapshot | None


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
        if comm.size == 1:
            p.pos, p.vel = ics.to_com_frame(p.pos, p.vel, p.mass)
        else:
            tot = comm.allreduce(np.concatenate([[p.mass.sum()], p.mass @ p.pos,
                                                 p.mass @ p.vel]))
            p.pos, p.vel = p.pos - tot[1:4] / tot[0], p.vel - tot[4:7] / tot[0]
        return p, t0
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


def _existing_run_files(out: Path) -> list[Path]:
    if not out.is_dir():
        return []
    return sorted(p for p in out.iterdir() if SNAPSHOT_RE.match(p.name) or p.name in RUN_FILES)


def _prepare_output(out: Path, overwrite: bool, restart_number: int | None) -> bool:
    """Check (and create) the output folder; return True if it was created here."""
    if out.exists() and not out.is_dir():
        raise RunError(f"output.dir {str(out)!r} exists and is not a folder")
    conflicts = _existing_run_files(out)
    if restart_number is not None:
        # continuing in place: only snapshots after the restart point would be replaced
        conflicts = [p for p in conflicts
                     if (m := SNAPSHOT_RE.match(p.name)) and int(m.group(1)) > restart_number]
    if conflicts and not overwrite:
        names = ", ".join(p.name for p in conflicts[:3]) + (" ..." if len(conflicts) > 3 else "")
        raise RunError(f"output folder {str(out)!r} already holds a run ({names}); "
                       f"use --overwrite or another output.dir")
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".write_test.{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        if created:
            shutil.rmtree(out, ignore_errors=True)
        raise RunError(f"cannot write to output folder {str(out)!r}: "
                       f"{exc.strerror or exc}") from None
    for p in conflicts:               # --overwrite: the old run's files go
        p.unlink()
    for p in out.glob(".*.tmp"):      # writes a killed run left unfinished
        if TEMP_RE.match(p.name):
            p.unlink(missing_ok=True)
    return created


def _load_restart(path: str, overrides: dict[str, Any], comm: Comm
                  ) -> tuple[Settings, Snapshot]:
    try:
        snap = read_run_share(comm, path)
    except SnapshotError as exc:
        raise RunError(f"restart: {exc}") from None
    if "Step" not in snap.run_state:
        raise RunError(f"restart: {path} is not a snapshot of a hybridtree run (no RunState); "
                       f"to start from it use ics.kind = 'file'")
    flat = {k: v for k, v in snap.parameters.items() if "." in k}
    try:
        settings = settings_from_flat(flat, path)
        if "output.dir" not in overrides:
            overrides = {**overrides, "output.dir": str(Path(path).parent)}
        settings = settings.with_overrides(overrides)
    except ConfigError as exc:
        raise RunError(f"restart: {exc}") from None
    return settings, snap


def _restart_path(restart: str, config: str | None, overrides: dict[str, Any]) -> str:
    """The snapshot ``--restart`` names: a snapshot file, a folder (its newest complete
    snapshot), or ``latest`` (the newest in the config's output.dir)."""
    if restart == "latest":
        if config is None:
            raise RunError("--restart latest needs the config file (for output.dir); or give "
                           "the output folder: --restart FOLDER")
        folder = Path(load_config(config, overrides).output.dir)
    elif Path(restart).is_dir():
        folder = Path(restart)
    else:
        if config is not None:
            raise RunError("give either a config file or --restart SNAPSHOT (a config goes "
                           "only with --restart latest)")
        return restart
    found = latest_snapshot(folder)
    if found is None:
        raise RunError(f"no complete snapshot in {str(folder)!r} to restart from")
    return str(found)


def _gravity_keys(flat: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in flat.items() if k.startswith("gravity.")}


def run(config: str | None = None, overrides: list[str] | None = None,
        restart: str | None = None, overwrite: bool = False, quiet: bool = False,
        log_json: bool = False, progress: bool | None = None) -> Path:
    """Run a simulation from a config file or a restart snapshot; return the output folder.

    Raises :class:`RunError`/:class:`ConfigError` (user mistakes) before anything is
    written; under MPI, a user error found by any process is raised by all of them
    (:class:`hybridtree.parallel.CollectiveError`).
    """
    comm = run_comm()
    over = parse_overrides(overrides or [])
    if restart is not None:
        restart = together(comm, _restart_path, restart, config, over)
        config = None
    if (config is None) == (restart is None):
        raise RunError("give either a config file or --restart SNAPSHOT")
    if restart is not None:
        settings, snap = together(comm, _load_restart, restart, over, comm)
    else:
        settings, snap = together(comm, load_config, config, over), None
    units = Units(settings.units.length_cm, settings.units.mass_g)
    dt, t_end = settings.time.dt, settings.time.t_end
    if comm.size > 1:
        together(comm, _check_parallel, settings, comm.size)
    if snap is None:
        particles, t0 = together(comm, initial_conditions, settings, units, comm)
        start = _Start(particles, t0, 0, 0, None, None)
    else:
        together(comm, check_particles, snap.particles, f"restart snapshot {restart}", comm)
        start = _Start(snap.particles, snap.time, int(snap.run_state["Step"]),
                       int(snap.run_state["SnapshotNumber"]) + 1,
                       float(snap.run_state["InitialEnergy"]), snap)
    n_left = round((t_end - start.time) / dt)
    if n_left < 0 or abs(start.time + n_left * dt - t_end) > 1e-9 * max(abs(t_end), dt):
        raise RunError(f"time.t_end = {t_end} is not a whole number of steps (dt = {dt}) "
                       f"after the start time {start.time}")
    if comm.size > 1 and settings.parallel.spread_devices:
        set_device_slot(node_local_rank(comm))
    rt = together(comm, get_runtime, settings.gravity.device or None)  # DeviceError
    out = Path(settings.output.dir)
    in_place = snap is not None and out.resolve() == Path(restart).parent.resolve()
    keep = start.snapshot - 1 if in_place else None
    created = comm.bcast(together(comm, lambda: _prepare_output(out, overwrite, keep)
                                  if comm.rank == 0 else None))
    made: list[Path] = []
    try:
        return _loop(settings, units, start, n_left, out, made, rt,
                     quiet, log_json, progress, in_place, comm)
    except _StartupFailure as exc:
        # nothing useful was written: leave no partial output behind
        for p in made:
            p.unlink(missing_ok=True)
        if created and comm.rank == 0:
            shutil.rmtree(out, ignore_errors=True)
        raise exc.__cause__ from None


def _check_parallel(settings: Settings, size: int) -> None:
    if settings.gravity.method != "tree":
        raise RunError("gravity.method = 'direct' runs as one process; use the tree method "
                       "under mpiexec")
    shape = _grid(settings)
    if shape is not None and int(np.prod(shape)) != size:
        raise RunError(f"parallel.grid = {settings.parallel.grid!r} has "
                           f"{int(np.prod(shape))} domains but {size} processes run")


def _grid(settings: Settings) -> tuple[int, int, int] | None:
    text = settings.parallel.grid
    return tuple(int(v) for v in text.split("x")) if text else None


class _StartupFailure(Exception):
    pass


def _stepper(settings: Settings, p: Particles, comm: Comm, rt) -> "Stepper":
    """The run's stepper: one process (state on the device where it can be), or many."""
    g = GravitySettings.from_settings(settings.gravity, settings.hybrid)
    if comm.size == 1:
        return SerialStepper(g, p, rt)
    from .parallel.stepping import ParallelStepper
    return ParallelStepper(g, p, rt, comm=comm, grid=_grid(settings),
                           samples=settings.parallel.samples, overlap=settings.parallel.overlap)


def _loop(settings: Settings, units: Units, start: _Start, n_left: int, out: Path,
          made: list[Path], rt, quiet: bool, log_json: bool,
          progress: bool | None, in_place: bool, comm: Comm) -> Path:
    dt = settings.time.dt
    every_snap = round(settings.output.snapshot_dt / dt)
    every_diag = settings.output.diag_every
    root = comm.rank == 0
    step, last = start.step, start.step + n_left
    number = start.snapshot
    diag = None
    # one process writes its snapshots in the background; under MPI the write is a
    # collective of its own and stays in the run's thread
    writer = BackgroundWriter(made.extend) if comm.size == 1 else None

    def time_at(step: int) -> float:
        # from the start point, not accumulated: no drift, and a restart agrees exactly
        return start.time + (step - start.step) * dt

    try:
        if root:
            made.append(out / "run.log")
            reporter = Reporter(out / "run.log", quiet, log_json, progress, append=in_place)
            made.append(out / "diagnostics.csv")
            diag = DiagnosticsFile(out / "diagnostics.csv",
                                   keep_until_step=step if in_place else None)
        else:
            reporter = Reporter(None, quiet=True, progress=False)
        p0 = start.particles
        stepper = _stepper(settings, p0, comm, rt)
        clock = stepper.clock
        reporter.event("start", version=__version__, device=rt.info.label,
                       particles=int(comm.allreduce(float(len(p0)))[0]),
                       processes=comm.size, steps=n_left, dt=dt, t_start=start.time,
                       state=getattr(stepper, "backend", "host"),
                       config=settings.source, output=str(out))
        # a plain run continues with the stored accelerations (bit for bit); a hybrid
        # run recomputes its two parts, which is deterministic for the same positions
        reuse = (start.restart is not None and p0.acc is not None and p0.pot is not None
                 and _gravity_keys(settings.flat()) == _gravity_keys(start.restart.parameters))
        del p0
        start.particles = None          # the state holds the particles now
        stepper.start(reuse)
        e0 = start.e0
        if e0 is None:
            mom = stepper.moments()
            e0 = float(mom["kinetic"] + mom["potential"])
        params = settings.flat()
        layout = settings.output.snapshot_files

        def snapshot(step: int, number: int, wait: bool = False) -> None:
            state = {"Step": step, "SnapshotNumber": number, "InitialEnergy": e0,
                     "Version": __version__, "Processes": comm.size}
            particles = stepper.particles()              # timed as "transfer"

            def write() -> list[Path]:
                return write_run_snapshot(comm, out, number, particles, time_at(step), units,
                                          params, state, layout)

            with clock.host("output"):
                if writer is None:
                    made.extend(write())
                else:
                    writer.submit(write)
                    if wait:
                        writer.wait()

        def counters(step: int) -> dict:
            return {"seconds": clock.snapshot(), "counts": dict(stepper.counts), "step": step,
                    "wall": time.perf_counter()}

        prev = counters(step)
        prev_bd = stepper.breakdown()

        def report(step: int) -> None:
            nonlocal prev, prev_bd
            mom = stepper.moments()
            radii = stepper.lagrangian_radii(mom["com"], mom["mass"])
            now = counters(step)
            now_bd = stepper.breakdown()
            rec = measure(step, time_at(step), mom, radii, e0, now, prev, comm)
            rec.update(breakdown_record(comm, now_bd, prev_bd))
            prev, prev_bd = now, now_bd
            with clock.host("output"):
                if diag is not None:
                    diag.write(rec)
                reporter.report(rec)

        if start.restart is None:
            snapshot(step, number, wait=True)
            number += 1
            report(step)
    except (OSError, ValueError, RuntimeError) as exc:
        if diag is not None:
            diag.close()
        raise _StartupFailure() from exc

    def last_snapshot() -> Path:
        """The path that names the newest snapshot written (part 0 of a set)."""
        parts = comm.size > 1 and settings.output.snapshot_files == "per_process"
        return out / snapshot_name(number - 1, 0 if parts else None)

    wall0 = time.perf_counter()
    signals = Signals()
    try:
        with signals:
            while step < last:
                stepper.step(dt)
                step += 1
                inject("step", step, comm.rank, stepper)      # tests only
                caught = check_step(comm, stepper, step, signals.caught)
                if writer is not None:
                    writer.check()
                wrote = False
                if step % every_diag == 0 or step == last:
                    report(step)
                if step % every_snap == 0 or step == last:
                    snapshot(step, number)
                    number += 1
                    wrote = True
                reporter.tick(step, last, time_at(step), start.step)
                if caught and step < last:
                    if settings.output.snapshot_on_signal and not wrote:
                        snapshot(step, number)
                        number += 1
                    if writer is not None:      # the restart point must exist before we say so
                        writer.wait()
                    name = signal.Signals(caught).name
                    then = f"continue with: hybridtree run --restart {last_snapshot()}"
                    reporter.message(f"{name} at step {step}: stopped after the step; {then}")
                    raise RunInterrupted(f"stopped by {name} after step {step}; {then}",
                                         128 + caught)
            if writer is not None:
                with clock.host("output"):
                    writer.wait()
    except KeyboardInterrupt:
        _finish_writes(writer)
        reporter.message(f"interrupted at step {step}; continue with: hybridtree run --restart "
                         f"{last_snapshot()}")
        raise
    except BaseException:
        _finish_writes(writer)
        raise
    finally:
        if diag is not None:
            diag.close()
        if step == last:
            wall = time.perf_counter() - wall0
            sec = clock.snapshot()
            reporter.event("end", steps=n_left, wall_s=round(wall, 3),
                           **{f"{k}_s": round(sec.get(k, 0.0), 3) for k in
                              ("build", "walk", "transfer", "integrate", "reduce", "output")},
                           interactions=stepper.counts.get("interactions", 0),
                           **({"snapshots_in_background": writer.writes,
                               "background_write_s": round(writer.seconds, 3)}
                              if writer is not None else {}))
        reporter.close()
    return out


def _finish_writes(writer: BackgroundWriter | None) -> None:
    """Let a background snapshot write finish (its error, if any, is reported by the
    exception already on its way)."""
    if writer is None:
        return
    try:
        writer.wait()
    except OSError:
        pass

