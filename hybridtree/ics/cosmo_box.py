"""Cosmological initial conditions in a periodic box: every point of the n_grid³ grid of
:mod:`hybridtree.ics.cosmological` (the same Gaussian field, the same seeds, the same
Zel'dovich or 2LPT displacements), the cube itself being the box.

Conventions (internal units, G = 1): point (i, j, l) sits at the Lagrangian position
q = ((i, j, l) + 1/2) d, d = box / n, so the box is [0, box)³ (the sphere's grid is the
same one moved by box/2); its ID is 1 + (i n + j) n + l.  Positions are comoving,
x = q + D ψ1 + D2 ψ2 wrapped into [0, box); velocities are the canonical momentum per
unit mass of the comoving integration (:mod:`hybridtree.integrate.comoving`),
p = a² dx/dt = a² H (f D ψ1 + f2 D2 ψ2), which GADGET writes as p / a^(3/2).

Determinism: as the sphere's, any split [lo, hi) of [0, n³) gives the bits of the whole
(:func:`cosmo_box_share`): every process computes the field, keeps its rows.  A run of
one process with its state on the device takes the box as :class:`BoxRows`: the fields
computed once (:func:`hybridtree.ics.lpt_fields.lpt_fields`, about 48 bytes a grid point
at the peak for 2LPT in float64) and the particles made and uploaded a few planes at a
time, never all on the host; the same bits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable

import numpy as np

from ..cosmo.background import Cosmology
from ..particles import Particles, bounds, wrap
from .cosmological import displaced_grid
from .lpt_fields import FIELDS, LptFields, check_seed, lpt_fields
from .threads import draw_threads, ordered_map

__all__ = ["BoxRows", "box_rows", "cosmo_box_share"]

Arrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]

#: rows a :meth:`BoxRows.fill` makes and uploads at a time, rounded down to whole planes
#: (at least one plane: n_grid² rows): about 200 bytes a row on the host while a chunk is
#: made (ψ's, x, p, masses, IDs, the upload's copies), 13 MB at this size, 200 MB for a
#: plane of 1024²
ROWS = 1 << 16
#: host bytes a row of a chunk takes while it is made (measured about 200)
CHUNK_ROW_BYTES = 200
#: the chunks made ahead by :meth:`BoxRows.fill`'s threads take at most this many bytes
#: per grid point (at least one chunk at a time): 4 B, so that at 1024³ ten threads
#: make planes of 2^20 rows at once
AHEAD_BYTES_PER_POINT = 4


def cosmo_box_share(n_grid: int, box: float, a_start: float, cosmo: Cosmology, seed: int,
                    lo: int, hi: int, order: int = 1, workers: int = -1,
                    fields: str = "float64") -> Arrays:
    """Grid points lo .. hi - 1 (linear index order) of a periodic box of side ``box``
    (comoving, internal length) at scale factor ``a_start``: (x (m, 3) comoving in
    [0, box), p (m, 3) canonical momentum a² dx/dt, mass (m,) = Ω_m ρ_crit,0 d³,
    ids (m,) uint64).  ``order``: 1 Zel'dovich, 2 2LPT; ``fields``: the displacement
    fields' precision (memory.ics_fields: "float64", or "float32" for half their memory)."""
    n, box, a, lo, hi = _check(n_grid, box, a_start, order, lo, hi, fields)
    f = lpt_fields(n, box, cosmo.power, check_seed(seed), order, workers, fields)
    out = _rows(f, lo, hi, box, a, cosmo)
    f.release()
    return out


def _rows(f: LptFields, lo: int, hi: int, box: float, a: float, cosmo: Cosmology,
          workers: int | None = None) -> Arrays:
    """The particles of grid points lo .. hi - 1 from the fields ``f`` (element by
    element: the bits do not depend on which rows are made together, nor on the FFT
    threads ``workers``, None: the fields')."""
    n = f.n
    idx = np.arange(lo, hi, dtype=np.int64)
    psi1, psi2 = f.rows(lo, hi, workers)
    x, u = displaced_grid(idx, psi1, psi2, n, box, a, cosmo)    # q about the centre
    del psi1, psi2
    mass = np.full(len(idx), cosmo.particle_mass(box / n))
    return wrap(x + 0.5 * box, box), a * u, mass, (idx + 1).astype(np.uint64)


def _check(n_grid, box, a_start, order, lo, hi, fields) -> tuple[int, float, float, int, int]:
    n, box, a, lo, hi = int(n_grid), float(box), float(a_start), int(lo), int(hi)
    if not (n >= 2 and 0 < box < np.inf and 0 < a < np.inf):
        raise ValueError(f"need n_grid >= 2, box > 0 and a_start > 0, got {n_grid!r}, "
                         f"{box!r}, {a_start!r}")
    if order not in (1, 2):
        raise ValueError(f"order must be 1 or 2, got {order!r}")
    if not 0 <= lo <= hi <= n ** 3:
        raise ValueError(f"need 0 <= lo <= hi <= n_grid^3 = {n ** 3}, got {lo}, {hi}")
    if fields not in FIELDS:
        raise ValueError(f"fields must be one of {', '.join(FIELDS)}, got {fields!r}")
    return n, box, a, lo, hi


@dataclass
class BoxRows:
    """The n_grid³ particles of :func:`cosmo_box_share` (the same arguments, all rows),
    made only when a run's state takes them (:class:`hybridtree.state.Rows`): plane by
    plane into a device state's rows (:meth:`fill`) or whole (:meth:`particles`).
    ``check(p)``: called with every chunk (raises for bad values).  After either,
    ``bounds`` holds (least position (3,), largest position (3,), total mass)."""

    n_grid: int
    box: float
    a_start: float
    cosmo: Cosmology
    seed: int
    order: int
    check: Callable[[Particles], None]
    fields: str = "float64"
    workers: int = -1
    rows: int | None = None      # None: ROWS
    threads: int | None = None   # threads making chunks (None: as AHEAD_BYTES_PER_POINT allows)
    bounds: tuple[np.ndarray, np.ndarray, float] | None = field(default=None, repr=False)
    acc: None = None
    pot: None = None

    def __len__(self) -> int:
        return self.n_grid ** 3

    @property
    def max_id(self) -> int:
        return self.n_grid ** 3

    @property
    def ids(self) -> range:
        """IDs 1 .. n_grid³ (never made whole)."""
        return range(1, self.n_grid ** 3 + 1)

    @property
    def uniform_mass(self) -> float:
        return float(self.cosmo.particle_mass(self.box / self.n_grid))

    def particles(self, vel32: bool = False) -> Particles:
        """All the particles on the host (``vel32`` changes nothing: no shift follows
        that a float32 state's rounding would have to precede)."""
        n3 = self.n_grid ** 3
        p = Particles(*cosmo_box_share(self.n_grid, self.box, self.a_start, self.cosmo,
                                       self.seed, 0, n3, self.order, self.workers,
                                       self.fields))
        self.check(p)
        self.bounds = (*bounds(p.pos), self._total())
        return p

    def fill(self, state) -> None:
        """The particles into ``state``'s rows 0 .. n³ - 1 (a
        :class:`hybridtree.ics.rows.RowTarget` of n³ rows), :attr:`rows` (default
        :data:`ROWS`; whole planes) at a time; the fields are freed before this returns."""
        n = self.n_grid
        n3, nn = n ** 3, n * n
        assert state.n == n3, (state.n, n3)
        _check(n, self.box, self.a_start, self.order, 0, n3, self.fields)
        f = lpt_fields(n, float(self.box), self.cosmo.power, check_seed(self.seed),
                       self.order, self.workers, self.fields)
        step = max(nn, (self.rows or ROWS) // nn * nn)
        # chunks made by threads (numpy's element-wise work and the FFTs release the GIL),
        # as many ahead as AHEAD_BYTES_PER_POINT allows; uploaded in order
        threads = self.threads or max(1, min(draw_threads(), AHEAD_BYTES_PER_POINT * n3
                                             // (2 * CHUNK_ROW_BYTES * step)))
        workers = 1 if threads > 1 else self.workers

        def make(lo: int) -> Particles:
            return Particles(*_rows(f, lo, min(n3, lo + step), float(self.box),
                                    float(self.a_start), self.cosmo, workers))

        lo_pos, hi_pos = np.full(3, np.inf), np.full(3, -np.inf)
        starts = range(0, n3, step)
        made = ordered_map(make, starts, threads)
        try:
            for lo in starts:
                # (not zip: its reused tuple would keep the last chunk while the next is made)
                p = next(made)
                self.check(p)
                low, high = bounds(p.pos)
                lo_pos, hi_pos = np.minimum(lo_pos, low), np.maximum(hi_pos, high)
                state.upload_rows(lo, p)
                del p
        finally:
            made.close()            # a chunk refused: no thread goes on making more
            f.release()
        self.bounds = (lo_pos, hi_pos, self._total())

    def _total(self) -> float:
        # n³ equal masses: their sum rounded once (only the range check reads it)
        return float(Fraction(self.uniform_mass) * self.n_grid ** 3)


def box_rows(n_grid: int, box: float, a_start: float, cosmo: Cosmology, seed: int,
             order: int, check: Callable[[Particles], None], fields: str = "float64"
             ) -> BoxRows:
    """:class:`BoxRows` of these arguments (checked now: ValueError)."""
    n3 = int(n_grid) ** 3 if isinstance(n_grid, int) else 0
    _check(n_grid, box, a_start, order, 0, n3, fields)
    return BoxRows(int(n_grid), float(box), float(a_start), cosmo, check_seed(seed), order,
                   check, fields)
