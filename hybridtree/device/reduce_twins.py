"""The numpy twins of :mod:`.reduce`'s device reductions (see its docstring): each sum in
the device's fixed order, so a host run and a device run agree bit for bit.  Units:
internal (G = 1); masses, lengths and velocities as the caller's arrays."""

from __future__ import annotations

import numpy as np

from .multisection import TRIALS, multisect

__all__ = ["BLOCK", "host_block_sum", "host_lagrangian_radii", "host_moments",
           "host_net_acceleration", "moments_of_sums", "net_of_sums"]

#: Terms per sequential block (a build-time define of cl/reduce.cl).
BLOCK = 64


def host_block_sum(terms: np.ndarray) -> np.ndarray:
    """Column sums (K,) of ``terms`` (n, K) float64 in the device's fixed order."""
    rows = np.asarray(terms, np.float64)
    if rows.ndim == 1:
        rows = rows[:, None]
    if len(rows) == 0:
        return np.zeros(rows.shape[1])
    while True:       # level 1 always runs, as on the device (it turns -0.0 into +0.0)
        m, k = rows.shape
        pad = np.zeros((-(-m // BLOCK) * BLOCK, k))
        pad[:m] = rows
        blocks = pad.reshape(-1, BLOCK, k)
        # s = x0, s = s + x1, ...: the rounding sequence of np.cumsum(blocks, axis=1)[:, -1]
        # (tested), without its (m, BLOCK, K) array: 3-10x faster at n = 2^20
        rows = blocks[:, 0, :].copy()
        for i in range(1, BLOCK):
            rows += blocks[:, i, :]
        if len(rows) == 1:
            return rows[0]


def net_of_sums(s: np.ndarray) -> np.ndarray:
    """Σ m a / Σ m (3,) of the sums (Σ m a_x, Σ m a_y, Σ m a_z, Σ m); zeros where Σ m = 0."""
    return s[:3] / s[3] if s[3] != 0 else np.zeros(3)


def host_net_acceleration(mass: np.ndarray, acc: np.ndarray) -> np.ndarray:
    """Σ m a / Σ m (3,) (zeros when Σ m = 0): :meth:`Reducer.net_acceleration`'s bits."""
    terms = np.empty((len(mass), 4))
    terms[:, :3] = mass[:, None] * acc
    terms[:, 3] = mass
    return net_of_sums(host_block_sum(terms))


def moments_of_sums(s: np.ndarray) -> dict:
    """:meth:`.reduce.Reducer.moments`'s keys from the 13 sums of cl/reduce.cl moment_t."""
    com = s[1:4] / s[0] if s[0] != 0 else np.zeros(3)
    return {"mass": float(s[0]), "com": com, "kinetic": float(s[4]), "potential": float(s[5]),
            "momentum": s[6:9].copy(), "angular_momentum": s[9:12].copy(),
            "inertia": float(s[12])}


def host_moments(pos: np.ndarray, vel: np.ndarray, mass: np.ndarray,
                 pot: np.ndarray | None = None) -> dict:
    """:meth:`Reducer.moments` on the host, the same bits."""
    x, y, z = pos.T
    vx, vy, vz = vel.T
    h = 0.5 * mass
    t = np.empty((len(mass), 13))
    t[:, 0] = mass
    t[:, 1:4] = mass[:, None] * pos
    t[:, 4] = h * ((vx * vx + vy * vy) + vz * vz)
    t[:, 5] = h * pot if pot is not None else 0.0
    t[:, 6:9] = mass[:, None] * vel
    t[:, 9] = mass * (y * vz - z * vy)
    t[:, 10] = mass * (z * vx - x * vz)
    t[:, 11] = mass * (x * vy - y * vx)
    t[:, 12] = mass * ((x * x + y * y) + z * z)
    return moments_of_sums(host_block_sum(t))


def host_lagrangian_radii(pos: np.ndarray, mass: np.ndarray, centre: np.ndarray,
                          fractions=(0.1, 0.5, 0.9), total_mass: float | None = None
                          ) -> list[float]:
    """:meth:`Reducer.lagrangian_radii` on the host, the same bits.  Slow (n x F x
    :data:`TRIALS` terms a pass for F fractions: 6.6 s at n = 2^20 on 2 cores), so the
    twin for tests; a host run sorts (:func:`hybridtree.analysis.diagnostics.lagrangian_radii`)."""
    d = pos - np.asarray(centre, np.float64)
    r = np.sqrt((d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1]) + d[:, 2] * d[:, 2])
    total = float(host_block_sum(mass[:, None])[0]) if total_mass is None else total_mass
    rmax = float(np.fmax.reduce(r, initial=-np.inf))

    def enclosed(radii: np.ndarray) -> np.ndarray:
        terms = np.where(r[:, None] <= radii.reshape(-1), mass[:, None], 0.0)
        return host_block_sum(terms).reshape(radii.shape)

    return multisect(fractions, total, rmax, enclosed, TRIALS)
