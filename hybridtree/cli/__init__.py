"""Command line: ``hybridtree run | ic | devices | info | plot | bench | halos | pk``.

User errors (:class:`hybridtree.errors.HybridtreeError`, and the file and machine errors
of :func:`user_error`) end with exit status 2 and one line on stderr (``--debug`` shows
the traceback instead); anything else is a bug: its traceback, a line asking to report
it, exit status 1.  An interrupted run ends with 130; output cut short by its reader
(``hybridtree info ... | head -1``) ends quietly with 141, as a command killed by SIGPIPE.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from ..errors import HybridtreeError
from .parser import build_parser

__all__ = ["REPORT_TO", "build_parser", "main", "user_error"]


def _mpi_rank() -> tuple[int, int]:
    """(rank, size) from the MPI launcher's environment ((0, 1) without one)."""
    from ..run.simulation import launched_processes
    size = launched_processes()
    for name in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"):
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value), size
    return 0, size


def _collective(exc: BaseException) -> bool:
    """Errors every process of an MPI run raises together (reported once, by rank 0)."""
    from ..config.settings import ConfigError
    from ..parallel.comm import CollectiveError
    from ..run.simulation import NumericalError, RunError
    return isinstance(exc, (CollectiveError, RunError, ConfigError, NumericalError))


def user_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the user's to fix (one line, exit status 2) rather than a bug:
    a :class:`HybridtreeError`, or a file or machine error that names its cause (a path
    that does not exist or may not be written, a full disk: OSError; too little memory:
    MemoryError)."""
    return isinstance(exc, (HybridtreeError, OSError, MemoryError))


def _abort_others(code: int) -> None:
    """One process failed on its own: stop all (instead of leaving them waiting in a
    collective call until the batch limit)."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized():
        sys.stderr.flush()
        # the launcher forwards our stderr through a pipe: an abort right away can tear
        # the job down before the one line that says what went wrong arrives (seen on a
        # loaded 2-core machine)
        time.sleep(0.5)
        mpi.COMM_WORLD.Abort(code)


def _take_over_ctrl_c() -> None:
    """From here on main() reports a SIGINT itself: put back Python's KeyboardInterrupt
    where hybridtree/__init__.py set the handler of the command's start-up.  Called only
    once main() has imported what every command needs (numpy, h5py, pyopencl): a
    KeyboardInterrupt raised inside an extension module's initialisation (pyopencl's,
    through nanobind) aborts the process (status 134) instead of reaching main()."""
    import signal

    from hybridtree import interrupted_at_start
    if signal.getsignal(signal.SIGINT) is interrupted_at_start:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _load_for(command: str) -> None:
    """Import what ``command`` needs before main() takes Ctrl-C over (see
    :func:`_take_over_ctrl_c`), and no more: ``pk`` and ``halos`` only their analysis
    (numpy, h5py, scipy's FFT or k-d tree, OpenCL for pk), not the run's machinery
    (hybridtree.run.simulation: integrators, scipy.integrate ..., about a second more of
    every start); every other command the run's, as before."""
    if command == "pk":
        from ..analysis import power, power_device          # noqa: F401
    elif command == "halos":
        from ..analysis import halos                        # noqa: F401
    else:
        from ..run import simulation                        # noqa: F401


def _run_interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is a run's own stop on a signal (RunInterrupted: it says where the
    run stopped and carries its exit status); looked up only where the run's guards were
    imported, since no such exception exists otherwise."""
    guards = sys.modules.get("hybridtree.run.guards")
    return guards is not None and isinstance(exc, guards.RunInterrupted)


#: where a bug is to be reported
REPORT_TO = "the project's issue tracker"


def _stdout_gone() -> int:
    """The reader of our output went away (``hybridtree info ... | head -1``): nothing is
    wrong, so no message; point stdout at /dev/null so that Python's flush at exit does
    not complain either."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):   # a stdout without a file (tests)
        pass
    return 141                                      # 128 + SIGPIPE, as ``cat`` would


def _report_user_error(args: argparse.Namespace, exc: Exception) -> int:
    """One line (on one process, or naming the process), exit status 2."""
    rank, size = _mpi_rank()
    if args.debug:
        if size > 1 and not _collective(exc):
            import traceback
            traceback.print_exc()
            _abort_others(2)
        raise exc
    msg = " ".join(str(exc).split()) or type(exc).__name__
    if size == 1:
        print(f"hybridtree: error: {msg}", file=sys.stderr)
    elif _collective(exc):
        if rank == 0:
            print(f"hybridtree: error: {msg}", file=sys.stderr)
    else:
        print(f"hybridtree: error on process {rank} of {size}: {msg}", file=sys.stderr)
        _abort_others(2)
    return 2


def _report_bug(args: argparse.Namespace, exc: Exception) -> int:
    """A bug: its traceback and a line asking for a report, exit status 1."""
    import traceback

    from hybridtree import __version__
    rank, size = _mpi_rank()
    if args.debug and size == 1:
        raise exc
    traceback.print_exc()
    where = f" on process {rank} of {size}" if size > 1 else ""
    print(f"hybridtree {__version__}: internal error{where}: this is a bug; please report "
          f"it, with the lines above and the command, at {REPORT_TO}", file=sys.stderr)
    _abort_others(1)
    return 1


def main(argv: list[str] | None = None) -> int:
    args = None
    try:
        args = build_parser().parse_args(argv)
        _load_for(args.command)                          # numpy, h5py, ...: a while
        _take_over_ctrl_c()
    except KeyboardInterrupt:
        if args is not None and args.debug:
            raise
        print("hybridtree: interrupted", file=sys.stderr)
        return 130
    try:
        code = args.func(args)
        sys.stdout.flush()          # here, so that a reader gone away is seen here
        return code
    except KeyboardInterrupt as exc:
        if _run_interrupted(exc):
            if _mpi_rank()[0] == 0:
                print(f"hybridtree: {exc}", file=sys.stderr)
            return exc.code
        if args.debug:
            raise
        print("hybridtree: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _stdout_gone()
    except Exception as exc:
        if user_error(exc):
            return _report_user_error(args, exc)
        return _report_bug(args, exc)


if __name__ == "__main__":
    sys.exit(main())
