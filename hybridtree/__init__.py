"""hybridtree: a gravitational N-body tree code on OpenCL (GPUs and CPUs) with MPI.

Units: G = 1 throughout; lengths, masses and times are in the caller's units.
"""

import os as _os
import sys as _sys


def _started_as_command() -> bool:
    """Whether this process is the ``hybridtree`` command being started: its console
    script (``sys.argv[0]`` names it until ``main`` runs) or ``python -m hybridtree``
    (``sys.argv[0]`` is ``-m`` while Python imports the package it runs)."""
    argv0 = _sys.argv[0] if getattr(_sys, "argv", None) else ""
    if _os.path.basename(argv0).removesuffix(".exe") in ("hybridtree", "hybridtree-script.py"):
        return True
    if argv0 != "-m":
        return False
    orig = list(getattr(_sys, "orig_argv", ()))
    for i, arg in enumerate(orig[1:], 1):
        if arg.startswith("-m"):
            module = arg[2:] or (orig[i + 1] if i + 1 < len(orig) else "")
            return module in ("hybridtree", "hybridtree.__main__", "hybridtree.cli")
    return False


def interrupted_at_start(signum, frame) -> None:
    """SIGINT while the command is still starting (importing, before
    ``hybridtree.cli.main`` takes over): the same one line and exit status as an
    interrupt later, not the traceback of whichever import it hit.  Nothing has been done
    yet, so nothing needs cleaning up.  Public for the command line, which puts Python's
    own handler back where it finds this one (not in ``__all__``: no user calls it)."""
    _os.write(2, b"hybridtree: interrupted\n")
    _os._exit(130)


def _guard_start() -> None:
    """Only for the command, never for a script or notebook that imports hybridtree; not
    where SIGINT is ignored (``nohup``, a background job)."""
    if not _started_as_command():
        return
    # _signal, not signal: it is built in and already loaded, so the unguarded moment
    # is a few bytecodes; importing signal (enum conversions, ~1 ms) left an interrupt
    # there a traceback through this file (seen in CI)
    import _signal
    if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
        try:
            _signal.signal(_signal.SIGINT, interrupted_at_start)
        except ValueError:      # not the main thread: Python's own behaviour then
            pass


# First thing, so that it covers the rest of this file and every import of the command
# up to main() (hybridtree.cli, its imports, and what main() imports before it runs)
_guard_start()

__version__ = "0.1.0"

__all__ = ["Simulation", "__version__"]


def __getattr__(name: str):
    # lazily, so that ``import hybridtree`` stays light (no OpenCL, no h5py)
    if name == "Simulation":
        from .run.simulation import Simulation
        return Simulation
    raise AttributeError(f"module 'hybridtree' has no attribute {name!r}")
