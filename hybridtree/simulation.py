"""A whole run: settings -> initial conditions -> leapfrog loop -> snapshots and diagnostics.

Output folder (``output.dir``): ``snapshot_NNNN.hdf5`` (the first state, every
``output.snapshot_dt``, and the last state), ``diagnostics.csv`` (every
``output.diag_every`` steps) and ``run.log``.  An existing run there is never replaced
unless ``overwrite`` is given; a failure before the first snapshot removes whatever
the run had created, and snapshots are written atomically, so a crash leaves only
complete files.  A restart continues from a snapshot and reproduces the uninterrupted
run bit for bit (same device, same settings): the snapshot holds the float64
positions, velocities and the accelerations used by the next half kick.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import __version__, ics
from .config import ConfigError, Settings, load_config, parse_overrides, settings_from_flat
from .diagnostics import DiagnosticsFile, Reporter, energies, measure
from .gravity import validate_particles
from .integrate import GravityModel, HybridModel, hybrid_step, kdk_step
from .io.snapshot import (SNAPSHOT_RE, Particles, Snapshot, SnapshotError, read_particles,
                          read_snapshot, snapshot_name, write_snapshot)
from .opencl import get_runtime
from .units import Units

__all__ = ["RunError", "initial_conditions", "run"]

RUN_FILES = ("diagnostics.csv", "run.log")


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


@dataclass
class _Start:
    particles: Particles
    time: float
    step: int
    snapshot: int              # number of the next snapshot to write
    e0: float | None
    restart: Snapshot | None


def initial_conditions(settings: Settings, units: Units) -> tuple[Particles, float]:
    """Particles (internal units, centre of mass at rest at the origin) and start time."""
    c = settings.ics
    t0 = 0.0
    if c.kind == "file":
        try:
            p, t0, _ = read_particles(c.file, c.types, units)
        except SnapshotError as exc:
            raise RunError(f"initial conditions: {exc}") from None
    else:
        make = {"plummer": lambda: ics.plummer(c.n, c.seed, r_max=c.r_max),
                "hernquist": lambda: ics.hernquist(c.n, c.seed, r_max=c.r_max),
                "cold_sphere": lambda: ics.cold_sphere(c.n, c.seed, radius=c.radius)}[c.kind]
        pos, vel, mass = make()
        p = Particles(pos, vel, mass, np.arange(1, len(mass) + 1, dtype=np.uint64))
    check_particles(p, f"initial conditions ({c.kind})")
    p.pos, p.vel = ics.to_com_frame(p.pos, p.vel, p.mass)
    return p, t0


def check_particles(p: Particles, what: str) -> None:
    if len(p) == 0:
        raise RunError(f"{what}: no particles")
    try:
        validate_particles(p.pos, p.mass)
        validate_particles(p.vel, p.mass, "velocities")
    except ValueError as exc:
        raise RunError(f"{what}: {exc}") from None
    if p.mass.sum() <= 0:
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
    return created


def _load_restart(path: str, overrides: dict[str, Any]) -> tuple[Settings, Snapshot]:
    try:
        snap = read_snapshot(path)
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


def _gravity_keys(flat: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in flat.items() if k.startswith("gravity.")}


def run(config: str | None = None, overrides: list[str] | None = None,
        restart: str | None = None, overwrite: bool = False, quiet: bool = False,
        log_json: bool = False, progress: bool | None = None) -> Path:
    """Run a simulation from a config file or a restart snapshot; return the output folder.

    Raises :class:`RunError`/:class:`ConfigError` (user mistakes) before anything is
    written.
    """
    launched = launched_processes()
    if launched > 1:
        raise RunError(f"hybridtree run was started as {launched} MPI processes, but the "
                       "driver runs one process so far (each would write the same files); "
                       "start it without mpiexec")
    over = parse_overrides(overrides or [])
    if (config is None) == (restart is None):
        raise RunError("give either a config file or --restart SNAPSHOT")
    if restart is not None:
        settings, snap = _load_restart(restart, over)
    else:
        settings, snap = load_config(config, over), None
    units = Units(settings.units.length_cm, settings.units.mass_g)
    dt, t_end = settings.time.dt, settings.time.t_end
    if snap is None:
        particles, t0 = initial_conditions(settings, units)
        start = _Start(particles, t0, 0, 0, None, None)
    else:
        check_particles(snap.particles, f"restart snapshot {restart}")
        start = _Start(snap.particles, snap.time, int(snap.run_state["Step"]),
                       int(snap.run_state["SnapshotNumber"]) + 1,
                       float(snap.run_state["InitialEnergy"]), snap)
    n_left = round((t_end - start.time) / dt)
    if n_left < 0 or abs(start.time + n_left * dt - t_end) > 1e-9 * max(abs(t_end), dt):
        raise RunError(f"time.t_end = {t_end} is not a whole number of steps (dt = {dt}) "
                       f"after the start time {start.time}")
    rt = get_runtime(settings.gravity.device or None)     # DeviceError: no such device
    out = Path(settings.output.dir)
    in_place = snap is not None and out.resolve() == Path(restart).parent.resolve()
    created = _prepare_output(out, overwrite, start.snapshot - 1 if in_place else None)
    made: list[Path] = []
    try:
        return _loop(settings, units, start, n_left, out, made, rt.info.label,
                     quiet, log_json, progress, in_place)
    except _StartupFailure as exc:
        # nothing useful was written: leave no partial output behind
        if created:
            shutil.rmtree(out, ignore_errors=True)
        else:
            for p in made:
                p.unlink(missing_ok=True)
        raise exc.__cause__ from None


class _StartupFailure(Exception):
    pass


def _loop(settings: Settings, units: Units, start: _Start, n_left: int, out: Path,
          made: list[Path], device: str, quiet: bool, log_json: bool,
          progress: bool | None, in_place: bool) -> Path:
    dt = settings.time.dt
    every_snap = round(settings.output.snapshot_dt / dt)
    every_diag = settings.output.diag_every
    hybrid = settings.hybrid.enabled
    gravity = (HybridModel.from_settings(settings.gravity, settings.hybrid) if hybrid
               else GravityModel.from_settings(settings.gravity))
    timers = gravity.timers
    p = start.particles
    step, last = start.step, start.step + n_left
    number = start.snapshot

    def time_at(step: int) -> float:
        # from the start point, not accumulated: no drift, and a restart agrees exactly
        return start.time + (step - start.step) * dt

    try:
        made.append(out / "run.log")
        reporter = Reporter(out / "run.log", quiet, log_json, progress, append=in_place)
        made.append(out / "diagnostics.csv")
        diag = DiagnosticsFile(out / "diagnostics.csv", keep_until_step=step if in_place else None)
        reporter.event("start", version=__version__, device=device, particles=len(p),
                       steps=n_left, dt=dt, t_start=start.time,
                       config=settings.source, output=str(out))
        # a plain run continues with the stored accelerations (bit for bit); a hybrid
        # run recomputes its two parts, which is deterministic for the same positions
        reuse = (not hybrid and start.restart is not None and p.acc is not None
                 and p.pot is not None
                 and _gravity_keys(settings.flat()) == _gravity_keys(start.restart.parameters))
        if hybrid:
            r = gravity.parts(p.pos, p.mass, ("hard", "soft"))
            acc_hard, (acc_soft, p.pot) = r["hard"][0], r["soft"]
            p.acc = acc_hard + acc_soft
        elif not reuse:
            p.acc, p.pot = gravity(p.pos, p.mass)
        e0 = start.e0
        if e0 is None:
            e0 = sum(energies(p.vel, p.mass, p.pot))
        params = settings.flat()

        def snapshot(step: int, number: int) -> None:
            t_io = time.perf_counter()
            t = time_at(step)
            path = out / snapshot_name(number)
            write_snapshot(path, p, t, units, params,
                           {"Step": step, "SnapshotNumber": number, "InitialEnergy": e0,
                            "Version": __version__}, overwrite=True)
            made.append(path)
            timers.io += time.perf_counter() - t_io

        prev = {**timers.as_dict(), "step": step, "wall": time.perf_counter()}

        def report(step: int) -> None:
            nonlocal prev
            t_io = time.perf_counter()
            now = {**timers.as_dict(), "step": step, "wall": t_io}
            rec = measure(step, time_at(step), p.pos, p.vel, p.mass,
                          p.pot, e0, now, prev)
            prev = now
            diag.write(rec)
            reporter.report(rec)
            timers.io += time.perf_counter() - t_io

        if start.restart is None:
            snapshot(step, number)
            number += 1
            report(step)
    except (OSError, ValueError, RuntimeError) as exc:
        raise _StartupFailure() from exc

    wall0 = time.perf_counter()
    try:
        while step < last:
            if hybrid:
                p.pos, p.vel, acc_hard, acc_soft, p.pot = hybrid_step(
                    p.pos, p.vel, acc_hard, acc_soft, p.mass, dt, gravity, timers)
                p.acc = acc_hard + acc_soft
            else:
                p.pos, p.vel, p.acc, p.pot = kdk_step(p.pos, p.vel, p.acc, p.mass, dt,
                                                      gravity, timers)
            step += 1
            if step % every_diag == 0 or step == last:
                report(step)
            if step % every_snap == 0 or step == last:
                snapshot(step, number)
                number += 1
            reporter.tick(step, last, time_at(step), start.step)
    except KeyboardInterrupt:
        reporter.message(f"interrupted at step {step}; continue with: hybridtree run --restart "
                         f"{out / snapshot_name(number - 1)}")
        raise
    finally:
        diag.close()
        if step == last:
            wall = time.perf_counter() - wall0
            reporter.event("end", steps=n_left, wall_s=round(wall, 3),
                           build_s=round(timers.build, 3), force_s=round(timers.force, 3),
                           integrate_s=round(timers.integrate, 3), io_s=round(timers.io, 3),
                           interactions=timers.interactions)
        reporter.close()
    return out
