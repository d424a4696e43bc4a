"""Who holds the device's memory: every buffer a :class:`hybridtree.device.runtime.Runtime`
makes (``Runtime.empty``, ``Runtime.to_device``, the pinned staging area) is entered in its
:class:`Ledger` with its size in bytes and its owner, and leaves it when the buffer is freed.
The ledger keeps the live bytes by owner, the peak of the total, the owners' bytes at that
peak and each owner's own peak: what a run reports (run.log, the ``end:`` line,
``Simulation.memory``) and what a memory plan is checked against.

An owner is named by the code that asked for the buffer, found from the calling module
(:data:`OWNERS`): the buffers a stage allocates belong to that stage whichever helper
(a :class:`hybridtree.device.transfer.Workspace`, ``scratch``, ``upload``) made them, so no
call site passes a name.  A buffer of a module not in the table is ``"other"`` (a test
asserts a run has none).

What the ledger cannot see: the OpenCL context and compiled programs (the driver's own
memory, some hundreds of MiB on a GPU), and reikna's FFT buffers of the periodic mesh
(made by reikna, not by the runtime).  A run's memory plan (:mod:`hybridtree.run.plan`)
estimates the first and sets :attr:`Ledger.context`: the ``end:`` line then adds it as a
separate figure, named an estimate.  Units: bytes.
"""

from __future__ import annotations

import functools
import sys
from collections import Counter
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Callable

import pyopencl as cl

__all__ = ["Ledger", "OWNERS", "TrackedBuffer", "new_buffer", "owner_of_caller",
           "run_fields"]

#: the owner of the buffers each module asks for, by the module's name under
#: ``hybridtree.`` (the longest matching prefix wins); modules of the device layer itself
#: (the allocators) are skipped when the caller is looked for
OWNERS: Mapping[str, str] = MappingProxyType({
    "state": "state",
    "integrate.timebins": "state",
    "gravity.eps_types": "state",
    "gravity.tree.device_sort": "sort",
    "gravity.tree": "tree",
    "gravity.list_walk": "lists",
    "gravity.walk": "walk",
    "gravity.walk_sources": "walk",
    "gravity.walk_kernels": "walk",
    "gravity.counts": "walk",
    "gravity.engine": "walk",
    "gravity.backends": "walk",
    "gravity.arrays": "walk",
    "gravity.pipeline": "walk",
    "gravity.direct": "direct",
    "gravity.api": "walk",
    "gravity.pm_device": "mesh",
    "gravity.pm_compact": "mesh",
    "gravity.pm_slabs": "mesh",
    "gravity.long_range": "mesh",
    "gravity.periodic": "mesh",
    "parallel": "let",
    "device.reduce": "reductions",
    "device.reduce_sets": "reductions",
    "device.multisection": "reductions",
    "device.probe": "probe",
    "run.views": "views",
    "analysis": "reductions",
})

#: modules whose frames are passed over when the caller is looked for: the allocators
_ALLOCATORS = ("hybridtree.device.memory", "hybridtree.device.runtime",
               "hybridtree.device.transfer")


class TrackedBuffer(cl.Buffer):
    """A pyopencl buffer that tells its ledger when it is freed (pyopencl's own class
    takes neither a weak reference nor attributes; ``__del__`` costs far less than a
    ``weakref.finalize``, which doubled the cost of a small allocation)."""

    def __del__(self) -> None:
        ledger = self.__dict__.get("_ledger")
        if ledger is not None:
            ledger.leave(self._owner, self._nbytes)


@functools.cache
def _owner_of_module(name: str) -> str | None:
    """The owner of module ``name``; None for a module passed over (the allocators, or
    code outside the package).  Remembered per name (the prefix search once per module):
    a function of the name and :data:`OWNERS`, which cannot change."""
    who: str | None = None
    if name.startswith("hybridtree.") and not name.startswith(_ALLOCATORS):
        mod = name[len("hybridtree."):]
        best = max((p for p in OWNERS if mod == p or mod.startswith(p + ".")), key=len,
                   default="")
        who = OWNERS[best] if best else "other"
    return who


def owner_of_caller(depth: int = 12) -> str:
    """The owner (:data:`OWNERS`) of the first frame up the stack in the package outside
    the device layer's allocators; ``"other"`` where none is found."""
    frame = sys._getframe(1)
    for _ in range(depth):
        if frame is None:
            break
        who = _owner_of_module(frame.f_globals.get("__name__", ""))
        if who is not None:
            return who
        frame = frame.f_back
    return "other"


class Ledger:
    """Live device bytes by owner, with the peak of their total (see the module's
    docstring).  One per runtime; not shared between threads (the package allocates from
    the thread that owns the queue)."""

    def __init__(self) -> None:
        self.live: Counter[str] = Counter()
        self.total = 0
        self.peak = 0
        #: the owners' live bytes when the total reached :attr:`peak`
        self.at_peak: dict[str, int] = {}
        #: each owner's own highest live bytes
        self.owner_peak: Counter[str] = Counter()
        #: an estimate of the driver's own memory on the device (the OpenCL context and
        #: programs, which no buffer shows), set by the run's memory plan; 0: unknown
        self.context = 0

    def enter(self, buf: Any, nbytes: int, owner: str | None = None) -> Any:
        """Enter ``buf`` (a :class:`TrackedBuffer` of ``nbytes`` bytes) under ``owner``
        (default: found from the caller); it leaves the ledger when it is freed."""
        who = owner or owner_of_caller()
        nbytes = int(nbytes)
        self.live[who] += nbytes
        self.total += nbytes
        if self.live[who] > self.owner_peak[who]:
            self.owner_peak[who] = self.live[who]
        if self.total > self.peak:
            self.peak = self.total
            self.at_peak = {k: v for k, v in self.live.items() if v}
        buf._ledger, buf._owner, buf._nbytes = self, who, nbytes
        return buf

    def leave(self, who: str, nbytes: int) -> None:
        """A buffer of ``nbytes`` entered under ``who`` was freed."""
        self.live[who] -= nbytes
        self.total -= nbytes

    def reset_peak(self) -> None:
        """Start a new peak from what is live now (a run's peak after its set-up, say)."""
        self.peak = self.total
        self.at_peak = {k: v for k, v in self.live.items() if v}
        self.owner_peak = Counter({k: v for k, v in self.live.items() if v})

    def report(self) -> dict[str, Any]:
        """``{"peak": bytes, "live": bytes, "at_peak": {owner: bytes}, "owner_peak":
        {owner: bytes}, "context_estimate": bytes}``: plain ints, sorted by size (largest
        first); the buffers only in all but the last (:attr:`context`, 0 where unknown)."""
        def ordered(d: dict[str, int]) -> dict[str, int]:
            return {k: int(v) for k, v in sorted(d.items(), key=lambda kv: -kv[1]) if v}
        return {"peak": int(self.peak), "live": int(self.total),
                "at_peak": ordered(self.at_peak), "owner_peak": ordered(self.owner_peak),
                "context_estimate": int(self.context)}


def run_fields(ledger: Ledger, n_local: int, gather: Callable[[Any], list]) -> dict[str, Any]:
    """The ``end:`` line's memory fields of a run whose process holds ``n_local``
    particles: the peak of the device buffers in MiB, in bytes per particle, and the
    owners' MiB at that peak -- of the process with the largest peak (``gather``: every
    process's value, ``Comm.allgather``; one process: ``lambda x: [x]``); where the
    driver's own memory is estimated (:attr:`Ledger.context`), that estimate
    (``device_context_estimate_mib``) and the peak with it (``device_total_estimate_mib``)."""
    rep = ledger.report()
    peak, n, owners, context = max(gather((rep["peak"], int(n_local), rep["at_peak"],
                                           rep["context_estimate"])), key=lambda row: row[0])
    mib = 2.0 ** 20
    fields = {"device_peak_mib": round(peak / mib, 1),
              "device_bytes_per_particle": round(peak / max(n, 1)),
              "device_by_owner_mib": ",".join(f"{k}:{v / mib:.1f}" for k, v in owners.items())}
    if context:
        fields.update(device_context_estimate_mib=round(context / mib, 1),
                      device_total_estimate_mib=round((peak + context) / mib, 1))
    return fields


def new_buffer(context: cl.Context, flags: int, nbytes: int, hostbuf: Any, ledger: Ledger | None,
               owner: str | None = None) -> cl.Buffer:
    """A buffer of ``nbytes`` (from ``hostbuf`` where given) entered in ``ledger`` under
    ``owner`` (default: the calling module's).  ``ledger`` None (a simulator): a plain
    buffer, not counted: under Oclgrind 21.10 the tracked subclass drew uninitialised-value
    reports on buffers the kernels had written (cause not found), while PoCL, Intel's
    runtime and NVIDIA's ran every test with it."""
    if ledger is None:
        return cl.Buffer(context, flags, size=0 if hostbuf is not None else nbytes,
                         hostbuf=hostbuf)
    if hostbuf is not None:
        buf = TrackedBuffer(context, flags, hostbuf=hostbuf)
    else:
        buf = TrackedBuffer(context, flags, size=nbytes)
    return ledger.enter(buf, nbytes, owner)
