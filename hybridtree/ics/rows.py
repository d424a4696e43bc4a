"""A generated sphere (:mod:`hybridtree.ics.spheres`) that is drawn only when a run's
state takes it: block by block straight into a device state's rows
(:meth:`ModelRows.fill`), so that the host never holds the whole model, or whole
(:meth:`ModelRows.particles`) for a state on the host.  Either way the particles are the
bits :func:`hybridtree.ics.spheres.generate_share` and the centre-of-mass shift of
:func:`hybridtree.run.setup.initial_conditions` give (the same blocks, streams and
exact moment sums).  Internal units (G = 1, total mass 1)."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Protocol

import numpy as np

from ..particles import Particles, all_finite, bounds
from .moments import MOMENTS, block_moments, com_offsets, exact_column_sums
from .spheres import BLOCK, BlockDrawer, block_drawer, generate_share
from .threads import ordered_map

__all__ = ["ROWS", "ModelRows", "RowTarget", "model_rows"]

#: rows (a whole number of blocks) gathered on the host before one upload: 2^18 rows,
#: about 110 bytes a row of arrays at once (30 MB, whatever N: 6 MB per copy of a
#: column); the drawing threads hold at most two blocks each (about 7 MB of arrays a
#: block) besides
ROWS = 4 * BLOCK


class RowTarget(Protocol):
    """Where :meth:`ModelRows.fill` puts the particles (a
    :class:`hybridtree.state.device.DeviceState` made for ``n`` rows)."""

    n: int

    def upload_rows(self, lo: int, p: Particles, columns: tuple[str, ...] = ...) -> None: ...

    def shift_rows(self, dpos: np.ndarray, dvel: np.ndarray) -> None: ...

    def download_rows(self, lo: int, hi: int) -> Particles: ...


@dataclass
class ModelRows:
    """The ``n`` particles (IDs 1 .. n) of generated ``model`` with seed ``seed`` and
    parameters ``params`` (:func:`hybridtree.ics.spheres.generate_share`'s), not yet
    drawn.  ``check(p)``: called with every chunk of rows in the centre-of-mass frame
    (raises for bad values).  After a fill (or :meth:`particles`) ``bounds`` holds
    (least position (3,), largest position (3,), total mass) of the particles.

    Like :class:`hybridtree.particles.Particles` it has a length, no stored
    acceleration or potential (``acc``, ``pot`` None) and IDs (:attr:`ids`, a range)."""

    draw: BlockDrawer
    check: Callable[[Particles], None]
    rows: int = ROWS
    bounds: tuple[np.ndarray, np.ndarray, float] | None = field(default=None, repr=False)
    acc: None = None
    pot: None = None

    @property
    def n(self) -> int:
        return self.draw.n

    def __len__(self) -> int:
        return self.draw.n

    @property
    def uniform_mass(self) -> float:
        """Every particle's mass (1 / n, as :meth:`fill` and :meth:`particles` draw it)."""
        return 1.0 / self.n

    @property
    def max_id(self) -> int:
        """The largest ID (n)."""
        return self.draw.n

    @property
    def ids(self) -> range:
        """IDs 1 .. n, as a range (``np.arange(1, n + 1, dtype=np.uint64)`` holds them
        in 8 bytes a particle)."""
        return range(1, self.n + 1)

    def particles(self, vel32: bool = False) -> Particles:
        """All the particles on the host, centre of mass at rest at the origin (float64:
        65 bytes a particle), as :func:`hybridtree.run.setup.initial_conditions` gives
        them on one process.  ``vel32``: the drawn velocities rounded to float32 before
        the shift, as :meth:`fill` uploads them into a state of float32 velocities (whose
        shift rounds the float64 difference once more: the state's rounding of these)."""
        d = self.draw
        share = generate_share(d.model, d.n, 0, d.n, d.seed, **d.params)
        x_cm, v_cm = com_offsets([exact_column_sums(share.sums)])
        share.pos -= x_cm
        if vel32:
            share.vel = share.vel.astype(np.float32).astype(np.float64)
        share.vel -= v_cm
        p = Particles(share.pos, share.vel, share.mass, share.ids)
        self.check(p)
        self.bounds = (*bounds(p.pos), float(p.mass.sum()))
        return p

    def fill(self, state: RowTarget, threads: int | None = None) -> None:
        """Draw the particles into ``state``'s rows 0 .. n - 1: the blocks (drawn by
        ``threads`` threads, default :func:`hybridtree.ics.threads.draw_threads`, each
        with its moments, least and largest values summed in the thread) go up as drawn,
        ROWS rows at a time; then the state moves them to the centre-of-mass frame on the
        device (:meth:`shift_rows`: the float64 subtraction of the whole model's path,
        the same bits).  Host memory: a chunk and the drawing threads' blocks, not the
        model.  The bounds after the shift are the bounds before it, shifted (a rounded
        subtraction is monotonic), so no row comes back."""
        n, m = self.n, 1.0 / self.n
        assert state.n == n, (state.n, n)
        count = -(-n // BLOCK)
        sums = np.empty((count, MOMENTS))
        lo_pos, hi_pos = np.full(3, np.inf), np.full(3, -np.inf)
        lo_vel, hi_vel = np.full(3, np.inf), np.full(3, -np.inf)

        def block(b: int) -> tuple:
            bp, bv = self.draw(b)
            finite = all_finite(bp) and all_finite(bv)
            ext = (*bounds(bp), *bounds(bv))
            return bp, bv, block_moments(bp, bv, m), finite, ext

        rows = max(BLOCK, self.rows // BLOCK * BLOCK)
        chunk = _Chunk(rows, m)
        for b, (bp, bv, moments, finite, ext) in zip(range(count),
                                                     ordered_map(block, range(count), threads)):
            if not finite:          # never for these models: the check names the value
                self.check(Particles(bp, bv, np.full(len(bp), m),
                                     np.arange(b * BLOCK + 1, b * BLOCK + len(bp) + 1,
                                               dtype=np.uint64)))
            sums[b] = moments
            lo_pos, hi_pos = np.minimum(lo_pos, ext[0]), np.maximum(hi_pos, ext[1])
            lo_vel, hi_vel = np.minimum(lo_vel, ext[2]), np.maximum(hi_vel, ext[3])
            if chunk.add(b * BLOCK, bp, bv):
                state.upload_rows(chunk.lo, chunk.particles())
                chunk.clear()
        if chunk.used:
            state.upload_rows(chunk.lo, chunk.particles())
        del chunk
        x_cm, v_cm = com_offsets([exact_column_sums(sums)])
        state.shift_rows(x_cm, v_cm)
        lo_pos, hi_pos = lo_pos - x_cm, hi_pos - x_cm
        if not all(np.isfinite(v).all() for v in (lo_pos, hi_pos, lo_vel - v_cm,
                                                  hi_vel - v_cm)):
            for a in range(0, n, rows):        # shifted out of range: name the value
                self.check(state.download_rows(a, min(n, a + rows)))
        # n equal masses 1/n: their sum rounded once (the whole array's pairwise sum may
        # differ from it in the last bit; only the range check reads it)
        self.bounds = (lo_pos, hi_pos, float(Fraction(m) * n))


class _Chunk:
    """Consecutive blocks gathered on the host for one upload."""

    def __init__(self, rows: int, m: float) -> None:
        self.pos, self.vel = np.empty((rows, 3)), np.empty((rows, 3))
        self.m, self.lo, self.used = m, 0, 0

    def add(self, start: int, pos: np.ndarray, vel: np.ndarray) -> bool:
        """Append a block of first row ``start``; whether the chunk is full."""
        if not self.used:
            self.lo = start
        k = len(pos)
        self.pos[self.used:self.used + k] = pos
        self.vel[self.used:self.used + k] = vel
        self.used += k
        return self.used == len(self.pos)

    def particles(self) -> Particles:
        k = self.used
        return Particles(self.pos[:k], self.vel[:k], np.full(k, self.m),
                         np.arange(self.lo + 1, self.lo + k + 1, dtype=np.uint64))

    def clear(self) -> None:
        self.used = 0


def model_rows(model: str, n: int, seed: int, check: Callable[[Particles], None],
               **params: Any) -> ModelRows:
    """:class:`ModelRows` of ``model`` (checked now, before anything is drawn: ValueError
    or :class:`hybridtree.ics.profiles.ModelError`, as
    :func:`hybridtree.ics.spheres.generate_share`)."""
    return ModelRows(block_drawer(model, n, seed, **params), check)
