"""An engine's tally: interactions per force part and forces computed, cumulative.

Interaction counts of a device force are summed on the device into a running int64 pair
per part (:meth:`hybridtree.device.reduce.Reducer.count_sum_into`) and read only when the
tally is read (a report, a block step's statistics): a force then waits for nothing
after its walk (a 2^22 step read its count sum every force before, a blocking read that
drained the device's queue, session 21).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pyopencl as cl

from ..device import reduce
from ..device.runtime import Runtime
from ..device.transfer import read_small

__all__ = ["Tally"]


class Tally:
    """Cumulative counts: ``add`` for numbers the host has, ``add_device`` for int2
    interaction counts (particle-particle, particle-cell) on the device; :meth:`read`
    gives them all (a defaultdict(int): "interactions", "<part>_interactions",
    "<part>_forces", "refits", ...)."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self._values: dict[str, int] = defaultdict(int)
        self._device: dict[str, cl.Buffer] = {}     # part -> int64 pair, summed on the device
        self._unread: set[str] = set()

    def add(self, key: str, k: int) -> None:
        self._values[key] += int(k)

    def add_interactions(self, part: str, k: int) -> None:
        """``k`` interactions of part ``part``, known on the host."""
        self._values["interactions"] += int(k)
        self._values[f"{part}_interactions"] += int(k)

    def add_device(self, part: str, n: int, counts: cl.Buffer) -> None:
        """The interactions of n sinks (int2 counts on the device), summed there."""
        if n <= 0:
            return
        total = self._device.get(part)
        if total is None:
            total = self._device[part] = self.rt.empty(16)
            cl.enqueue_fill_buffer(self.rt.queue, total, np.int64(0), 0, 16)
        reduce.reducer(self.rt).count_sum_into(n, counts, total)
        self._unread.add(part)

    def running(self, part: str) -> cl.Buffer:
        """The device's int64 pair (particle-particle, particle-cell) of ``part``'s
        interactions summed since the last :meth:`read` (made, zeroed, if none yet): a
        caller may copy it into a read of its own (block substeps) without a wait."""
        total = self._device.get(part)
        if total is None:
            total = self._device[part] = self.rt.empty(16)
            cl.enqueue_fill_buffer(self.rt.queue, total, np.int64(0), 0, 16)
        return total

    def read(self) -> dict[str, int]:
        """Every count, the device sums added in (one small read per part with sums
        since the last read)."""
        for part in sorted(self._unread):
            pair = read_small(self.rt, np.empty(2, np.int64), self._device[part])
            cl.enqueue_fill_buffer(self.rt.queue, self._device[part], np.int64(0), 0, 16)
            self.add_interactions(part, int(pair.sum()))
        self._unread.clear()
        return self._values
