"""Initial conditions.  N-body (Hénon) units: G = M = 1, E = -1/4."""

from __future__ import annotations

import numpy as np


def plummer(n: int, seed: int = 0, r_max: float = 100.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Plummer sphere (Aarseth, Hénon & Wielen 1974) of ``n`` equal masses.

    Returns (positions (n, 3), velocities (n, 3), masses (n,)) in Hénon units
    (scale radius 3π/16, total mass 1), centre of mass at rest at the origin.
    Radii beyond ``r_max`` Plummer radii are redrawn.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    rng = np.random.default_rng(seed)
    scale = 3.0 * np.pi / 16.0
    r = np.empty(n)
    todo = np.arange(n)
    while len(todo):
        u = rng.uniform(0.0, 1.0, len(todo))
        rr = 1.0 / np.sqrt(np.maximum(u, 1e-300) ** (-2.0 / 3.0) - 1.0)
        ok = rr <= r_max
        r[todo[ok]] = rr[ok]
        todo = todo[~ok]
    pos = r[:, None] * _isotropic(rng, n)
    # speed by von Neumann rejection from g(q) = q^2 (1 - q^2)^(7/2), q = v / v_esc
    q = np.empty(n)
    todo = np.arange(n)
    while len(todo):
        x1 = rng.uniform(0.0, 1.0, len(todo))
        x2 = rng.uniform(0.0, 0.1, len(todo))
        ok = x2 < x1 * x1 * (1.0 - x1 * x1) ** 3.5
        q[todo[ok]] = x1[ok]
        todo = todo[~ok]
    v = q * np.sqrt(2.0) * (1.0 + r * r) ** -0.25
    vel = v[:, None] * _isotropic(rng, n)
    pos *= scale
    vel /= np.sqrt(scale)
    mass = np.full(n, 1.0 / n)
    pos -= np.average(pos, axis=0, weights=mass)
    vel -= np.average(vel, axis=0, weights=mass)
    return pos, vel, mass


def _isotropic(rng: np.random.Generator, n: int) -> np.ndarray:
    z = rng.uniform(-1.0, 1.0, n)
    phi = rng.uniform(0.0, 2.0 * np.pi, n)
    s = np.sqrt(1.0 - z * z)
    return np.stack([s * np.cos(phi), s * np.sin(phi), z], axis=1)
