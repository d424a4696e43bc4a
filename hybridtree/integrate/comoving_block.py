"""Block time steps for the short range of a periodic box, as GADGET-4 steps a TreePM run:
the mesh's long-range force kicks every particle over the schedule's step [a0, a1]
(uniform in ln a), and inside it each particle takes the short-range steps its own
acceleration asks for, in bins k of Δln a / 2^k (:mod:`hybridtree.integrate.timebins`):

    p += K(a0, am) g_long                      (am: the step's middle in ln a)
    every particle: bin from |g_short + g_long|; p += K(own step's first half) g_short
    until a1, at the next tick where any bin ends:
        x += D(tick, next tick) p for every particle (wrapped into the box)
        g_short of the active particles (bins >= k_min; at a1 every particle, and g_long)
        active: p += K(last half of the old step) g_short; new bin;
                p += K(first half of the new step) g_short
    p += K(am, a1) g_long

K and D are GADGET's kick and drift factors (:func:`.comoving.kick_factor`,
:func:`.comoving.drift_factor`), integrals over the ticks' scale factors: the ticks are
uniform in ln a, a(t) = a0 (a1 / a0)^(t / T).  The bin criterion is GADGET-4's with our η:
a physical step η sqrt(ε_phys / |a_phys|), ε_phys = a ε and a_phys = g / a² for the
comoving softening ε and acceleration g, as Δln a = H(a) η sqrt(a³ ε / |g|).  With every
particle in the deepest bin K this is :class:`.comoving.ComovingLeapfrog` with
``n_short`` = 2^K (the same steps, the factors integrated over the same intervals).
The bins are synchronised at every step's end, where every force is computed, so a
restart takes the same steps.  One process, state on the device (the active particles'
short-range walk).  Units: internal (G = 1).
"""

from __future__ import annotations

import math
import time

import numpy as np

from ..gravity.forces import Active
from .comoving import box_side, drift_factor, kick_factor
from .schemes import BinStats, BlockSettings, first_forces
from ..state import DeviceState
from .timebins import NBINS, bins_for, lowest_active, next_tick

__all__ = ["ComovingBlock"]


class _Ticks:
    """The scale factors of one step's ticks, in half ticks j (tick j / 2), and the kick
    factors between them, each integrated once."""

    def __init__(self, cosmo, a0: float, a1: float, deep: int):
        self.cosmo, self.a0, self.a1, self.half = cosmo, a0, a1, 2 << deep
        self._kicks: dict[tuple[int, int], float] = {}

    def a(self, j: int) -> float:
        if j <= 0:
            return self.a0
        if j >= self.half:
            return self.a1
        return self.a0 * (self.a1 / self.a0) ** (j / self.half)

    def kick(self, j0: int, j1: int) -> float:
        key = (j0, j1)
        if key not in self._kicks:
            self._kicks[key] = kick_factor(self.cosmo, self.a(j0), self.a(j1))
        return self._kicks[key]

    def drift(self, j0: int, j1: int) -> float:
        return drift_factor(self.cosmo, self.a(j0), self.a(j1))


class ComovingBlock:
    """Block steps of a periodic box's short range (module docstring) with ``engine``'s
    forces (parts "short" and "long"); ``sched``: the run's
    :class:`hybridtree.integrate.schedule.Cosmic`, ``step``: the step the state is at;
    the box is the engine's (``engine.g.periodic``).  Chosen by
    :func:`hybridtree.integrate.choose.scheme_for`."""

    parts = ("short", "long")

    def __init__(self, engine, cosmo, sched, step: int, block: BlockSettings):
        if not 0 <= block.max_bin < NBINS:
            raise ValueError(f"max_bin must be in [0, {NBINS - 1}], got {block.max_bin}")
        if not block.eta > 0:
            raise ValueError(f"eta must be > 0, got {block.eta}")
        assert engine.g.parts == self.parts, engine.g.parts
        self.engine, self.cosmo, self.sched = engine, cosmo, sched
        self.k, self.box, self.block = int(step), box_side(engine), block
        self.stats = BinStats()
        self._bins = None

    def start(self, state, reuse: bool = False) -> None:
        """Forces at the starting positions, both parts (a restart recomputes them: the
        same bits as the last step's end computed)."""
        first_forces(self.engine, state, self.parts)

    def _q0(self, a: float, dlna: float) -> float:
        """(Δln a_max / Δln a)² = q0 |g| (the bins' q, :func:`.timebins.bin_scale`)."""
        eps = self.engine.g.eps
        if not eps > 0:
            raise ValueError("block time steps need a softening length eps > 0")
        h = float(self.cosmo.H(a))
        return dlna * dlna / (h * h * self.block.eta ** 2 * a ** 3 * eps)

    def _table(self, line: _Ticks, tick: int, kmin: int, occupied: np.ndarray,
               opening: bool) -> np.ndarray:
        """Each occupied bin >= kmin's kick factor over the first (``opening``) or last
        half of its step starting or ending at ``tick``."""
        deep, table = self.block.max_bin, np.zeros(NBINS)
        for k in np.flatnonzero(occupied[:deep + 1]):
            if k >= kmin:
                half = 1 << (deep - k)               # half a step of bin k, in half ticks
                j = 2 * tick
                table[k] = line.kick(j, j + half) if opening else line.kick(j - half, j)
        return table

    def step(self, state, dt: float) -> None:
        """The schedule's next step (``dt``, its length in time, is implied by it)."""
        if not isinstance(state, DeviceState):      # the active walk of a box's short range
            raise ValueError("block steps in a periodic box need the state on the device")
        a0, a1 = float(self.sched.a(self.k)), float(self.sched.a(self.k + 1))
        deep = self.block.max_bin
        ticks, line = 1 << deep, _Ticks(self.cosmo, a0, a1, deep)
        dlna = math.log(a1 / a0)
        if self._bins is None or self._bins.state is not state or self._bins.n != state.n:
            self._bins = bins_for(state)
        bins, engine = self._bins, self.engine
        ratio = engine.g.eps_ratio
        scale = None if ratio is None else tuple(1.0 / r for r in ratio)
        state.kick("long", line.kick(0, ticks))               # to the middle, in ln a
        bins.assign(0, deep, self._q0(a0, dlna), 0.0, scale, acc=state.total_acc())
        occupied = bins.counts()
        self.stats.particles[:] = occupied
        self.stats.dt = float(dt)
        bins.kick_table(0, self._table(line, 0, 0, occupied, True), "short")
        ti = 0
        while ti < ticks:
            t0 = time.perf_counter()
            ti_next = next_tick(ti, occupied, deep)
            state.drift(line.drift(2 * ti, 2 * ti_next))
            state.wrap(self.box)
            ti = ti_next
            kmin = lowest_active(ti, deep)
            before = engine.counts["interactions"]
            if kmin:
                n_forces = engine.compute(state, ("short",), active=Active(
                    bins.bins, kmin, int(occupied[kmin:].sum())))
            else:                                             # the step's end: all, both
                n_forces = engine.compute(state, self.parts)
            bins.kick_table(kmin, self._table(line, ti, kmin, occupied, False), "short")
            if ti < ticks:
                if self.block.rebin == "substep":       # else the bins are kept
                    bins.assign(kmin, deep, self._q0(line.a(2 * ti), dlna), 0.0, scale,
                                acc=state.total_acc())
                    occupied = bins.counts()
                bins.kick_table(kmin, self._table(line, ti, kmin, occupied, True), "short")
            st = self.stats
            st.substeps[kmin] += 1
            st.forces[kmin] += n_forces
            st.interactions[kmin] += engine.counts["interactions"] - before
            st.seconds[kmin] += time.perf_counter() - t0
        state.kick("long", line.kick(ticks, 2 * ticks))
        self.k += 1
