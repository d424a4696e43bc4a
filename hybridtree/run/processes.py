"""A run's processes: how many a launcher started, the run's communicator, and
:class:`RunError` -- a user mistake found while setting a run up -- raised on every process
together (:func:`together`), so that none is left waiting."""

from __future__ import annotations

import os

from ..errors import HybridtreeError
from ..parallel.comm import Comm
from ..parallel.snapshots import agree

__all__ = ["RunError", "launched_processes", "run_comm", "together"]


def launched_processes() -> int:
    """How many processes an MPI launcher started (1 without one), read from the launcher's
    environment so that mpi4py need not be imported."""
    for name in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"):
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return 1


class RunError(HybridtreeError, ValueError):
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
    """``fn(*args)`` on every process; a user error on any of them (a
    :class:`HybridtreeError`, a ValueError of the input, an OSError, a MemoryError) is
    raised on all of them as CollectiveError, so none is left waiting.  Any other
    exception is a bug: the process that met it raises it (its traceback), the others a
    RuntimeError naming that process.  One process: ``fn`` as it is."""
    if comm.size == 1:
        return fn(*args, **kwargs)
    result, error, bug = None, None, None
    try:
        result = fn(*args, **kwargs)
    except (HybridtreeError, ValueError, OSError, MemoryError) as exc:
        error = " ".join(str(exc).split()) or type(exc).__name__
    except Exception as exc:            # noqa: BLE001 -- re-raised below
        bug = exc
    bugs = comm.allgather(bug is not None)
    if bug is not None:
        raise bug
    if any(bugs):
        raise RuntimeError(f"process {bugs.index(True)} of {comm.size} stopped on a bug "
                           f"(its traceback is in its output)")
    agree(comm, error)
    return result
