"""The isotropic distribution function of the Hernquist (1990) sphere, G = M = a = 1,
and the speeds drawn from it (:func:`hernquist_speeds`, which
:func:`hybridtree.ics.spheres.hernquist` uses); dimensionless units of G, M and a.

The bracket B(q) of the closed form loses digits to cancellation at small q, so there it
comes from its power series (the notes below).
"""

from __future__ import annotations

import numpy as np

__all__ = ["hernquist_b", "hernquist_df", "hernquist_speeds"]

# With G = M = a = 1, relative energy ε = Ψ - v²/2 (0 < ε < 1) and q = √ε,
# Hernquist (1990) eq. 17 reads
#
#     f(ε) = B(q) / (8 √2 π³ (1 - q²)^(5/2)),
#     B(q) = 3 arcsin q + q √(1 - q²) (1 - 2q²) (8q⁴ - 8q² - 3).
#
# Differentiating gives B'(q) = 128 q⁴ (1 - q²)^(3/2), and B(0) = 0, so
#
#     B(q) = 128 ∫_0^q x⁴ (1 - x²)^(3/2) dx = 128 q⁵ ∫_0^1 y⁴ (1 - q²y²)^(3/2) dy.
#
# The last integral decreases with q, hence B(q) <= (128/5) q⁵ for 0 <= q <= 1
# (equality as q -> 0; B(1) = 3π/2).  This is the bound the speed sampler uses.

_B_SERIES_Q2 = 0.25  # below this q², B from its power series (the closed form cancels)
_B_SERIES_TERMS = 24  # (q²)^24 <= 4e-15 relative to the leading term


def hernquist_b(q: np.ndarray) -> np.ndarray:
    """The bracket B(q) of Hernquist (1990) eq. 17, 0 <= q <= 1 (dimensionless)."""
    q = np.asarray(q, dtype=np.float64)
    q2 = q * q
    closed = 3.0 * np.arcsin(q) + q * np.sqrt(np.maximum(1.0 - q2, 0.0)) * (1.0 - 2.0 * q2) * (
        8.0 * q2 * q2 - 8.0 * q2 - 3.0
    )
    # B = 128 Σ_k C(3/2, k) (-1)^k q^(5+2k) / (5 + 2k)
    series = np.zeros_like(q)
    coeff = 1.0
    power = q2 * q2 * q
    for k in range(_B_SERIES_TERMS):
        series += coeff * power / (5 + 2 * k)
        coeff *= -(1.5 - k) / (k + 1)
        power = power * q2
    return np.where(q2 < _B_SERIES_Q2, 128.0 * series, closed)


def hernquist_df(eps: np.ndarray) -> np.ndarray:
    """Isotropic distribution function f(ε) of the Hernquist sphere, G = M = a = 1.

    ``eps`` is the relative energy ε = Ψ - v²/2 in units of GM/a (0 for unbound
    and marginally bound orbits, f -> ∞ as ε -> 1); f in units of (GM a)^(-3/2).
    """
    eps = np.clip(np.asarray(eps, dtype=np.float64), 0.0, 1.0)
    with np.errstate(divide="ignore"):
        return hernquist_b(np.sqrt(eps)) / (8.0 * np.sqrt(2.0) * np.pi**3 * (1.0 - eps) ** 2.5)


def hernquist_speeds(rng: np.random.Generator, r: np.ndarray) -> np.ndarray:
    """Speeds drawn from p(v | r) ∝ v² f(Ψ(r) - v²/2), Ψ = 1/(1 + r), G = M = a = 1.

    In w = v²/2 ∈ [0, Ψ] the target is p(w) ∝ √w f(Ψ - w).  With ε = Ψ - w,
    δ = 1 - Ψ = r/(1 + r) and the bound B(q) <= (128/5) q⁵ (see above),

        √w f(ε) = √w ε^(5/2) (B/q⁵) / (8√2 π³ (δ + w)^(5/2))
               <= (128/5) Ψ^(5/2) √w (δ + w)^(-5/2) / (8√2 π³),

    because ε <= Ψ.  The envelope g(w) ∝ √w (δ + w)^(-5/2) has the closed-form
    CDF ∝ (w / (δ + w))^(3/2) on [0, Ψ], so t = w/(δ + w) = Ψ U^(2/3) with U
    uniform, and the draw is accepted with probability
    B(√ε) / ((128/5) Ψ^(5/2)) <= 1.  The acceptance rate is ~0.1-0.2 at
    every radius (ε/Ψ -> 1 near the centre where B/q⁵ drops to 3π/2, and
    B/q⁵ -> 128/5 far out where the envelope's √w shape dominates).
    """
    psi = 1.0 / (1.0 + r)
    delta = r / (1.0 + r)
    w = np.empty_like(psi)
    todo = np.arange(len(psi))
    while len(todo):
        p, d = psi[todo], delta[todo]
        a = rng.uniform(0.0, 1.0, len(todo)) ** (2.0 / 3.0)
        ww = d * p * a / (d + p * (1.0 - a))  # δ t / (1 - t), 1 - t = δ + Ψ (1 - a)
        q = np.sqrt(np.maximum(p - ww, 0.0))
        ok = rng.uniform(0.0, 1.0, len(todo)) * (128.0 / 5.0) * p**2.5 < hernquist_b(q)
        w[todo[ok]] = ww[ok]
        todo = todo[~ok]
    return np.sqrt(2.0 * w)
