"""Where a run's time goes: seconds per phase, measured where the work happens.

Work on the device is timed by the device: a marker is enqueued where a phase starts
and one where it ends, and the phase's time is the difference of their completion
timestamps (OpenCL profiling), read once the queue has passed them (:meth:`Clock.settle`,
once per step, after the step's one unavoidable wait).  So timing a phase adds no wait
for the queue.  Work on the host (a host state's kicks, an HDF5 write) is timed by the
host's clock, after waiting for whatever the phase enqueued.

Phases of a run (cumulative seconds in :attr:`Clock.seconds`): ``build`` (tree
construction on the device, no upload), ``walk`` (the tree walks; per force part also
``walk_full``/``walk_soft``/``walk_hard``), ``pm`` (a periodic box's mesh: assignment,
FFTs, interpolation and, on many processes, the density's sum over them), ``transfer``
(copies between host and device),
``integrate`` (kicks and drifts), ``reduce`` (net force, interaction counts,
diagnostics, the finiteness guard) and ``output`` (time the run waited for snapshots
and diagnostics files).  Under MPI also ``decompose``, ``exchange``, ``let_select``,
``let_comm``.
"""

from __future__ import annotations

import time
from collections import defaultdict
from contextlib import contextmanager
from typing import Iterator

import pyopencl as cl

from .runtime import Runtime

__all__ = ["Clock"]


class Clock:
    """Cumulative seconds per phase name, for one process (see the module docstring)."""

    def __init__(self, rt: Runtime | None = None):
        self.rt = rt
        self.seconds: dict[str, float] = defaultdict(float)
        self._pending: list[tuple[tuple[str, ...], cl.Event, cl.Event]] = []
        self._events = rt is not None and bool(
            rt.queue.properties & cl.command_queue_properties.PROFILING_ENABLE)

    @contextmanager
    def device(self, *names: str) -> Iterator[None]:
        """Time the device work enqueued inside the block, charged to every name."""
        if not self._events:
            with self.host(*names, wait=True):
                yield
            return
        start = cl.enqueue_marker(self.rt.queue)
        yield
        self._pending.append((names, start, cl.enqueue_marker(self.rt.queue)))

    @contextmanager
    def host(self, *names: str, wait: bool = False) -> Iterator[None]:
        """Time the block by the host's clock (``wait``: until the queue is empty)."""
        t0 = time.perf_counter()
        yield
        if wait and self.rt is not None:
            self.rt.queue.finish()
        dt = time.perf_counter() - t0
        for name in names:
            self.seconds[name] += dt

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] += seconds

    def settle(self) -> None:
        """Charge the device phases enqueued so far (waits for their end markers)."""
        for names, start, end in self._pending:
            end.wait()
            dt = 1e-9 * max(0, end.profile.end - start.profile.end)
            for name in names:
                self.seconds[name] += dt
        self._pending.clear()

    def snapshot(self) -> dict[str, float]:
        """The cumulative seconds now (settled)."""
        self.settle()
        return dict(self.seconds)
