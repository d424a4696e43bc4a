"""Fault injection for the failure tests (``tests/run/test_faults.py``); inert unless the
environment variable ``HYBRIDTREE_FAULT`` is set.

``HYBRIDTREE_FAULT = "KIND@POINT:STEP[:RANK]"``: at ``POINT`` of step ``STEP`` (on process
``RANK`` only, default every process) do ``KIND``:

- ``raise``: raise RuntimeError("injected fault (POINT, step STEP)") (a failing process);
- ``nan``: put NaN into the first particle's velocity (a numerical blow-up; ``target``
  is the run's stepper, whose ``poison()`` does it where the state lives);
- ``kill``: SIGKILL this process (a node lost, a batch limit, ``kill -9``);
- ``sigint``, ``sigterm``: send this process SIGINT (Ctrl-C at that moment) or SIGTERM
  (a batch system's warning);
- ``kill_after``: wait until the run has finished step ``STEP + 1`` (so that a write
  at ``POINT`` is known to run in the background while the run steps on), then
  SIGKILL; RuntimeError if the run does not get there within 30 s.

Points: ``step`` (after the step's integration), ``write`` (inside a snapshot write,
after the data, before the file gets its final name), ``start`` (step 0: during
start-up, after run.log and diagnostics.csv are created, before the first forces).
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from .errors import HybridtreeError

__all__ = ["FaultSpecError", "KINDS", "POINTS", "inject"]

#: the faults and the points where one can be injected (the module docstring says what
#: each does)
KINDS = ("raise", "nan", "kill", "sigint", "sigterm", "kill_after")
POINTS = ("step", "write", "start")


class FaultSpecError(HybridtreeError, ValueError):
    """A HYBRIDTREE_FAULT that is not ``KIND@POINT:STEP[:RANK]``."""

#: HYBRIDTREE_FAULT's text and its parse (None: unset), parsed again when the text
#: changes: a test sets the variable (monkeypatch.setenv) and the next point reads it
_SPEC: tuple[str, tuple[str, str, int, int | None] | None] = ("", None)
_STEPS_DONE = 0          # the last step the run's thread passed the "step" point of


def _spec() -> tuple[str, str, int, int | None] | None:
    global _SPEC
    text = os.environ.get("HYBRIDTREE_FAULT", "")
    if text != _SPEC[0]:
        _SPEC = (text, _parse(text) if text else None)  # a bad one stays unread: raised again
    return _SPEC[1]


def _parse(text: str) -> tuple[str, str, int, int | None]:
    kind, _, rest = text.partition("@")
    point, _, where = rest.partition(":")
    step, _, rank = where.partition(":")
    if (kind not in KINDS or point not in POINTS or not step.isdigit()
            or not (rank == "" or rank.isdigit())):
        raise FaultSpecError(
            f"HYBRIDTREE_FAULT = {text!r} is not KIND@POINT:STEP[:RANK] (KIND one of "
            f"{', '.join(KINDS)}; POINT one of {', '.join(POINTS)}; STEP and RANK whole "
            f"numbers, e.g. raise@step:6:1): it injects faults for the failure tests "
            f"only, unset it for a real run")
    return kind, point, int(step), int(rank) if rank else None


def inject(point: str, step: int, rank: int = 0, target: Any = None) -> None:
    """Do the configured fault if it is due here (see the module docstring)."""
    global _STEPS_DONE
    spec = _spec()
    if spec is None:
        return
    if point == "step":
        _STEPS_DONE = max(_STEPS_DONE, step)
    kind, at, when, who = spec
    if at != point or when != step or (who is not None and who != rank):
        return
    if kind == "raise":
        raise RuntimeError(f"injected fault ({point}, step {step})")
    if kind == "nan" and target is not None:
        target.poison()
    elif kind == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif kind in ("sigint", "sigterm"):
        os.kill(os.getpid(), signal.SIGINT if kind == "sigint" else signal.SIGTERM)
        time.sleep(1.0)         # Python runs the handler at its next bytecode
    elif kind == "kill_after":
        deadline = time.monotonic() + 30.0
        while _STEPS_DONE <= step:
            if time.monotonic() > deadline:
                raise RuntimeError(f"injected fault: the run did not pass step {step + 1} "
                                   f"while {point} was in progress")
            time.sleep(0.005)
        os.kill(os.getpid(), signal.SIGKILL)
