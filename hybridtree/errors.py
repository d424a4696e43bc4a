"""The one base class of hybridtree's user errors.

A *user error* is a mistake of input, settings, files or machine that the user can fix
without changing hybridtree: a config with an unknown setting, a snapshot that is not one,
a folder that does not exist, an OpenCL device that is not there, a run whose steps blow up
with the chosen time step.  The command line reports one as one line on stderr
(``hybridtree: error: ...``) and exit status 2 (``--debug`` shows the traceback too).
Anything else that escapes a command is a bug in hybridtree: the command line shows its
traceback and asks for a report.

Each error class of the package derives from :class:`HybridtreeError` and keeps the
standard base it had before (``ConfigError(HybridtreeError, ValueError)``), so callers
that catch ``ValueError``, ``OSError`` or ``RuntimeError`` keep working.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

__all__ = ["HybridtreeError", "UserInputError", "UserTypeError", "real_argument"]


class HybridtreeError(Exception):
    """A user error: a mistake of input, settings, files or machine that the user can fix
    (see the module's docstring).  The command line reports it as one line, exit
    status 2."""


class UserInputError(HybridtreeError, ValueError):
    """A user's input (a command's arguments, a config, a snapshot) that a lower layer
    rejected with a plain ValueError; the command line raises it at the boundary where it
    hands the user's input over, so that the mistake is reported as one."""


class UserTypeError(UserInputError, TypeError):
    """A user's argument of the wrong type (text where a number belongs, an unknown
    keyword); a TypeError too, as Python's own would be."""


def real_argument(what: str, value: Any) -> float:
    """``value`` as a float: a real number (not a bool) and finite, else UserTypeError /
    UserInputError naming ``what`` (``"evolve(t)"``) and the value."""
    if getattr(value, "shape", None) == () and hasattr(value, "item"):
        value = value.item()            # a numpy scalar or 0-d array: its Python number
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise UserTypeError(f"{what} must be a number, got {value!r} "
                            f"({type(value).__name__})")
    x = float(value)
    if not math.isfinite(x):
        raise UserInputError(f"{what} must be a finite number, got {x!r}")
    return x
