"""Time-stepping schemes: sequences of kicks, drifts and forces on a state.

One scheme serves both the plain and the hybrid tree: the nested kick-drift-kick
leapfrog.  A step of length Δt with an outer part (soft) and an inner part (hard, or
the whole force) taken in n_inner substeps of h = Δt / n_inner:

    kick(outer, Δt/2);
    n_inner × [kick(inner, h/2); drift(h); forces; kick(inner, h/2)];
    kick(outer, Δt/2)

with the forces of the last substep computing both parts from one tree.  The plain
leapfrog is the nested scheme with one substep, the whole force as the inner part and
no outer part: v += a Δt/2; x += v Δt; a = a(x); v += a Δt/2.  Both are symplectic and
time-reversible; the acceleration of the end of a step is reused at the start of the
next.  Units: internal (G = 1).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..gravity.engine import GravitySettings
from ..gravity.forces import Active
from .timebins import NBINS, DeviceBins, bin_scale, bins_for, lowest_active, next_tick

__all__ = ["BlockLeapfrog", "BlockSettings", "NestedLeapfrog", "REBIN", "first_forces"]

#: where block steps choose new bins (:class:`BlockSettings` ``rebin``)
REBIN = ("substep", "step")


def first_forces(engine, state, parts: tuple[str, ...]) -> None:
    """The forces a run starts from.  The relative opening criterion needs a_old, which a
    first force has not: it is computed with the geometric test and then again with the
    relative one (as GADGET-4 does), so that the run starts on the forces and the
    potential (its E0) of the walk it steps with; the geometric potential's error
    differs from the relative walk's by ~2e-5 of W on a Plummer sphere, which showed up
    as a jump of the energy error at the first step (docs/history.md §12)."""
    engine.compute(state, parts)
    if engine.g.opening == "relative":
        engine.compute(state, parts)


class NestedLeapfrog:
    """The nested KDK leapfrog (module docstring) with a force engine that has
    ``compute(state, parts)``: the one-process engine or the MPI one."""

    def __init__(self, engine, inner: str = "full", outer: str | None = None,
                 n_inner: int = 1, external: float = 0.0):
        """``external``: the coefficient λ of an external acceleration λ x (the Λ term
        Ω_Λ H0² r of a cosmological sphere in physical coordinates; 0: none), kicked with
        the outer part (the slow, smooth one), or with the whole force of a plain run."""
        if n_inner < 1:
            raise ValueError(f"n_inner must be >= 1, got {n_inner}")
        self.engine, self.inner, self.outer, self.n_inner = engine, inner, outer, int(n_inner)
        self.external = float(external)

    @property
    def parts(self) -> tuple[str, ...]:
        return (self.inner,) if self.outer is None else (self.inner, self.outer)

    def start(self, state, reuse: bool = False) -> None:
        """Forces at the starting positions; ``reuse``: the state already holds the whole
        force of a plain run (a restart continues with it, bit for bit)."""
        if not (reuse and self.outer is None):
            first_forces(self.engine, state, self.parts)
        else:
            self.engine.forces_known()

    def step(self, state, dt: float) -> None:
        """One step of ``dt`` (the soft step of a hybrid run)."""
        h = dt / self.n_inner
        if self.outer is not None:
            self._kick_outer(state, 0.5 * dt)
        for k in range(self.n_inner):
            self._kick_inner(state, 0.5 * h)
            state.drift(h)
            last = k == self.n_inner - 1
            self.engine.compute(state, self.parts if last else (self.inner,))
            self._kick_inner(state, 0.5 * h)
        if self.outer is not None:
            self._kick_outer(state, 0.5 * dt)

    def _kick_outer(self, state, dt: float) -> None:
        state.kick(self.outer, dt)
        if self.external:
            state.kick_linear(self.external, dt)

    def _kick_inner(self, state, dt: float) -> None:
        state.kick(self.inner, dt)
        if self.external and self.outer is None:
            state.kick_linear(self.external, dt)


@dataclass(frozen=True)
class BlockSettings:
    """Block time steps: dt = ``eta`` sqrt(eps / |a|), in bins 0 ... ``max_bin`` of the
    largest step (``time.eta``, ``time.max_bin``); with ``eta_v`` > 0 also dt <= eta_v
    eps / |v| (``time.eta_v``).  ``rebin`` (``time.rebin``): where a particle takes a new
    bin: ``substep``, at each of its synchronisations (GADGET's and GOTHIC's rule), or
    ``step``, only where every bin is synchronised (the largest step's start; within it
    the bins are kept, so that each largest step is a palindrome of kicks and drifts: the
    energy does not drift, docs/galaxies.md)."""

    eta: float = 0.2
    max_bin: int = 16
    eta_v: float = 0.0
    rebin: str = "substep"

    def __post_init__(self):
        if self.rebin not in REBIN:
            raise ValueError(f"rebin must be one of {REBIN}, got {self.rebin!r}")


@dataclass
class BinStats:
    """What the block steps did since the run began, per bin k (arrays of NBINS).
    ``particles``: particles in bin k at the start of the last step.  A substep is
    charged to its lowest active bin (GADGET-4's convention): ``substeps`` counts them,
    ``seconds`` is their wall time (host clock), ``interactions`` their interactions and
    ``forces`` the particles whose force they computed.  Where a substep does not wait
    at its end (the device's substeps with ``rebin`` "step") its seconds stop before the
    device has finished it: the rest falls to the next substep's first wait (its walk's
    sizes), the last substep's to the step's end."""

    particles: np.ndarray = field(default_factory=lambda: np.zeros(NBINS, np.int64))
    substeps: np.ndarray = field(default_factory=lambda: np.zeros(NBINS, np.int64))
    seconds: np.ndarray = field(default_factory=lambda: np.zeros(NBINS))
    interactions: np.ndarray = field(default_factory=lambda: np.zeros(NBINS, np.int64))
    forces: np.ndarray = field(default_factory=lambda: np.zeros(NBINS, np.int64))
    dt: float = 0.0           # the largest step of the last step taken

    def rows(self) -> list[dict]:
        """One dict per bin that held particles or was charged a substep (``dt``: the
        bin's step in the last step taken)."""
        used = np.flatnonzero((self.particles > 0) | (self.substeps > 0))
        return [{"bin": int(k), "dt": float(np.ldexp(self.dt, -int(k))),
                 "particles": int(self.particles[k]),
                 "substeps": int(self.substeps[k]), "seconds": float(self.seconds[k]),
                 "interactions": int(self.interactions[k]), "forces": int(self.forces[k])}
                for k in used]


class BlockLeapfrog:
    """Block (hierarchical) KDK time steps, as GADGET-4's and GOTHIC's: a particle in bin
    k takes steps of dt / 2^k (:mod:`hybridtree.integrate.timebins`).  One :meth:`step` of dt
    starts and ends with every bin synchronised:

        every particle: new bin from its acceleration; kick(own step / 2)
        until the end of dt, at the next tick where any bin ends:
            drift every particle to it; forces of the active particles (the walk takes
            only them as sinks); active: kick(old step / 2), new bin, kick(new step / 2)
        (at the end: the last kick closes every bin)

    Drifting every particle with its half-kicked velocity is the leapfrog's drift cut
    into pieces, so with one bin this is :class:`NestedLeapfrog`'s plain leapfrog, bit
    for bit.  The forces of all particles at the end of a step (which also start the
    next) remove the net force as the shared steps do; forces of some do not (their net
    force is real).
    Units: internal (G = 1).  Plain tree only (no force split); under MPI every process
    takes every tick (its force call is collective), with the bins counted over all."""

    parts = ("full",)
    #: with the bins kept (rebin "step"), the device's substeps note their interactions
    #: on the device and wait for nothing (False: each reads them, one wait a substep)
    quiet_substeps = True

    def __init__(self, engine, block: BlockSettings, external: float = 0.0, combine=None):
        """``combine``: the element-wise sum over all processes of a float64 array (MPI:
        every process must take the same ticks, so the bins are counted globally)."""
        if not 0 <= block.max_bin < NBINS:
            raise ValueError(f"max_bin must be in [0, {NBINS - 1}], got {block.max_bin}")
        if not block.eta > 0:
            raise ValueError(f"eta must be > 0, got {block.eta}")
        self.engine, self.block, self.external = engine, block, float(external)
        self.combine = combine
        self.stats = BinStats()
        self._bins = None

    def start(self, state, reuse: bool = False) -> None:
        """Forces at the start (``reuse``: the state holds them: a restart, bit for bit;
        the engine then builds the tree that its substeps' refits start from)."""
        if reuse:
            self.engine.forces_known(state)
        else:
            first_forces(self.engine, state, self.parts)

    def _bins_of(self, state):
        if self._bins is None or self._bins.state is not state or self._bins.n != state.n:
            self._bins = bins_for(state)
        return self._bins

    def step(self, state, dt: float) -> None:
        """One step of ``dt`` (the largest step), every bin synchronised at its end."""
        eps = self.engine.g.eps
        if not eps > 0:
            raise ValueError("block time steps need a softening length eps > 0 "
                             "(dt = eta sqrt(eps / |a|))")
        bins, lam, deep = self._bins_of(state), self.external, self.block.max_bin
        rebin = self.block.rebin == "substep"
        q0, half, ticks = bin_scale(dt, self.block.eta, eps), 0.5 * dt, 1 << deep
        # (dt_max / dt)^2 of the velocity criterion is qv |v|^2 (0: off)
        qv = (dt / (self.block.eta_v * eps)) ** 2 if self.block.eta_v > 0 else 0.0
        ratio = self.engine.g.eps_ratio          # a softening per type: dt from each's
        scale = None if ratio is None else tuple(1.0 / r for r in ratio)   # eps / eps_type
        bins.assign(0, deep, q0, lam, scale, qv=qv)
        occupied = self._total(bins.counts())
        self.stats.particles[:] = occupied
        self.stats.dt = float(dt)
        bins.kick(0, half, lam)
        pair = self._running_pair(bins)
        # the interactions of a substep: read with its bins' counts (one wait), from the
        # engine's running pair, which this read zeroes for the step; with the bins kept
        # (rebin "step") a substep does not wait at all: the pair is noted on the device
        # and the notes read at the step's end (the host enqueues the next substep while
        # the device still walks this one)
        base = self.engine.counts["interactions"] if pair is not None else 0
        quiet = pair is not None and not rebin and self.quiet_substeps
        noted: list[tuple[int, int, float]] = []     # (kmin, forces, seconds) of each
        prev = 0
        ti = 0
        while ti < ticks:
            t0 = time.perf_counter()
            ti_next = next_tick(ti, occupied, deep)
            state.drift(dt * ((ti_next - ti) / ticks))
            ti = ti_next
            kmin = lowest_active(ti, deep)
            before = self.engine.counts["interactions"] if pair is None else 0
            # how many are active: the engine's refit rule weighs it (Active.count)
            n_forces = self.engine.compute(state, self.parts, active=Active(
                bins.bins, kmin, int(occupied[kmin:].sum())) if kmin else None)
            now = None
            if ti < ticks and quiet:
                bins.close_open(kmin, deep, half, q0, lam, scale, qv, None, rebin=False)
                bins.note_pair(pair, len(noted))
                noted.append((kmin, n_forces, time.perf_counter() - t0))
                continue
            if ti < ticks:      # the active close their steps and open their next ones
                counts, now = bins.close_open(kmin, deep, half, q0, lam, scale, qv, pair,
                                              rebin=rebin)
                if counts is not None:
                    occupied = self._total(counts)
            else:
                bins.kick(kmin, half, lam)
            if noted:           # the quiet substeps' interactions: one read for all
                cums = bins.noted_pairs(len(noted)).sum(axis=1)
                for (k, forces, seconds), cum in zip(noted, cums.tolist()):
                    self._charge(k, forces, cum - prev, seconds)
                    prev = cum
                noted = []
            if pair is None:
                inter = self.engine.counts["interactions"] - before
            elif now is not None:
                inter, prev = int(now.sum()) - prev, int(now.sum())
            else:
                inter = self.engine.counts["interactions"] - base - prev
            self._charge(kmin, n_forces, inter, time.perf_counter() - t0)

    def _charge(self, kmin: int, forces: int, interactions: int, seconds: float) -> None:
        """A substep's forces, interactions and seconds (summed over all processes),
        charged to its lowest active bin."""
        done = self._total(np.array([forces, interactions]))
        st = self.stats
        st.substeps[kmin] += 1
        st.forces[kmin] += done[0]
        st.interactions[kmin] += done[1]
        st.seconds[kmin] += seconds

    def _running_pair(self, bins):
        """The engine's running interaction pair on the device, where a substep's bins
        read it in their one wait (one process, device bins); else None."""
        tally = getattr(self.engine, "tally", None)
        if self.combine is not None or not isinstance(bins, DeviceBins) or tally is None:
            return None
        return tally.running(self.parts[0])

    def _total(self, values: np.ndarray) -> np.ndarray:
        """``values`` summed over all processes (int64)."""
        if self.combine is None:
            return np.asarray(values, np.int64)
        return np.rint(self.combine(np.asarray(values, np.float64))).astype(np.int64)
