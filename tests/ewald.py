"""Ewald summation in float64: the exact periodic force and potential of point masses in
a cube of side L with a neutralising background (G = 1), the tests' reference for TreePM.

Split with parameter a (1 / length): real-space images within ``n_real`` boxes,
reciprocal vectors 2 pi n / L with |n_i| <= ``n_k``; the result does not depend on a
(a check of the sum), and a lone particle's own images give phi = +2.837297 m / L.
Written from the textbook formulas (Hernquist, Bouchet & Suto 1991), independent of the
code under test.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.special import erfc


def ewald(pos, mass, box: float, sinks=None, a: float | None = None, n_real: int = 2,
          n_k: int = 6):
    """Accelerations (n, 3) and potentials (n,) at ``sinks`` (default: the sources, each
    without its own 1/r but with its own images)."""
    pos = np.asarray(pos, np.float64)
    mass = np.broadcast_to(np.asarray(mass, np.float64), (len(pos),))
    own = sinks is None
    at = pos if own else np.asarray(sinks, np.float64)
    a = 2.0 / box if a is None else a
    vol = box ** 3
    acc = np.zeros((len(at), 3))
    pot = np.zeros(len(at))
    shifts = np.array(list(itertools.product(range(-n_real, n_real + 1), repeat=3)), float) * box
    for s in shifts:
        d = pos[None, :, :] + s - at[:, None, :]            # sink -> source image
        r = np.sqrt((d * d).sum(-1))
        with np.errstate(divide="ignore", invalid="ignore"):
            f = (erfc(a * r) / r + 2 * a / math.sqrt(math.pi) * np.exp(-(a * r) ** 2)) / r ** 2
            p = erfc(a * r) / r
        zero = r == 0.0
        f[zero] = 0.0
        p[zero] = 0.0
        acc += (mass[None, :, None] * f[:, :, None] * d).sum(1)
        pot -= (mass[None, :] * p).sum(1)
    k_acc, k_pot = long_range(pos, mass, box, 0.5 / a, at, n_k)    # the reciprocal sum
    acc += k_acc
    pot += k_pot + math.pi / (a * a * vol) * mass.sum()
    if own:
        pot += 2 * a / math.sqrt(math.pi) * mass          # the removed r -> 0 limit of erf / r
    return acc, pot


def long_range(pos, mass, box: float, rs: float, sinks, n_k: int = 12):
    """The exact periodic long-range force and potential of TreePM with split scale
    ``rs``: Ewald's reciprocal sum with a = 1 / (2 rs), no constant (float64)."""
    pos = np.asarray(pos, np.float64)
    mass = np.broadcast_to(np.asarray(mass, np.float64), (len(pos),))
    at = np.asarray(sinks, np.float64)
    ns = np.array([n for n in itertools.product(range(-n_k, n_k + 1), repeat=3) if any(n)], float)
    k = 2 * np.pi / box * ns
    k2 = (k * k).sum(1)
    w = 4 * np.pi / box ** 3 * np.exp(-k2 * rs * rs) / k2
    ph_src = pos @ k.T
    cs, sn = mass @ np.cos(ph_src), mass @ np.sin(ph_src)
    ph = at @ k.T
    c, s_ = np.cos(ph), np.sin(ph)
    acc = ((sn[None, :] * c - cs[None, :] * s_) * w[None, :]) @ k
    pot = -(c * cs[None, :] + s_ * sn[None, :]) @ w
    return acc, pot
