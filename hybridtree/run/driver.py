"""``hybridtree run``: a :class:`hybridtree.run.simulation.Simulation` from a config file or
a restart snapshot, evolved to ``time.t_end`` with its output folder -- the same object
the Python API gives, so there is one driver."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..config.settings import load_config, parse_overrides
from .folder import latest_run_point
from .processes import RunError, run_comm, together
from .simulation import Simulation

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
        if (folder / "run.log").is_file():
            raise RunError(f"no complete snapshot in {str(folder)!r} to restart from: the run "
                           f"there stopped before writing its first snapshot, so nothing of it "
                           f"can be continued; start it again (hybridtree run CONFIG with the "
                           f"same output.dir: the folder is reused, no --overwrite needed)")
        raise RunError(f"no complete snapshot in {str(folder)!r} to restart from (no run has "
                       f"written one there); start a run with hybridtree run CONFIG")
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
    kw = dict(output=True, overwrite=overwrite, quiet=quiet, progress=progress,
              log_json=log_json, echo=True, to_end=True)
    if restart is not None:
        sim = Simulation.from_restart(restart, over, **kw)
    else:
        sim = Simulation.from_settings(together(comm, load_config, config, over), **kw)
    with sim:
        sim.evolve(sim.t_end)
    return Path(sim.settings.output.dir)

