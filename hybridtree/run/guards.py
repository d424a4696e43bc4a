"""Run guards: stop on signals after a complete step, and on non-finite values; refuse
particles beyond the float32 forces' range before the first force.

Signals and values are checked once per (soft) step; under MPI the processes agree (one
small Allreduce), so all of them stop after the same step.  The range
(:mod:`hybridtree.gravity.tree.limits`) is checked once, when a run opens (O(N): the
extent and the mass); a step whose values are not finite is told apart as a particle out
of that range or a step too long for its softening.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

import numpy as np

from ..errors import HybridtreeError
from ..gravity.tree.limits import mass_error, refusal, span_error, spread
from ..parallel.comm import Comm
from ..particles import Particles, bounds
from .processes import RunError

__all__ = ["NumericalError", "RunInterrupted", "Signals", "check_first", "check_range",
           "check_step"]


class RunInterrupted(KeyboardInterrupt):
    """The run stopped on a signal after a complete step (``code``: the exit status); a
    KeyboardInterrupt, so that ``except KeyboardInterrupt`` in a notebook catches it and
    handlers of ordinary errors (``except Exception``) do not."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


class NumericalError(HybridtreeError, RuntimeError):
    """A step produced NaN or inf; nothing of it was written."""


class Signals:
    """SIGTERM and SIGINT set a flag (the step in progress finishes) instead of killing
    the run mid-step; a second SIGINT interrupts at once.  Only in the main thread."""

    def __init__(self):
        self.caught = 0
        self._old: dict[int, Any] = {}

    def _handle(self, signum: int, frame: Any) -> None:
        if self.caught == signal.SIGINT and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.caught = signum

    def __enter__(self) -> "Signals":
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)


def check_step(comm: Comm, stepper: Any, step: int, caught: int) -> int:
    """NumericalError (on every process) if any particle's position, velocity or
    acceleration is not finite after ``step`` (the stepper's :meth:`bad_ids`: a flag on
    the device, IDs fetched only when it trips); returns the signal any process caught
    (0: none), so that all stop after the same step."""
    bad = stepper.bad_ids()
    bad_ids = sorted(bad or [])[:10]
    n_bad = len(bad or [])
    if comm.size > 1:
        flags = comm.allreduce(np.array([n_bad, caught]), "max")
        if flags[0] > 0:
            found = comm.allgather((n_bad, bad_ids))
            n_bad = sum(n for n, _ in found)
            bad_ids = sorted(i for _, ids in found for i in ids)[:10]
        caught = int(flags[1])
    if n_bad:
        more = f" and {n_bad - len(bad_ids)} more" if n_bad > len(bad_ids) else ""
        out = _out_of_range(comm, stepper)
        advice = (f"; {out}" if out else " (restart from the last snapshot with a smaller "
                  "time.dt or larger gravity.eps)")
        raise NumericalError(f"step {step} produced non-finite positions, velocities or "
                             f"accelerations for particle IDs {bad_ids}{more}; nothing of "
                             f"this step was written{advice}")
    return caught


def check_first(comm: Comm, stepper: Any) -> None:
    """NumericalError (on every process) if the first forces of a run (before anything of
    them is written) are not finite: :func:`check_step`'s test and words."""
    bad = stepper.bad_ids()
    found = comm.allgather(sorted(bad or [])[:10]) if comm.size > 1 else [sorted(bad or [])]
    ids = sorted(i for f in found for i in f)[:10]
    if ids:
        out = _out_of_range(comm, stepper)
        raise NumericalError(f"the first forces are not finite for particle IDs {ids}; "
                             f"nothing was written" + (f"; {out}" if out else
                                                       " (a larger gravity.eps?)"))


def _out_of_range(comm: Comm, stepper: Any) -> str | None:
    """Collective: the refusal of :func:`check_range` for the stepper's particles now
    (positions that left the range the forces represent), or None."""
    p = stepper.particles()
    finite = np.isfinite(p.pos).all(axis=1)
    kept = Particles(p.pos[finite], p.vel[finite], p.mass[finite], p.ids[finite])
    try:
        check_range(comm, kept, stepper.engine.g, "the particles now")
    except RunError as exc:
        return str(exc)
    return None


def check_range(comm: Comm, p: Particles, g: Any, what: str) -> None:
    """RunError (on every process) for particles beyond the range of the float32 forces
    of gravity settings ``g`` (:mod:`hybridtree.gravity.tree.limits`: the span of all
    processes' particles against the smallest softening ``g.walk_eps``, the total mass):
    one line naming the particle (ID, position) farthest from the particles' median
    position (under MPI: the median of the processes' medians) and the span allowed.
    O(N) and, under MPI, two small collectives (four when it refuses)."""
    eps, tree = float(g.walk_eps), g.method == "tree"
    box = g.periodic.box if g.periodic is not None else None
    n = len(p)
    drawn = getattr(p, "bounds", None)       # a model drawn into the state (ModelRows)
    if drawn is not None:
        lo, hi, sums = drawn[0], drawn[1], np.array([n, drawn[2]])
    else:
        lo, hi = bounds(p.pos) if n else (np.full(3, np.inf), np.full(3, -np.inf))
        sums = np.array([n, p.mass.sum()])
    if comm.size > 1:
        ext = comm.allreduce(np.concatenate([-lo, hi]), "max")
        lo, hi = -ext[:3], ext[3:]
        sums = comm.allreduce(sums)
    n_all, total = int(sums[0]), float(sums[1])
    if n_all == 0 or not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        return              # none, or values not finite: check_particles names them
    error = mass_error(total, eps, what)
    if error:
        raise RunError(error)
    with np.errstate(over="ignore", invalid="ignore"):
        extent = float(np.max(hi - lo))
    found = span_error(extent, total, n_all, eps, tree, box)
    if found is None:
        return
    if drawn is not None:
        p = p.particles()           # refused: the whole model, drawn again, names the culprit
    centre, centre_is = np.median(p.pos, axis=0) if n else None, "median position"
    if comm.size > 1:       # the processes' medians' median: as robust, one small gather
        centre = np.median([c for c in comm.allgather(centre) if c is not None], axis=0)
        centre_is = "median of the processes' median positions"
    i, half = spread(p.pos, centre) if n else (0, 0.0)
    mine = ((float(np.abs(p.pos[i] - centre).max()), int(p.ids[i]), p.pos[i], half) if n
            else None)
    picks = [c for c in (comm.allgather(mine) if comm.size > 1 else [mine]) if c is not None]
    _, pid, where, _ = max(picks, key=lambda c: c[0])
    bulk = 2 * float(np.median([c[3] for c in picks])) > found[0]
    raise RunError(refusal(what, f"particle ID {pid}", where, centre, centre_is, extent,
                           *found, eps, total, n_all, bulk=bulk))
