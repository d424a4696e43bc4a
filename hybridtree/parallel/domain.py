"""Sampling domain decomposition (as in the hybrid tree paper and FDPS) and the exchange.

The K processes own nx × ny × nz cuboids: slabs along x, each slab cut along y, each
column cut along z.  Every process sends a random sample of its particles to the root,
the number of samples proportional to its measured cost (so that time, not only the
particle count, is balanced); the root cuts the samples into equal-count pieces and
broadcasts the boundaries; particles then move to their owners with one Alltoallv.
Lengths in the caller's units; the outermost boundaries are ±inf, so every point of
space has exactly one owner.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .comm import Comm

__all__ = ["Domains", "grid_shape", "decompose", "exchange", "PARTICLE_DTYPE"]

#: One particle as it travels between processes (exact: bytes, IDs as uint64).
PARTICLE_DTYPE = np.dtype([("pos", "f8", 3), ("vel", "f8", 3), ("mass", "f8"),
                           ("id", "u8")])


def grid_shape(k: int) -> tuple[int, int, int]:
    """The most cubic factorisation nx ≥ ny ≥ nz of ``k`` (smallest nx, then ny)."""
    if k < 1:
        raise ValueError(f"need at least one process, got {k}")
    best = None
    for nx in range(1, k + 1):
        if k % nx:
            continue
        for ny in range(1, nx + 1):
            if (k // nx) % ny:
                continue
            nz = k // nx // ny
            if nz > ny:
                continue
            cand = (nx, ny, nz)
            if best is None or (nx, ny) < (best[0], best[1]):
                best = cand
    return best


@dataclass(frozen=True)
class Domains:
    """Cuboid boundaries: x (nx+1,), y (nx, ny+1), z (nx, ny, nz+1); outer ones ±inf."""

    shape: tuple[int, int, int]
    x: np.ndarray
    y: np.ndarray
    z: np.ndarray

    def owner(self, pos: np.ndarray) -> np.ndarray:
        """Rank that owns each position (rank = (ix * ny + iy) * nz + iz)."""
        nx, ny, nz = self.shape
        ix = np.clip(np.searchsorted(self.x[1:-1], pos[:, 0], side="right"), 0, nx - 1)
        iy = np.empty(len(pos), np.int64)
        iz = np.empty(len(pos), np.int64)
        for i in range(nx):
            s = ix == i
            iy[s] = np.searchsorted(self.y[i, 1:-1], pos[s, 1], side="right")
            for j in range(ny):
                t = s & (iy == j)
                iz[t] = np.searchsorted(self.z[i, j, 1:-1], pos[t, 2], side="right")
        return (ix * ny + iy) * nz + iz

    def box(self, rank: int) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) corners of ``rank``'s cuboid (may be infinite)."""
        nx, ny, nz = self.shape
        i, rest = divmod(rank, ny * nz)
        j, k = divmod(rest, nz)
        lo = np.array([self.x[i], self.y[i, j], self.z[i, j, k]])
        hi = np.array([self.x[i + 1], self.y[i, j + 1], self.z[i, j, k + 1]])
        return lo, hi


def _cuts(values: np.ndarray, n: int) -> np.ndarray:
    """n + 1 boundaries that cut sorted ``values`` into n equal-count pieces."""
    out = np.empty(n + 1)
    out[0], out[-1] = -np.inf, np.inf
    m = len(values)
    for i in range(1, n):
        a = (i * m) // n
        if m == 0:
            out[i] = 0.0
        elif a <= 0:
            out[i] = values[0]
        elif a >= m:
            out[i] = values[-1]
        else:
            out[i] = 0.5 * (values[a - 1] + values[a])
    return out


def cut_samples(samples: np.ndarray, shape: tuple[int, int, int]) -> Domains:
    """Boundaries that give every cuboid the same number of ``samples`` (m, 3)."""
    nx, ny, nz = shape
    s = samples[np.argsort(samples[:, 0], kind="stable")]
    x = _cuts(s[:, 0], nx)
    y = np.empty((nx, ny + 1))
    z = np.empty((nx, ny, nz + 1))
    bx = np.searchsorted(s[:, 0], x[1:-1], side="left")
    for i, slab in enumerate(np.split(s, bx)):
        slab = slab[np.argsort(slab[:, 1], kind="stable")]
        y[i] = _cuts(slab[:, 1], ny)
        by = np.searchsorted(slab[:, 1], y[i, 1:-1], side="left")
        for j, col in enumerate(np.split(slab, by)):
            z[i, j] = _cuts(np.sort(col[:, 2]), nz)
    return Domains(shape, x, y, z)


def decompose(comm: Comm, pos: np.ndarray | int, cost: float,
              shape: tuple[int, int, int] | None = None, samples_per_process: int = 2000,
              rng: np.random.Generator | None = None,
              take: Callable[[np.ndarray], np.ndarray] | None = None) -> Domains:
    """New boundaries from a cost-weighted sample of every process's particles.

    ``pos``: this process's positions (n, 3), or its particle count n with ``take``
    giving the positions (m, 3) of the particles at sorted indices (a device state's
    gather).  ``cost``: this process's work in the last step (its interaction count;
    its particle count before the first step); the sample counts are proportional to
    it.  ``rng``: the sampling stream; a run passes the same generator every step, so
    that new particles are drawn each time (default: a fresh stream per call).
    """
    shape = shape or grid_shape(comm.size)
    if int(np.prod(shape)) != comm.size:
        raise ValueError(f"domain grid {shape} does not match {comm.size} processes")
    rng = rng or np.random.default_rng(1234 + comm.rank)
    n = pos if isinstance(pos, (int, np.integer)) else len(pos)
    costs = comm.allgather_float(float(max(cost, 0.0)))
    total = float(costs.sum())
    share = costs[comm.rank] / total if total > 0 else 1.0 / comm.size
    want = int(round(samples_per_process * comm.size * share))
    idx = np.sort(rng.choice(n, size=min(want, n), replace=False)) if n else \
        np.empty(0, np.int64)
    mine = take(idx) if take is not None else pos[idx]
    samples = comm.gather_rows(np.asarray(mine).reshape(-1, 3))
    domains = cut_samples(samples, shape) if comm.rank == 0 else None
    return comm.bcast(domains)


def exchange(comm: Comm, particles: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """Move structured ``particles`` (PARTICLE_DTYPE) to their ``owner`` ranks."""
    order = np.argsort(owner, kind="stable")
    counts = np.bincount(owner, minlength=comm.size)
    return comm.alltoallv(particles[order], counts)
