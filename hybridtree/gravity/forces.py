"""What :func:`hybridtree.gravity.accelerations` returns: :class:`Forces`, the forces of
sinks given as arrays (float64, caller's order, G = 1); and :class:`Active`, which particles a
force of some (a block substep) computes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

__all__ = ["Active", "Forces"]


class Active(NamedTuple):
    """The particles a force of some computes: those whose time bin (int32 ``bins``, one
    per particle in the caller's order: a device buffer or a numpy array) is at least
    ``kmin``.  ``count``: how many they are, where the caller knows (the block schemes
    count their bins): the engine's refit rule weighs it; None: not known."""

    bins: Any
    kmin: int
    count: int | None = None


@dataclass
class Forces:
    """Forces of sinks given as arrays (float64, caller's order, G = 1): what
    :func:`hybridtree.gravity.accelerations` returns.

    ``n_pp``/``n_pc``: interactions per sink.  On the device-resident path they stay on
    the device until first read (a download of 8 bytes per sink that most callers never
    need); ``interactions`` is their total, summed on the device.
    """

    acc: np.ndarray                  # (n, 3) acceleration
    pot: np.ndarray                  # (n,) potential
    _n_pp: np.ndarray | None = None  # (n,) particle-particle interactions per sink
    _n_pc: np.ndarray | None = None  # (n,) particle-cell interactions per sink
    device: str = ""
    timings: dict = field(default_factory=dict)   # seconds (and a few counts)
    _total: int | None = None
    _fetch: object = None            # () -> (n_pp, n_pc), for counts still on the device

    def _counts(self) -> None:
        if self._n_pp is None:
            self._n_pp, self._n_pc = self._fetch()
            self._fetch = None

    @property
    def n_pp(self) -> np.ndarray:
        self._counts()
        return self._n_pp

    @property
    def n_pc(self) -> np.ndarray:
        self._counts()
        return self._n_pc

    @property
    def interactions(self) -> int:
        if self._total is not None:
            return self._total
        return int(self.n_pp.sum() + self.n_pc.sum())
