"""Several sets' fixed-order reductions in one level chain (issue 57): a report of a run of
several particle types sums each type's moments and finds each type's Lagrangian radii
(about its own centre of mass, of its own total), and the whole set's radii.  One set at
a time, each is a chain of launches (a multisection of :data:`PASSES` passes, each pass
its levels), so a report of three types cost four times one set's, launch-bound on a GPU.
Here every set's sums are columns of one chain (cl/reduce.cl ``moment_sets``: a
work-item per block and set; ``enclosed_sets``: per block, each particle adding to its own
sets' sums only, or per block and set on GPUs), and all sets' trial radii narrow in one
multisection.

Set s is the particles of one GADGET type, or every particle (``None``).  In the moments
a particle outside a set adds the terms of a mass of +0.0 to that set's sums, in the block
order of :mod:`.reduce`, which is what a one-set sum of :meth:`Reducer.type_mass`'s
masses adds: the same bits (tests/device/test_reduce_sets.py); the radii are the
particles' own radii that :func:`.multisection.multisect` picks (the enclosed masses
compared with f x total are the one-set sums, or differ in a zero's sign alone).  Units: internal
(G = 1); masses, lengths and velocities as the caller's arrays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyopencl as cl

from .multisection import PASSES, TRIALS, checked_fractions
from .reduce_twins import BLOCK, moments_of_sums
from .transfer import read_small, scratch

if TYPE_CHECKING:
    from .runtime import Runtime

__all__ = ["ALL_TYPES", "MAX_SETS", "SetReductions", "read_radii", "selectors"]

#: A set's byte in cl/reduce.cl's ``sel`` for every particle (ALL_TYPES there).
ALL_TYPES = 255
#: Sets per chain: a byte each of one 64-bit ``sel``.
MAX_SETS = 8


def read_radii(rt: Runtime, st: cl.Buffer, count: int) -> np.ndarray:
    """The radii (float64, (count,)) of a finished multisection of ``count`` fractions
    (cl/reduce.cl ``radii_start``'s state ``st``): each bracket's upper end, read back in
    one wait."""
    out = read_small(rt, np.empty(2 + 4 * count, np.int64), st)
    lo, hi = out[2 + count:2 + 2 * count], out[2 + 2 * count:2 + 3 * count]
    assert np.all(hi - lo <= 1), "the multisection did not converge in PASSES passes"
    return hi.view(np.float64)


def selectors(sets: list[int | None]) -> np.uint64:
    """cl/reduce.cl's ``sel`` of ``sets`` (GADGET types 0..254, None for every particle):
    set s's byte s."""
    if not 0 < len(sets) <= MAX_SETS:
        raise ValueError(f"1 to {MAX_SETS} sets in one chain, got {len(sets)}")
    sel = 0
    for i, t in enumerate(sets):
        b = ALL_TYPES if t is None else int(t)
        if not 0 <= b <= ALL_TYPES or (t is not None and b == ALL_TYPES):
            raise ValueError(f"a set is a GADGET type 0..{ALL_TYPES - 1} or None, got {t}")
        sel |= b << (8 * i)
    return np.uint64(sel)


class SetReductions:
    """The sets' reductions of a :class:`hybridtree.device.reduce.Reducer` (its base):
    ``types`` is a uint8 buffer of each particle's GADGET type, ``mass_step`` as there."""

    rt: Runtime

    def _rows(self, n: int, k: int) -> cl.Buffer | None:
        """The level-1 rows of a chain of k sums (None: one block, no rows), made for the
        call and freed after it: k is S times a set's, 8 k / BLOCK bytes a particle (10.5
        for the radii of four sets), which kept would sit beside a walk's peak for the
        rest of the run (the run's plan keeps one set's: hybridtree/run/plan.py)."""
        rows = -(-n // BLOCK)
        return self.rt.empty(8 * k * rows) if rows > 1 else None

    def set_moments(self, n: int, types: cl.Buffer, sets: list[int | None], pos: cl.Buffer,
                    vel: cl.Buffer, mass: cl.Buffer, pot: cl.Buffer | None = None,
                    pot4: bool = False, mass_step: int = 1) -> list[dict]:
        """:meth:`Reducer.moments` of each set (the same keys and bits as of the set's
        :meth:`Reducer.type_mass` masses), in one level chain of 13 sums a set."""
        sel = selectors(sets)
        if n == 0:
            return [moments_of_sums(np.zeros(13)) for _ in sets]
        k = 13 * len(sets)
        row = self._levels_on_device("moment_sets4" if pot4 else "moment_sets", n, k,
                                     np.int32(len(sets)), sel, types, pos, vel, mass,
                                     np.int32(mass_step), pot, np.int32(pot is not None),
                                     per_row=len(sets), rows_out=self._rows(n, k))
        row = read_small(self.rt, np.empty(k), row)
        return [moments_of_sums(row[13 * i:13 * (i + 1)]) for i in range(len(sets))]

    def set_radii(self, n: int, types: cl.Buffer, sets: list[int | None], pos: cl.Buffer,
                  mass: cl.Buffer, centres, totals, fractions=(0.1, 0.5, 0.9),
                  mass_step: int = 1, each: bool | None = None) -> list[list[float]]:
        """:meth:`Reducer.lagrangian_radii` of each set (per set a row of radii, length
        units) about its centre ``centres[s]`` ((S, 3)) of the mass ``totals[s]``: the same
        bits as one set at a time (of its :meth:`Reducer.type_mass` masses), with one
        multisection of :data:`PASSES` passes for all, run on the device and read back
        once; NaN where a total is not > 0.  ``each``: the enclosed masses with a
        work-item per block and set (cl/reduce.cl ``enclosed_sets_each``; None: on GPUs),
        else per block (``enclosed_sets``): the same radii."""
        f = checked_fractions(fractions)
        sel, s, nf = selectors(sets), len(sets), len(f)
        if n == 0:
            return [[float("nan")] * nf for _ in sets]
        rt, nr, fs = self.rt, nf * TRIALS, len(sets) * nf
        par = scratch(rt, "reduce.sets", 8 * (4 * s + nf))
        # kept until the copy has run, as its event (a dropped one of a host copy waits)
        self._sets_init = np.concatenate([np.asarray(centres, np.float64).reshape(3 * s),
                                          np.asarray(totals, np.float64).reshape(s), f])
        self._sets_copy = cl.enqueue_copy(rt.queue, par, self._sets_init, is_blocking=False)
        rmax = self._levels_on_device("max_radius_sets", n, s, np.int32(s), pos, par,
                                      op="reduce_rows_max", per_row=s, rows_out=self._rows(n, s))
        st = scratch(rt, "reduce.radii_state", 8 * (2 + 4 * fs))
        radii = scratch(rt, "reduce.radii", 8 * s * nr)
        self._run("radii_start_sets", fs, np.int32(s), np.int32(nf), np.int32(TRIALS), par,
                  rmax, st, radii)
        each = rt.info.kind == "gpu" if each is None else each
        rows = self._rows(n, s * nr)      # one buffer for every pass
        for _ in range(PASSES):
            sums = self._levels_on_device("enclosed_sets_each" if each else "enclosed_sets", n,
                                          s * nr, np.int32(s), sel, types, pos, mass,
                                          np.int32(mass_step), par, radii, nr=nr,
                                          per_row=s if each else 1, rows_out=rows)
            self._run("radii_narrow", fs, np.int32(fs), np.int32(TRIALS), sums, st, radii)
        return [[float(r) for r in row] for row in read_radii(rt, st, fs).reshape(s, nf)]
