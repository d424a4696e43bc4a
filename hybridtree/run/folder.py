"""A run's output folder: which files belong to a run, where a run continues from, and
whether a new run may write there.

A folder holds scheduled snapshots ``snapshot_NNNN.hdf5`` (or the parts
``snapshot_NNNN.K.hdf5`` of multi-file sets), at most one restart point ``restart.hdf5``
(``restart.K.hdf5``: the state written when a signal stopped the run, which takes no
snapshot number, so the scheduled snapshots keep theirs), ``diagnostics.csv`` and
``run.log``.  The newest of the snapshots and the restart point (by their step) is where
``hybridtree run --restart FOLDER`` continues.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from pathlib import Path

# where a run continues is read from its snapshots: hybridtree.io.snapshot
from ..io.snapshot import (RESTART_STEM, SNAPSHOT_RE, latest_run_point, latest_snapshot,
                           restart_point, run_point_step)
from .processes import RunError

__all__ = ["RUN_FILES", "RESTART_STEM", "TEMP_RE", "run_point_step", "latest_run_point",
           "restart_point", "prepare_output"]

RUN_FILES = ("diagnostics.csv", "diagnostics_types.csv", "run.log")
RESTART_RE = re.compile(r"^restart(?:\.(\d+))?\.hdf5$")
#: a snapshot's power spectrum (output.power_spectrum): it goes with its snapshot
POWER_RE = re.compile(r"^powerspec_(\d+)\.txt$")
#: a snapshot's GADGET-2 binary twin (output.gadget2): it goes with its snapshot too
GADGET2_RE = re.compile(r"^snapshot_(\d+)\.gadget2$")
#: a snapshot's FOF catalogue (output.halos): it goes with its snapshot too
FOF_RE = re.compile(r"^fof_tab_(\d+)\.hdf5$")
#: temporary names of unfinished writes (hybridtree.io.snapshot.atomic_path)
TEMP_RE = re.compile(r"^\.((snapshot_\d+|restart)(\.\d+)?\.hdf5|diagnostics(_types)?\.csv|"
                     r"powerspec_\d+\.txt|snapshot_\d+\.gadget2|fof_tab_\d+\.hdf5)\.\d+\.tmp$")


def _companion(name: str) -> re.Match | None:
    """A snapshot file or one of the files that go with it (its P(k), its GADGET-2 twin)."""
    return (SNAPSHOT_RE.match(name) or POWER_RE.match(name) or GADGET2_RE.match(name)
            or FOF_RE.match(name))


def _run_files(out: Path) -> tuple[list[Path], list[Path], list[Path]]:
    """(snapshot files and their power spectra, restart files, run.log/diagnostics.csv)
    in ``out``."""
    if not out.is_dir():
        return [], [], []
    names = sorted(out.iterdir())
    return ([p for p in names if _companion(p.name)],
            [p for p in names if RESTART_RE.match(p.name)],
            [p for p in names if p.name in RUN_FILES])


def _conflicts(out: Path, keep: tuple[int, int] | None) -> tuple[list[Path], list[Path]]:
    """(files a run would replace, leftovers it may remove).  ``keep``: (number, step) of
    the snapshot a run continues from in this folder; later snapshots and a later restart
    point belong to another future and are conflicts."""
    snaps, restarts, logs = _run_files(out)
    if keep is None:
        if not snaps and not restarts:
            # a run stopped before its first snapshot: nothing it wrote can be continued
            return [], logs
        return snaps + restarts + logs, []
    number, step = keep
    later = [p for p in snaps
             if int(_companion(p.name).group(1)) > number]
    point = restart_point(out)
    if point is not None and (run_point_step(point) or 0) > step:
        later += restarts
    return later, []


def _later_states(out: Path, names: str, keep: tuple[int, int], source: Path | None,
                  go_on: str) -> str:
    """What to say when a run continued in ``out`` from snapshot ``keep`` = (number, step)
    (the file ``source``) would write over the files ``names`` there."""
    number, step = keep
    what = f"{source.name} (step {step})" if source is not None else f"step {step}"
    text = (f"output folder {str(out)!r} holds {names}, which this run would write over: it "
            f"continues {what} and numbers its snapshots on from {number + 1}")
    newest = latest_run_point(out)
    newest_step = run_point_step(newest) if newest is not None else None
    # a state saved on its own (Simulation.save) may be of another run than the folder's
    # files: continuing the folder's newest state is offered only from one of its own
    own = source is None or bool(_companion(source.name) or RESTART_RE.match(source.name))
    if own and newest_step is not None and newest_step > step:
        text += (f"; the folder's newest state is at step {newest_step}: continue from it "
                 f"with {go_on},")
    else:
        text += ";"
    return (f"{text} write this run elsewhere with --set output.dir=FOLDER, or replace those "
            f"files with --overwrite")


def prepare_output(out: Path, overwrite: bool, keep: tuple[int, int] | None,
                   source: Path | None = None) -> bool:
    """Check (and create) the output folder; return True if it was created here.

    ``keep``: continuing in place from snapshot (number, step), the file ``source``.  Raises
    :class:`RunError` when the folder holds a run (or, continuing, its later
    states) and ``overwrite`` is not given, OSError-like ValueError when it cannot be
    written."""
    if out.exists() and not out.is_dir():
        raise RunError(f"output.dir {str(out)!r} exists and is not a folder")
    conflicts, leftovers = _conflicts(out, keep)
    if conflicts and not overwrite:
        names = ", ".join(p.name for p in conflicts[:3]) + (" ..." if len(conflicts) > 3 else "")
        go_on = f"hybridtree run --restart {shlex.quote(str(out))}"
        if keep is None:
            raise RunError(f"output folder {str(out)!r} already holds a run ({names}); "
                           f"continue it with {go_on} (beyond its end: add --set "
                           f"time.t_end=...), replace it with --overwrite, or set another "
                           f"output.dir")
        raise RunError(_later_states(out, names, keep, source, go_on))
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
    for p in conflicts + leftovers:    # --overwrite, or what a stopped start-up left
        p.unlink()
    for p in out.glob(".*.tmp"):      # writes a killed run left unfinished
        if TEMP_RE.match(p.name):
            p.unlink(missing_ok=True)
    return created
