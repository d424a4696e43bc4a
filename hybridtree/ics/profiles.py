"""The mass profiles of the generated spheres and their truncation at ``r_max``; the
radii of a truncated Plummer sphere; :class:`ModelError`, a model that its parameters
cannot make.

Lengths in scale radii (Plummer radius, Hernquist a), masses in units of the untruncated
model's total mass (G = M = 1).  The generators keep the velocities of the untruncated
model, so a truncation that leaves little mass inside ``r_max`` is no model of anything:
one that keeps less than :data:`MIN_MASS_FRACTION` is refused (:func:`check_truncation`).
"""

from __future__ import annotations

import math
from types import MappingProxyType

import numpy as np

from ..errors import HybridtreeError

__all__ = ["MIN_MASS_FRACTION", "ModelError", "check_truncation", "mass_inside",
           "plummer_radii", "smallest_r_max"]

#: the least fraction of a sphere's mass that must lie inside its truncation radius
MIN_MASS_FRACTION = 0.01

#: at least this fraction inside r_max: radii by rejection from the whole model (the draws
#: the generators always made, so such models stay the same bits); below it the truncated
#: mass profile is inverted directly (the same distribution, at the cost of one draw)
_REJECTION_FRACTION = 0.5

#: rounds of the rejection loop: at most 1 in 2 is redrawn each round, so 2^-1000 is the
#: chance of a particle still drawing after these (reaching it is a bug)
_MAX_ROUNDS = 1000

_NAMES = MappingProxyType({"plummer": "Plummer", "hernquist": "Hernquist"})


class ModelError(HybridtreeError, ValueError):
    """Parameters that cannot make a generated model (a truncation radius that leaves
    almost no mass, fewer particles than a galaxy's components): the user's to change."""


def mass_inside(model: str, r: float) -> float:
    """Fraction of the untruncated ``model``'s ("plummer", "hernquist") mass inside ``r``
    scale radii: r³ / (1 + r²)^(3/2) (Plummer), r² / (1 + r)² (Hernquist); 1 for r = inf.
    Written so that neither a tiny nor a huge ``r`` overflows."""
    if model == "plummer":
        if r > 1.0:
            return (1.0 + 1.0 / (r * r)) ** -1.5
        return (r / math.sqrt(1.0 + r * r)) ** 3
    if model == "hernquist":
        return (r / (1.0 + r)) ** 2 if r <= 1.0 else (1.0 + 1.0 / r) ** -2
    raise ValueError(f"no mass profile for model {model!r}")


def smallest_r_max(model: str, fraction: float = MIN_MASS_FRACTION) -> float:
    """The radius (scale radii) inside which ``model`` has ``fraction`` of its mass: the
    inverse of :func:`mass_inside`."""
    if model == "plummer":
        c = fraction ** (1.0 / 3.0)             # r / sqrt(1 + r^2)
        return c / math.sqrt(1.0 - c * c)
    if model == "hernquist":
        s = math.sqrt(fraction)                 # r / (1 + r)
        return s / (1.0 - s)
    raise ValueError(f"no mass profile for model {model!r}")


def check_truncation(model: str, r_max: float) -> None:
    """ModelError unless at least :data:`MIN_MASS_FRACTION` of ``model``'s mass lies
    inside ``r_max`` scale radii."""
    inside = mass_inside(model, r_max)
    if not inside >= MIN_MASS_FRACTION:
        name = _NAMES[model]
        raise ModelError(
            f"r_max = {r_max:.6g} {name} scale radii (ics.r_max) keeps a fraction "
            f"{inside:.4g} of the {name} sphere's mass, and the particles would keep the "
            f"whole model's velocities: at least {MIN_MASS_FRACTION * 100:g} % must lie "
            f"inside, take r_max >= {_round_up(smallest_r_max(model)):.4g}")


def _round_up(x: float, digits: int = 4) -> float:
    """``x`` > 0 rounded up to ``digits`` significant digits (a bound that, printed so,
    is still allowed)."""
    step = 10.0 ** (math.floor(math.log10(x)) - digits + 1)
    return math.ceil(x / step) * step


def plummer_radii(rng: np.random.Generator, n: int, r_max: float) -> np.ndarray:
    """``n`` radii (Plummer radii) of a Plummer sphere truncated at ``r_max``, drawn from
    M(<r) = r³ / (1 + r²)^(3/2) with M(<r_max) >= :data:`MIN_MASS_FRACTION`."""
    m_cut = mass_inside("plummer", r_max)
    if m_cut < _REJECTION_FRACTION:
        u = rng.uniform(0.0, 1.0, n) * m_cut
        return 1.0 / np.sqrt(np.maximum(u, 1e-300) ** (-2.0 / 3.0) - 1.0)
    r = np.empty(n)
    todo = np.arange(n)
    for _ in range(_MAX_ROUNDS):
        if not len(todo):
            break
        u = rng.uniform(0.0, 1.0, len(todo))
        rr = 1.0 / np.sqrt(np.maximum(u, 1e-300) ** (-2.0 / 3.0) - 1.0)
        ok = rr <= r_max
        r[todo[ok]] = rr[ok]
        todo = todo[~ok]
    if len(todo):
        raise RuntimeError(f"{len(todo)} Plummer radii still redrawn after {_MAX_ROUNDS} "
                           f"rounds (r_max = {r_max}, M(<r_max) = {m_cut})")
    return r
