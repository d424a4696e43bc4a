"""The positions, masses and softenings that the float32 force kernels represent, and the
one host check (O(N): an extent, a sum) that refuses the rest before any force.

The kernels work in float32 on positions relative to the tree's cube (side S: the
smallest power of two >= (1 + 1e-6) times the particles' largest extent,
:func:`hybridtree.gravity.tree.morton.extent_cube`); nothing is rescaled.  With M the total
mass, m = M / N the mean mass and eps the smallest softening (length units, G = 1):

- resolution (tree, eps > 0): ``S <= 2^41 eps``.  A position is a float32 hi/lo pair
  relative to the cube's centre (cl/prepare.cl), resolved to S 2^-49 or better: to 2^-8
  eps or better here, whatever the pair.  Beyond it a far particle blurs every other
  particle's position (measured, 400 particles of a unit cluster with eps = 0.01 and one
  more far out: largest force error 1.4e-3 at S = 2^37 (S / eps = 2^43.6), 0.11 at
  S = 2^44; the tree's own at theta = 0.5: 2e-3).  The Morton keys resolve S 2^-21;
  particles closer than that share a leaf, which costs time, not accuracy.
- overflow: ``max(M, 1) S^2 <= 2^120``: squared distances and the quadrupole moments
  (|Q| <= 3 M S^2; cl/walkcommon.cl evaluates their terms in d / r, finite however far
  the cell; r^-4 underflows beyond r ~ 2^31 and drops them there) stay below float32's
  2^128; ``M <= 2^120`` and, with eps > 0,
  ``M / eps^3 <= 2^120`` (a pair's m / (r^2 + eps^2)^(3/2)).  (The relative opening's
  d^4 may overflow: inf compares as it should.)
- underflow: ``m / S^3 >= 2^-120``: a mean particle's pull m / r^3 across the cube stays a
  normal float32 (below 2^-126 it is flushed to 0, and a particle far from all others
  feels no force at all: the direct kernel gave 0 for one particle 1e15 from a cluster
  of mass 1).

The direct method sums pairs of hi/lo differences (no cube): the resolution bound is not
its; it keeps the others.  With eps = 0 nothing bounds m / r^3 of a close pair: the
public call flags a non-finite result (:func:`check_result`).
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import HybridtreeError
from ...particles import bounds

__all__ = ["RangeError", "RESOLUTION_BITS", "check_range", "check_result", "largest_span",
           "mass_error", "refusal", "span_error", "span_of", "spread"]

#: a tree's cube side is at most 2^RESOLUTION_BITS eps (positions to 2^-8 eps)
RESOLUTION_BITS = 41
#: the float32 guards: max(M, 1) S^2, M and M / eps^3 at most 2^_BIG_BITS, m / S^3 at
#: least 2^-_BIG_BITS (float32: 2^-126 .. 2^128)
_BIG_BITS = 120
_GROW = 1.0 + 1e-6          # the cube's enlargement (morton.extent_cube)


class RangeError(HybridtreeError, ValueError):
    """Particles that the float32 force kernels cannot represent (their span against the
    softening, their masses): refused before any force is computed."""


def _pow2_floor(x: float) -> float:
    """The largest power of two <= x (x > 0, finite or inf)."""
    if math.isinf(x):
        return math.inf
    m, e = math.frexp(x)
    return math.ldexp(1.0, e - 1)


def largest_span(total_mass: float, n: int, eps: float, tree: bool = True
                 ) -> tuple[float, str]:
    """(E, why): the largest extent (length units) the kernels represent for ``n``
    particles of total mass ``total_mass`` softened with ``eps`` (0: none), and the bound
    that sets it, in words; inf where none binds."""
    limits = []
    if tree and eps > 0:
        limits.append((2.0**RESOLUTION_BITS * eps,
                       f"S <= 2^{RESOLUTION_BITS} eps: the tree resolves positions to 2^-49 "
                       f"of its cube S, to be within 2^-{49 - RESOLUTION_BITS} eps"))
    limits.append(((2.0**_BIG_BITS / max(total_mass, 1.0)) ** 0.5,
                   f"max(M, 1) S^2 <= 2^{_BIG_BITS}: float32 overflow of squared "
                   f"distances and quadrupole moments"))
    mean = total_mass / max(n, 1)
    if mean > 0:
        limits.append(((mean * 2.0**_BIG_BITS) ** (1.0 / 3.0),
                       f"m / S^3 >= 2^-{_BIG_BITS}: a particle's pull across the span "
                       f"underflows float32"))
    side, why = min(limits, key=lambda t: t[0])
    return _pow2_floor(side) / _GROW, why


def span_of(*arrays: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """(extent, lower, upper): the largest side of the box around the (k, 3) position
    arrays, and its corners (an empty set: 0 and zeros)."""
    rows = [a for a in arrays if len(a)]
    if not rows:
        return 0.0, np.zeros(3), np.zeros(3)
    corners = [bounds(a) for a in rows]
    lo = np.min([c[0] for c in corners], axis=0)
    hi = np.max([c[1] for c in corners], axis=0)
    with np.errstate(over="ignore"):
        return float(np.max(hi - lo)), lo, hi


def _fmt(v: np.ndarray) -> str:
    return "(" + ", ".join(f"{float(x):.4g}" for x in v) + ")"


def mass_error(total: float, eps: float, what: str) -> str | None:
    """Why masses of total ``total`` softened with ``eps`` overflow float32 forces, in
    one line (None: they do not)."""
    if total > 2.0**_BIG_BITS or (eps > 0 and total / eps**3 > 2.0**_BIG_BITS):
        return (f"{what}: total mass M = {total:.4g} with softening eps = {eps:.4g} is "
                f"beyond float32 forces (M and M / eps^3 must be at most 2^{_BIG_BITS} = "
                f"{2.0**_BIG_BITS:.3g}): use units where the masses are nearer 1 "
                f"(units.mass_g) or a larger eps")
    return None


def span_error(extent: float, total: float, n: int, eps: float, tree: bool = True,
               box: float | None = None) -> tuple[float, str] | None:
    """(allowed span, why) where particles of this ``extent`` (length units; a periodic
    ``box``: at most its side) are beyond the kernels' range, else None (a NaN extent
    too: the positions' own check names the particle)."""
    if math.isnan(extent):
        return None
    if box is not None:
        extent = min(extent, float(box))
    allowed, why = largest_span(total, n, eps, tree)
    return None if extent <= allowed else (allowed, why)


def refusal(what: str, label: str, position: np.ndarray, centre: np.ndarray, centre_is: str,
            extent: float, allowed: float, why: str, eps: float, total: float, n: int,
            bulk: bool = False) -> str:
    """The one line that refuses a span: the particle named, its position, the range;
    ``bulk``: most particles are spread wider than the range (not one far particle)."""
    where = (f"{label} at {_fmt(position)} is too far from the others ({centre_is} "
             f"{_fmt(centre)})")
    if bulk:
        where = (f"the particles are spread too wide (half lie beyond {allowed / 2:.4g} of "
                 f"their {centre_is} {_fmt(centre)}; {label} at {_fmt(position)})")
    other = ("a larger softening" if why.startswith("S <=") else
             "units in which lengths and masses are nearer 1 (units.length_cm, units.mass_g)")
    fix = f"use {other}" if bulk else f"remove or move that particle, or use {other}"
    return (f"{what}: {where}: the particles span {extent:.4g}, but float32 forces "
            f"represent a span of at most {allowed:.4g} here ({why}; eps = {eps:.4g}, M = "
            f"{total:.4g}, N = {n}): {fix}")


def spread(pos: np.ndarray, centre: np.ndarray) -> tuple[int, float]:
    """(i, half): the particle farthest (max-norm) from ``centre`` and the median
    max-norm distance from it (length units)."""
    with np.errstate(over="ignore"):
        far = np.abs(pos - centre).max(axis=1)
    return int(np.argmax(far)), float(np.median(far))


def check_range(pos: np.ndarray, mass: np.ndarray, eps: float, *, tree: bool = True,
                sinks: np.ndarray | None = None, ids: np.ndarray | None = None,
                box: float | None = None, what: str = "particles") -> None:
    """RangeError, one line, for particles the float32 kernels cannot represent (the
    module's bounds): it names the particle farthest from the median position (its index,
    or its ID where ``ids`` are given, and its position) and the largest span allowed.

    pos (N, 3) and mass (N,): float64 (a NaN is left to the values' own check); eps: the
    smallest softening in use (0: none); ``tree``: the tree method (else direct);
    ``sinks``: sink positions given apart (within the span too); ``box``: a periodic
    box's side (the positions wrapped into it: its side is the span)."""
    n = len(pos)
    if n == 0:
        return
    total, eps = float(np.sum(mass)), float(eps)
    error = mass_error(total, eps, what)
    if error:
        raise RangeError(error)
    extent, lo, hi = span_of(pos) if sinks is None else span_of(pos, sinks)
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        return              # a position not finite: the values' own check names it
    found = span_error(extent, total, n, eps, tree, box)
    if found is None:
        return
    both = pos if sinks is None or not len(sinks) else np.concatenate([pos, sinks])
    centre = np.median(both, axis=0)        # which a few far particles do not move
    i, half = spread(both, centre)
    if i >= n:
        label = f"sink {i - n}"
    else:
        label = f"particle ID {int(ids[i])}" if ids is not None else f"particle {i}"
    raise RangeError(refusal(what, label, both[i], centre, "median position", extent,
                             *found, eps, total, n, bulk=2 * half > found[0]))


def check_result(acc: np.ndarray, pot: np.ndarray, sinks: np.ndarray, what: str) -> None:
    """RangeError naming the first sink whose acceleration or potential is not finite
    (float32 overflow of m / r^3: a pair too close for eps = 0, or masses too large)."""
    ok = np.isfinite(acc).all(axis=1) & np.isfinite(pot)
    if ok.all():
        return
    i = int(np.flatnonzero(~ok)[0])
    raise RangeError(
        f"{what}: the force on sink {i} at {_fmt(sinks[i])} overflows float32 "
        f"({int((~ok).sum())} sink(s)): a pair closer than float32's m / r^3 allows "
        f"(softening eps = 0?) or masses too large; use eps > 0 or units where the "
        f"masses and distances are nearer 1")
