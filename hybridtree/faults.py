"""Fault injection for the failure tests (``tests/test_faults.py``); inert unless the
environment variable ``HYBRIDTREE_FAULT`` is set.

``HYBRIDTREE_FAULT = "KIND@POINT:STEP[:RANK]"``: at ``POINT`` of step ``STEP`` (on process
``RANK`` only, default every process) do ``KIND``:

- ``raise``: raise RuntimeError("injected fault (POINT, step STEP)") (a failing process);
- ``nan``: put NaN into the first particle's velocity (a numerical blow-up);
- ``kill``: SIGKILL this process (a node lost, a batch limit, ``kill -9``).

Points: ``step`` (after the step's integration), ``write`` (inside a snapshot write,
after the data, before the file gets its final name).
"""

from __future__ import annotations

import os
import signal
from typing import Any

__all__ = ["inject"]

_SPEC: tuple[str, str, int, int | None] | None | bool = False     # False: not read yet


def _spec() -> tuple[str, str, int, int | None] | None:
    global _SPEC
    if _SPEC is False:
        text = os.environ.get("HYBRIDTREE_FAULT", "")
        _SPEC = None
        if text:
            kind, _, rest = text.partition("@")
            point, _, where = rest.partition(":")
            step, _, rank = where.partition(":")
            _SPEC = (kind, point, int(step), int(rank) if rank else None)
    return _SPEC


def inject(point: str, step: int, rank: int = 0, particles: Any = None) -> None:
    """Do the configured fault if it is due here (see the module docstring)."""
    spec = _spec()
    if spec is None:
        return
    kind, at, when, who = spec
    if at != point or when != step or (who is not None and who != rank):
        return
    if kind == "raise":
        raise RuntimeError(f"injected fault ({point}, step {step})")
    if kind == "nan" and particles is not None:
        particles.vel[0, 0] = float("nan")
    elif kind == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
