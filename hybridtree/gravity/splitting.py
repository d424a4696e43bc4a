"""Hard/soft force splitting of the hybrid tree (same formulas as cl/treewalk.cl).

A pair at (unsoftened) distance r with the full softened force F(r) = m r/(r² + ε²)^{3/2}
is split into a soft part W(r)·F(r) and a hard part (1 − W(r))·F(r), which add up to F
exactly.  The changeover W rises from 0 at r ≤ r_in to 1 at r ≥ r_out; with
y = clamp((r − r_in)/(r_out − r_in), 0, 1):

- ``"dll"`` (Duncan, Levison & Lee 1998): W = y² / (2y² − 2y + 1)  (C¹ at both ends);
- ``"poly7"``: W = 35y⁴ − 84y⁵ + 70y⁶ − 20y⁷  (C³: first three derivatives vanish).

Potential split (so that the energy is well defined): the soft potential is the
integral of the soft force, φ_soft(r) = −∫_r^∞ W(s) F(s) ds, and φ_hard = φ − φ_soft.
Both parts are conservative, the hybrid Hamiltonian is H = K + Φ_hard + Φ_soft = K + Φ,
so the energy of a hybrid run is computed from the full potential φ, which the soft
walk returns (the kernels never weight the potential).  :func:`soft_potential`
evaluates φ_soft by quadrature on the host for tests and analysis.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

__all__ = ["CHANGEOVERS", "Changeover", "soft_potential"]

CHANGEOVERS = MappingProxyType({"dll": 1, "poly7": 2})  # value = the kernel's CHANGEOVER define


@dataclass(frozen=True)
class Changeover:
    """W(r) between ``r_in`` and ``r_out`` (internal length units), of a given shape."""

    r_in: float
    r_out: float
    shape: str = "dll"

    def __post_init__(self):
        if self.shape not in CHANGEOVERS:
            raise ValueError(f"changeover must be one of {', '.join(CHANGEOVERS)}, "
                             f"got {self.shape!r}")
        if not (0.0 <= self.r_in < self.r_out and np.isfinite(self.r_out)):
            raise ValueError(f"need 0 <= r_in < r_out, got r_in = {self.r_in}, "
                             f"r_out = {self.r_out}")

    def y(self, r):
        return np.clip((np.asarray(r, np.float64) - self.r_in) / (self.r_out - self.r_in),
                       0.0, 1.0)

    def w(self, r):
        """W(r): the soft fraction of the pair force."""
        y = self.y(r)
        if self.shape == "dll":
            return y * y / (2 * y * y - 2 * y + 1)
        return y ** 4 * (35 + y * (-84 + y * (70 - 20 * y)))

    def defines(self, split: int) -> dict[str, object]:
        """Kernel defines of a split walk (float32 literals): ``split`` 1 the soft
        fraction, 2 the hard one (:attr:`hybridtree.gravity.parts.Part.split`)."""
        if split not in (1, 2):
            raise ValueError(f"split must be 1 (soft) or 2 (hard), got {split!r}")
        f32 = lambda x: f"{float(np.float32(x))!r}f"
        return {"SPLIT": int(split), "CHANGEOVER": CHANGEOVERS[self.shape],
                "R_IN": f32(self.r_in), "R_OUT": f32(self.r_out)}


def soft_potential(r, m: float, eps: float, co: Changeover, n_nodes: int = 64) -> np.ndarray:
    """φ_soft(r) = −∫_r^∞ W(s) m s / (s² + ε²)^{3/2} ds (float64, Gauss–Legendre).

    Beyond r_out W = 1, so the tail is −m/sqrt(max(r, r_out)² + ε²); the rest is a
    quadrature over [r, r_out] (exact to ~1e-12 for these smooth integrands).
    """
    r = np.atleast_1d(np.asarray(r, np.float64))
    tail = -m / np.sqrt(np.maximum(r, co.r_out) ** 2 + eps * eps)
    a = np.minimum(r, co.r_out)
    b = co.r_out
    x, wq = np.polynomial.legendre.leggauss(n_nodes)
    # split at r_in too: W has a kink there (dll)
    out = tail.copy()
    for lo, hi in ((a, np.maximum(a, np.minimum(co.r_in, b))), (np.maximum(a, co.r_in), b)):
        half = 0.5 * (hi - lo)
        s = 0.5 * (hi + lo)[:, None] + half[:, None] * x[None, :]
        f = co.w(s) * m * s / (s * s + eps * eps) ** 1.5
        out -= half * (f @ wq)
    return out
