"""Time bins of block (hierarchical) time steps, on either state backend.

A particle in bin k steps by dt_max / 2^k, k = 0 ... K.  Time inside one step of dt_max
is counted in integer ticks of dt_max / 2^K, so that every bin boundary is exact.  A
step of bin k starts and ends on a multiple of 2^(K - k) ticks; at tick ti the active
particles are therefore those of bin >= :func:`lowest_active` (ti), with no clock per
particle, and a particle may move to a larger step only where the tick is a multiple of
it (GADGET-4's and GOTHIC's rule), which is the same bound.

The bin of a particle follows the usual criterion dt = eta sqrt(eps / |a|) (a: its whole
acceleration, the Λ term of a cosmological run included): the smallest k with dt_max /
2^k <= dt; with a softening per type (``gravity.eps_types``) eps is the particle's own.
Both backends compute the same bits (cl/blocks.cl mirrors the numpy here).
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from ..device.kernels import launch
from ..device.runtime import Runtime
from ..device.transfer import read_small, upload
from ..state import DeviceState, HostState, State

__all__ = ["DeviceBins", "HostBins", "NBINS", "bins_for", "lowest_active", "next_tick"]

#: Bins counted in the diagnostics (cl/blocks.cl ``NBINS``); the deepest allowed bin is
#: ``time.max_bin`` (at most NBINS - 1).
NBINS = 64


def lowest_active(ti: int, k_deep: int) -> int:
    """The lowest active bin at tick ``ti`` of a step of 2^k_deep ticks (0 at its ends)."""
    if ti % (1 << k_deep) == 0:
        return 0
    return k_deep - ((ti & -ti).bit_length() - 1)


def next_tick(ti: int, occupied: np.ndarray, k_deep: int) -> int:
    """The first tick after ``ti`` where a step of an occupied bin (particles per bin,
    ``occupied``) ends, in a step of 2^k_deep ticks."""
    kmax = int(np.flatnonzero(occupied)[-1]) if occupied.any() else 0
    span = 1 << (k_deep - kmax)
    return (ti // span + 1) * span


def bin_scale(dt_max: float, eta: float, eps: float) -> float:
    """q0 = dt_max^2 / (eta^2 eps): a particle's (dt_max / dt)^2 is q0 |a| (eps > 0)."""
    return dt_max * dt_max / (eta * eta * eps)


class HostBins:
    """Bins of a :class:`hybridtree.state.HostState` (numpy)."""

    def __init__(self, state: HostState):
        self.state = state
        self.n = state.n
        self.bins = np.zeros(state.n, np.int32)

    def assign(self, kmin: int, kmax: int, q0: float, lam: float,
               scale: tuple[float, ...] | None = None, acc: np.ndarray | None = None,
               qv: float = 0.0) -> None:
        """New bins for the particles of bin >= kmin (cl/blocks.cl ``assign_bins``;
        ``scale``: eps / eps_type per GADGET type, ``assign_bins_types``; ``acc``: the
        acceleration they follow, default the state's whole force; ``qv`` > 0: q is at
        least qv |v|^2 (scale^2 with types), dt <= eta_v eps / |v|)."""
        s = self.state
        rows = np.flatnonzero(self.bins >= kmin)
        a = (s.acc["full"] if acc is None else acc)[rows] + lam * s.pos[rows]
        q = q0 * np.sqrt((a[:, 0] * a[:, 0] + a[:, 1] * a[:, 1]) + a[:, 2] * a[:, 2])
        if scale is not None:
            q = q * np.asarray(scale, np.float64)[s.types[rows]]
        if qv > 0.0:
            v = s.vel[rows].astype(np.float64)      # float32 velocities widened
            w = qv * ((v[:, 0] * v[:, 0] + v[:, 1] * v[:, 1]) + v[:, 2] * v[:, 2])
            if scale is not None:
                sc = np.asarray(scale, np.float64)[s.types[rows]]
                w = w * (sc * sc)
            q = np.maximum(q, w)
        k = np.zeros(len(rows), np.int32)
        for _ in range(kmax):                 # exact: q is divided by 4 per bin
            up = q > 1.0
            if not up.any():
                break
            q = np.where(up, q * 0.25, q)
            k += up
        self.bins[rows] = np.maximum(k, kmin)

    def kick(self, kmin: int, half_dt: float, lam: float) -> None:
        """vel += h (acc + lam pos), h = half_dt / 2^bin, for bin >= kmin."""
        s = self.state
        with s.clock.host("integrate"):
            rows = np.flatnonzero(self.bins >= kmin)
            h = np.ldexp(half_dt, -self.bins[rows])[:, None]
            s.add_velocity(h * s.acc["full"][rows], rows)
            if lam != 0.0:
                s.add_velocity((h * lam) * s.pos[rows], rows)

    def kick_table(self, kmin: int, table: np.ndarray, part: str) -> None:
        """vel += table[bin] acc[part] for bin >= kmin (``table``: NBINS float64)."""
        s = self.state
        with s.clock.host("integrate"):
            rows = np.flatnonzero(self.bins >= kmin)
            s.add_velocity(np.asarray(table, np.float64)[self.bins[rows]][:, None]
                           * s.acc[part][rows], rows)

    def counts(self) -> np.ndarray:
        """Particles per bin (NBINS,)."""
        return np.bincount(np.clip(self.bins, 0, NBINS - 1), minlength=NBINS)[:NBINS]

    def close_open(self, kmin: int, kmax: int, half_dt: float, q0: float, lam: float,
                   scale: tuple[float, ...] | None = None, qv: float = 0.0,
                   pair: object = None, rebin: bool = True
                   ) -> tuple[np.ndarray | None, None]:
        """The end of a substep for the particles of bin >= kmin: :meth:`kick` (their
        old step's half), :meth:`assign` (new bins in kmin ... kmax; not with ``rebin``
        False: the bins kept), :meth:`kick` (the new step's half); returns
        (:meth:`counts`, or None where the bins were kept; None: ``pair`` is the
        device's)."""
        self.kick(kmin, half_dt, lam)
        if not rebin:
            self.kick(kmin, half_dt, lam)
            return None, None
        self.assign(kmin, kmax, q0, lam, scale, qv=qv)
        self.kick(kmin, half_dt, lam)
        return self.counts(), None


class DeviceBins:
    """Bins of a :class:`hybridtree.state.DeviceState`: an int32 buffer beside it.
    ``fused``: :meth:`close_open` in one kernel (None: on every device but a CPU)."""

    fused: bool | None = None

    def __init__(self, state: DeviceState):
        self.state = state
        self.rt: Runtime = state.rt
        self.n = state.n
        self.bins = self.rt.empty(4 * max(self.n, 1))
        cl.enqueue_fill_buffer(self.rt.queue, self.bins, np.int32(0), 0, 4 * max(self.n, 1))
        # NBINS int32 counts, then room for an int64 pair read in the same wait
        self._counts = self.rt.empty(4 * NBINS + 16)
        self._notes: cl.Buffer | None = None        # note_pair's, made when first asked

    def assign(self, kmin: int, kmax: int, q0: float, lam: float,
               scale: tuple[float, ...] | None = None, acc: cl.Buffer | None = None,
               qv: float = 0.0) -> None:
        s = self.state
        head = (self.n, np.int32(self.n), np.int32(kmin), np.int32(kmax), np.float64(q0),
                np.float64(lam), s.pos, s.acc["full"] if acc is None else acc,
                np.float64(qv), s.vel)
        if scale is None:
            launch(self.rt, "blocks.cl", "assign_bins", *head, self.bins,
                   defines=s.vel_defines)
            return
        launch(self.rt, "blocks.cl", "assign_bins_types", *head, s.types,
               self._scale_buffer(scale), self.bins,
               defines=s.vel_defines)

    def _scale_buffer(self, scale: tuple[float, ...]) -> cl.Buffer:
        """The device copy of the per-type step factors ``scale``, uploaded when they
        change."""
        if getattr(self, "_scale_key", None) != scale:
            self._scale_key = scale
            self._scale = self.rt.to_device(np.asarray(scale, np.float64))
        return self._scale

    def kick(self, kmin: int, half_dt: float, lam: float) -> None:
        s = self.state
        with s.clock.device("integrate"):
            launch(self.rt, "blocks.cl", "kick_bins", self.n, np.int32(self.n),
                   np.int32(kmin), np.float64(half_dt), np.float64(lam), s.acc["full"], s.pos,
                   s.vel, self.bins, defines=s.vel_defines)

    def kick_table(self, kmin: int, table: np.ndarray, part: str) -> None:
        s = self.state
        table = np.ascontiguousarray(table, np.float64)
        assert table.shape == (NBINS,), table.shape
        with s.clock.device("integrate"):
            buf, = upload(self.rt, [table], ["kick_table"])     # in queue order, no wait
            launch(self.rt, "blocks.cl", "kick_bins_table", self.n, np.int32(self.n),
                   np.int32(kmin), buf, s.acc[part], s.vel, self.bins, defines=s.vel_defines)

    def close_open(self, kmin: int, kmax: int, half_dt: float, q0: float, lam: float,
                   scale: tuple[float, ...] | None = None, qv: float = 0.0,
                   pair: cl.Buffer | None = None, rebin: bool = True
                   ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """:meth:`HostBins.close_open`'s kick, assignment and kick in one launch on GPUs
        (cl/blocks.cl ``close_open_bins``: the same bits as the three apart), the
        counts, and one wait; ``pair``: a device int64 pair (the engine's running interaction counts,
        :meth:`hybridtree.gravity.counts.Tally.running`) read in the same wait, else
        None.  Returns (particles per bin (NBINS,), the pair or None).  ``rebin`` False:
        the bins kept (two kicks), no counts (None) and no wait but the pair's."""
        if not rebin:
            self.kick(kmin, half_dt, lam)
            self.kick(kmin, half_dt, lam)
            if pair is None:
                return None, None
            return None, read_small(self.rt, np.empty(2, np.int64), pair)
        s, q = self.state, self.rt.queue
        fused = self.rt.info.kind != "cpu" if self.fused is None else self.fused
        if not fused:                       # cl/blocks.cl close_open_bins: why apart
            self.kick(kmin, half_dt, lam)
            self.assign(kmin, kmax, q0, lam, scale, qv=qv)
            self.kick(kmin, half_dt, lam)
        else:
            typed = scale is not None
            with s.clock.device("integrate"):
                launch(self.rt, "blocks.cl", "close_open_bins", self.n, np.int32(self.n),
                       np.int32(kmin), np.int32(kmax), np.float64(q0), np.float64(half_dt),
                       np.float64(lam), s.pos, s.acc["full"], np.float64(qv), s.vel,
                       np.int32(typed), s.types if typed else None,
                       self._scale_buffer(scale) if typed else None, self.bins)
        cl.enqueue_fill_buffer(q, self._counts, np.int32(0), 0, 4 * NBINS)
        launch(self.rt, "blocks.cl", "bin_counts", self.n, np.int32(self.n), self.bins,
               self._counts)
        size = 4 * NBINS
        if pair is not None:
            cl.enqueue_copy(q, self._counts, pair, dst_offset=size, byte_count=16)
            size += 16
        raw = read_small(self.rt, np.empty(size, np.uint8), self._counts)
        counts = raw[:4 * NBINS].view(np.int32).astype(np.int64)
        return counts, (raw[4 * NBINS:].view(np.int64).copy() if pair is not None else None)

    def note_pair(self, pair: cl.Buffer, j: int) -> None:
        """Copy the device int64 pair ``pair`` (an engine's running interactions) into
        note ``j`` on the device, in queue order, without a wait (:meth:`noted_pairs`
        reads them); the notes' buffer doubles where ``j`` is past its end."""
        room = self._notes
        have = 0 if room is None else room.size // 16
        if j >= have:
            grown = self.rt.empty(16 * max(64, 2 * have, j + 1))
            if have:
                cl.enqueue_copy(self.rt.queue, grown, room, byte_count=16 * have)
            self._notes = room = grown
        cl.enqueue_copy(self.rt.queue, room, pair, dst_offset=16 * j, byte_count=16)

    def noted_pairs(self, count: int) -> np.ndarray:
        """Notes 0 ... ``count`` - 1 of :meth:`note_pair`, (count, 2) int64: one wait."""
        return read_small(self.rt, np.empty((count, 2), np.int64), self._notes)

    def counts(self) -> np.ndarray:
        """Particles per bin (NBINS,): one wait (the counts zeroed on the device, not by a
        copy from the host, which waited too)."""
        cl.enqueue_fill_buffer(self.rt.queue, self._counts, np.int32(0), 0, 4 * NBINS)
        launch(self.rt, "blocks.cl", "bin_counts", self.n, np.int32(self.n), self.bins,
               self._counts)
        return read_small(self.rt, np.empty(NBINS, np.int32), self._counts).astype(np.int64)


def bins_for(state: State) -> HostBins | DeviceBins:
    """Time bins (all 0) for ``state``'s particles."""
    if isinstance(state, DeviceState):
        return DeviceBins(state)
    return HostBins(state)
