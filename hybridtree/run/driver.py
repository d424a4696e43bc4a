"""``hybridtree run``: a :class:`hybridtree.run.simulation.Simulation` from a config file or
a restart snapshot, evolved to ``time.t_end`` with its output folder -- the same object
the Python API gives, so there is one driver."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..config.settings import Settings, load_config, parse_overrides
from .folder import latest_run_point
from .processes import RunError, run_comm, together
from .setup import initial_conditions, load_restart, settings_units
from .size import check_memory, ics_count
from .simulation import Simulation, Start

__all__ = ["run"]


def _restart_path(restart: str, config: str | None, overrides: dict[str, Any]) -> str:
    """The snapshot ``--restart`` names: a snapshot file, a folder (its newest complete
    snapshot or restart point), or ``latest`` (the newest in the config's output.dir)."""
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
    found = latest_run_point(folder)
    if found is None:
        raise RunError(f"no complete snapshot in {str(folder)!r} to restart from")
    return str(found)


def run(config: str | None = None, overrides: list[str] | None = None,
        restart: str | None = None, overwrite: bool = False, quiet: bool = False,
        log_json: bool = False, progress: bool | None = None) -> Path:
    """``hybridtree run``: a :class:`Simulation` from a config file or a restart
    snapshot, evolved to ``time.t_end`` (a cosmological run: to ``cosmology.z_end``) with
    its output folder; returns the folder.

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
    sim = Simulation.__new__(Simulation)
    kw = dict(output=True, overwrite=overwrite, quiet=quiet, progress=progress,
              log_json=log_json, echo=True)
    if restart is not None:
        loaded = together(comm, load_restart, restart, over, comm)
        settings = loaded[0]
        _check_end(settings, loaded[1].time)
        sim._continue(loaded, restart, comm, **kw)
    else:
        settings = together(comm, load_config, config, over)
        n, grid = together(comm, ics_count, settings)
        check_memory(settings, comm, n, grid=grid)     # before any particle is drawn or read
        particles, t0 = together(comm, initial_conditions, settings, settings_units(settings), comm)
        _check_end(settings, t0)
        sim._setup(settings, comm, Start(particles, t0, 0, 0, None, None), **kw)
    with sim:
        sim.evolve(sim.t_end)
    return Path(settings.output.dir)


def _check_end(settings: Settings, t0: float) -> None:
    if settings.cosmology.enabled:       # its steps run from z_start to z_end
        return
    dt, t_end = settings.time.dt, settings.time.t_end
    n_left = round((t_end - t0) / dt)
    if n_left < 0 or abs(t0 + n_left * dt - t_end) > 1e-9 * max(abs(t_end), dt):
        raise RunError(f"time.t_end = {t_end} is not a whole number of steps (dt = {dt}) "
                       f"after the start time {t0}")
