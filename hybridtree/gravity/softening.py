"""The softening of a pair: Plummer's, or GADGET's cubic spline.

- ``"plummer"``: phi = -m / sqrt(r² + ε²), a = m d / (r² + ε²)^(3/2);
- ``"spline"``: the cubic spline kernel of GADGET-2 and GADGET-4 (Springel, Yoshida &
  White 2001) with ε the Plummer-equivalent length, as GADGET's softening parameters
  are: h = 2.8 ε, the force exactly Newtonian beyond h, phi(0) = -m / ε (Plummer's).
  A GADGET user's ε therefore means the same here.

The kernels take it as the build-time define SOFTENING (cl/softening.cl); this module
holds the float64 form (the tests' reference) and the defines.  Lengths: the caller's
units; G = 1.
"""

from __future__ import annotations

import numpy as np

__all__ = ["SOFTENINGS", "SPLINE_H", "check_softening", "kernel_options", "pair_factors"]

#: The softening kernels (gravity.softening).
SOFTENINGS = ("plummer", "spline")

#: h / ε of the spline: where it becomes exactly Newtonian, in Plummer-equivalent ε.
SPLINE_H = 2.8


def kernel_options(softening: str) -> dict | None:
    """The force kernels' define for ``softening`` (None: Plummer, their default)."""
    if softening not in SOFTENINGS:
        raise ValueError(f"softening must be one of {SOFTENINGS}, got {softening!r}")
    return {"SOFTENING": 2} if softening == "spline" else None


def check_softening(softening: str, eps: float, quad: bool = False) -> None:
    """ValueError for an unknown ``softening``, or the spline where the kernels cannot
    take it: ε zero (in float32, as the kernels get it) or quadrupole cells."""
    kernel_options(softening)
    if softening == "spline" and (quad or not np.float32(eps * eps) > 0):
        raise ValueError("the spline softening needs eps > 0 and monopole cells "
                         "(multipole='monopole' or 'auto')")


def pair_factors(r2: np.ndarray, eps: float | np.ndarray, softening: str = "plummer"
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(g, f) at squared separations ``r2`` (float64): a source of mass m gives the
    potential -m g and the acceleration m f d (d from the sink to the source).  At
    r = 0 with ε = 0: g = f = 0 (a pair at zero distance contributes nothing).  ``eps``:
    one softening, or an array of the pairs' (broadcast against ``r2``)."""
    r2 = np.asarray(r2, np.float64)
    if softening == "plummer":
        g = r2 + eps * eps
        zero = g == 0                   # only at r = 0 with eps = 0
        np.sqrt(g, out=g)
        g[zero] = 1.0
        np.divide(1.0, g, out=g)
        g[zero] = 0.0
        f = g * g                       # products, not g ** 3: the reference's own cost
        f *= g
        return g, f
    if softening != "spline":
        raise ValueError(f"softening must be one of {SOFTENINGS}, got {softening!r}")
    if not np.all(np.asarray(eps) > 0):
        raise ValueError("the spline softening needs eps > 0")
    h = SPLINE_H * eps
    r = np.sqrt(r2)
    u = r / h
    w = np.maximum(u, 0.5)                          # the middle branch's argument
    rs = np.where(r > 0, r, 1.0)
    g = np.where(u >= 1, 1.0 / rs, np.where(
        u < 0.5, (2.8 - u * u * (16 / 3 + u * u * (6.4 * u - 9.6))) / h,
        (3.2 - 1 / (15 * w) - w * w * (32 / 3 + w * (-16 + w * (9.6 - 32 / 15 * w)))) / h))
    f = np.where(u >= 1, 1.0 / rs ** 3, np.where(
        u < 0.5, (32 / 3 + u * u * (32 * u - 38.4)) / h ** 3,
        (64 / 3 - 48 * w + 38.4 * w * w - 32 / 3 * w ** 3 - 1 / (15 * w ** 3)) / h ** 3))
    return g, f
