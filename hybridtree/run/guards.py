"""Run guards: stop on signals after a complete step, and on non-finite values.

Both are checked once per (soft) step; under MPI the processes agree (one small
Allreduce), so all of them stop after the same step.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

import numpy as np

from ..errors import HybridtreeError
from ..parallel.comm import Comm

__all__ = ["NumericalError", "RunInterrupted", "Signals", "check_step"]


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
        raise NumericalError(f"step {step} produced non-finite positions, velocities or "
                             f"accelerations for particle IDs {bad_ids}{more}; nothing of "
                             f"this step was written (restart from the last snapshot with a "
                             f"smaller time.dt or larger gravity.eps)")
    return caught
