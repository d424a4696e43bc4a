"""63-bit Morton keys: 21 bits per axis inside a bounding cube."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...particles import bounds

BITS = 21                      # bits per axis; 3 * 21 = 63 bits per key
MAX_LEVEL = BITS               # deepest level that the keys resolve
_SCALE = float(1 << BITS)


@dataclass(frozen=True)
class Cube:
    """The bounding cube of a particle set (length units of the caller)."""

    corner: np.ndarray   # (3,) float64, the lower corner
    side: float          # side length, > 0

    @property
    def centre(self) -> np.ndarray:
        return self.corner + 0.5 * self.side


def bounding_cube(pos: np.ndarray, power_of_two: bool = False) -> Cube:
    """Smallest axis-aligned cube (slightly enlarged) holding every position, centred on
    their extent; ``power_of_two``: its side rounded up to a power of two.

    A set with zero extent (one particle, or all at one point) gets side 1 so that
    the key arithmetic stays finite.
    """
    return extent_cube(*bounds(pos), power_of_two)


def extent_cube(lo: np.ndarray, hi: np.ndarray, power_of_two: bool = False) -> Cube:
    """The cube of :func:`bounding_cube` from the extent's corners ``lo`` and ``hi`` (3,)."""
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    side = float(np.max(hi - lo))
    centre = 0.5 * (lo + hi)
    if power_of_two:        # exact, as cl/prepare.cl extent_cube (by ilogb there)
        m, e = np.frexp(side * (1.0 + 1e-6))
        side = float(np.ldexp(1.0, int(e) - 1 if m == 0.5 else int(e))) if side > 0.0 else 1.0
    else:
        side = (side if side > 0.0 else 1.0) * (1.0 + 1e-6)
    return Cube(corner=centre - 0.5 * side, side=side)


def integer_coords(pos: np.ndarray, cube: Cube) -> np.ndarray:
    """(N, 3) uint64 cell coordinates at the deepest level, clipped into the cube."""
    u = (pos - cube.corner) * (_SCALE / cube.side)
    u = np.clip(np.floor(u), 0.0, _SCALE - 1.0)
    return u.astype(np.uint64)


def _spread(v: np.ndarray) -> np.ndarray:
    """Insert two zero bits between each of the low 21 bits."""
    v = v & np.uint64(0x1FFFFF)
    v = (v | (v << np.uint64(32))) & np.uint64(0x1F00000000FFFF)
    v = (v | (v << np.uint64(16))) & np.uint64(0x1F0000FF0000FF)
    v = (v | (v << np.uint64(8))) & np.uint64(0x100F00F00F00F00F)
    v = (v | (v << np.uint64(4))) & np.uint64(0x10C30C30C30C30C3)
    v = (v | (v << np.uint64(2))) & np.uint64(0x1249249249249249)
    return v


def _compact(v: np.ndarray) -> np.ndarray:
    """Inverse of :func:`_spread`: every third bit, compacted."""
    v = v & np.uint64(0x1249249249249249)
    v = (v | (v >> np.uint64(2))) & np.uint64(0x10C30C30C30C30C3)
    v = (v | (v >> np.uint64(4))) & np.uint64(0x100F00F00F00F00F)
    v = (v | (v >> np.uint64(8))) & np.uint64(0x1F0000FF0000FF)
    v = (v | (v >> np.uint64(16))) & np.uint64(0x1F00000000FFFF)
    v = (v | (v >> np.uint64(32))) & np.uint64(0x1FFFFF)
    return v


def key_coords(keys: np.ndarray) -> np.ndarray:
    """(N, 3) int64 integer coordinates of Morton keys (inverse of :func:`morton_keys`)."""
    return np.stack([_compact(keys >> np.uint64(2)), _compact(keys >> np.uint64(1)),
                     _compact(keys)], axis=1).astype(np.int64)


def morton_keys(icoords: np.ndarray) -> np.ndarray:
    """Interleave (x, y, z) integer coordinates into 63-bit keys (x most significant)."""
    return (_spread(icoords[:, 0]) << np.uint64(2)) | (_spread(icoords[:, 1]) << np.uint64(1)) \
        | _spread(icoords[:, 2])
