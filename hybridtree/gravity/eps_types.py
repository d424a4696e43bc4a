"""The softening of each particle of a run state from its GADGET type
(``gravity.eps_types``: :attr:`hybridtree.gravity.settings.GravitySettings.eps_types`), as
the tree build takes it (a float32 per particle, cl/prepare.cl ``PER_EPS``).  Lengths:
the run's units."""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from ..device.kernels import launch
from ..device.runtime import Runtime

__all__ = ["TypeSoftenings"]


class TypeSoftenings:
    """Each type's softening kept on the device (uploaded again only when it changes: a
    cosmological run rescales it) and spread over a state's particles there."""

    def __init__(self, rt: Runtime):
        self.rt = rt
        self._key: tuple | None = None
        self._table: cl.Buffer | None = None

    def device(self, s, g, work) -> cl.Buffer | None:
        """float32 softenings (n) of device state ``s``'s particles under gravity settings
        ``g`` in a buffer of ``work`` (cl/state.cl ``eps_of_types``); None: one for all."""
        table = g.eps_types
        if table is None or s.n == 0:
            return None
        key = tuple(table)
        if self._key != key:
            self._key, self._table = key, self.rt.to_device(table.astype(np.float32))
        out = work("eps_of_types", 4 * s.n)
        launch(self.rt, "state.cl", "eps_of_types", s.n, np.int32(s.n), s.types, self._table,
               out)
        return out
