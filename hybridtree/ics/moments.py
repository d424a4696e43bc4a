"""Exact sums of block moments (Σm, Σm·x, Σm·v) for the centre-of-mass frame of a
model generated in blocks (:mod:`hybridtree.ics.spheres`, :mod:`hybridtree.ics.galaxy`):
the same bits for any split of the blocks among processes.  Any consistent units."""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np

__all__ = ["MOMENTS", "block_moments", "com_offsets", "exact_column_sums"]

#: columns of a block-moment row: Σm, Σm·x, Σm·y, Σm·z, Σm·vx, Σm·vy, Σm·vz
MOMENTS = 7


def exact_column_sums(rows: np.ndarray) -> np.ndarray:
    """A few rows whose column sums are *exactly* those of ``rows`` (k, c) (any units).

    Each column becomes a non-overlapping floating-point expansion (Shewchuk 1997), at
    most ~40 terms and usually 2-3, padded with zeros.  A process sends these instead
    of all its block moments: :func:`com_offsets` of every process's expansions gives
    the same bits as of all the block moments, while the traffic stays O(processes).
    """
    rows = np.asarray(rows, dtype=np.float64)
    if rows.ndim != 2:
        raise ValueError(f"rows must be 2-D, got shape {rows.shape}")
    if not np.all(np.isfinite(rows)):
        raise ValueError("rows must be finite")
    cols = [_expansion(rows[:, j].tolist()) for j in range(rows.shape[1])]
    out = np.zeros((max((len(c) for c in cols), default=0), rows.shape[1]))
    for j, c in enumerate(cols):
        out[:len(c), j] = c
    return out


def com_offsets(tables: Iterable[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Centre-of-mass position (3,) and velocity (3,) (the model's units) from block
    moment rows (k, 7) = (Σm, Σm·x, Σm·v), given as any number of tables
    (:attr:`Share.sums` or :func:`exact_column_sums` of them).

    Each column is summed exactly and rounded once (``math.fsum``), so the result does
    not depend on how the rows are split into tables or ordered: any number of
    processes gets the same bits.
    """
    rows = [np.asarray(t, dtype=np.float64).reshape(-1, MOMENTS) for t in tables]
    allrows = np.concatenate(rows) if rows else np.empty((0, MOMENTS))
    tot = np.array([math.fsum(allrows[:, j].tolist()) for j in range(MOMENTS)])
    if not tot[0] > 0.0:
        raise ValueError(f"total mass must be > 0, got {tot[0]}")
    return tot[1:4] / tot[0], tot[4:7] / tot[0]


def block_moments(pos: np.ndarray, vel: np.ndarray, m: float | np.ndarray) -> list[float]:
    """Σm, Σm·x, Σm·v of one whole block, of masses ``m`` (one for all, or per
    particle).  Contiguous 1-D numpy sums (pairwise, no BLAS): one fixed order for a
    given block, whichever process sums it."""
    mass = np.full(len(pos), m) if np.ndim(m) == 0 else np.asarray(m, np.float64)
    out = [float(np.sum(mass))]
    for x in (pos, vel):
        out += [float(np.sum(mass * x[:, k])) for k in range(3)]
    return out


def _expansion(values: list[float]) -> list[float]:
    """Non-overlapping partials whose exact sum is the exact sum of ``values``
    (Shewchuk's grow-expansion, as in the ``msum`` recipe behind ``math.fsum``)."""
    partials: list[float] = []
    for x in values:
        i = 0
        for y in partials:
            if abs(x) < abs(y):
                x, y = y, x
            hi = x + y
            lo = y - (hi - x)
            if lo:
                partials[i] = lo
                i += 1
            x = hi
        partials[i:] = [x]
    return partials
