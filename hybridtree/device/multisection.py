"""The Lagrangian radii's multisection: the smallest radius whose enclosed mass reaches a
fraction of the total, without sorting (:mod:`hybridtree.device.reduce` gives it the
enclosed masses: fixed-order sums on the device, or their numpy twin).

It runs over the bit patterns of the non-negative doubles, which are ordered as the
doubles are, so it ends on a particle's radius itself after at most :data:`PASSES`
passes of :data:`TRIALS` trial radii per fraction, whatever the radii's scale;
cl/reduce.cl ``radii_start`` and ``radii_narrow`` take the same steps on the device.
Units: the caller's lengths and masses.
"""

from __future__ import annotations

import numpy as np

__all__ = ["PASSES", "TRIALS", "checked_fractions", "multisect"]

#: Trial radii per fraction and pass: 7 (22 passes) took 4.8 and 10.0 ms for three radii
#: at 2^22 and 2^24 on the H100, 15 (16 passes) 5.7 and 17.9 ms, 3 (32 passes) 4.8 and
#: 11.0 ms (scripts/tune/radii.py, docs/history.md §21).
TRIALS = 7


def _passes(trials: int) -> int:
    """Passes that bring any bracket of the bit patterns of non-negative doubles (2^63
    wide at most) down to width 1: each leaves at most width // (trials + 1) + 1."""
    width, passes = 2**63, 0
    while width > 1:
        width = width // (trials + 1) + 1 if width > trials else 1
        passes += 1
    return passes


#: Passes of the Lagrangian-radius multisection (enough for any radii: :func:`_passes`).
PASSES = _passes(TRIALS)


def _trial_bits(lo: np.ndarray, hi: np.ndarray, trials: int) -> np.ndarray:
    """(F, trials) bit patterns spread over (lo, hi) (cl/reduce.cl ``trial_bits``)."""
    d = hi - lo
    q, r = d // (trials + 1), d % (trials + 1)
    t = np.arange(1, trials + 1, dtype=np.int64)
    return lo[:, None] + q[:, None] * t + (r[:, None] * t) // (trials + 1)


def _trial_radii(bits: np.ndarray) -> np.ndarray:
    """The radii of bit patterns (-1: below 0, encloses nothing)."""
    with np.errstate(invalid="ignore"):
        return np.where(bits < 0, -1.0, bits.view(np.float64))


def checked_fractions(fractions) -> np.ndarray:
    """The mass fractions as float64 (F,), each > 0 (ValueError otherwise)."""
    f = np.asarray(fractions, np.float64)
    if np.any(f <= 0):
        raise ValueError(f"mass fractions must be positive, got {fractions}")
    return f


def multisect(fractions, total: float, rmax: float, enclosed, trials: int) -> list[float]:
    """Multisection for the smallest R with enclosed(R) >= f * total, shared by both
    twins and the device's own loop (cl/reduce.cl ``radii_narrow``).

    It runs over the bit patterns of the non-negative doubles (ordered as the doubles
    are), so it ends on a particle's radius itself in at most :data:`PASSES` passes,
    whatever the radii's scale.  Invariant per fraction: enclosed(lo) < want <=
    enclosed(hi) (hi = rmax holds all the mass; lo = -1 is below 0, where nothing is
    enclosed); done when hi - lo <= 1.  The answer is the only radius with that
    property, so any path to it gives the same bits.  ``enclosed`` maps trial radii
    (F, trials) to enclosed masses.
    """
    f = checked_fractions(fractions)
    if not total > 0 or not np.isfinite(rmax):
        return [float("nan")] * len(f)
    want = f * total
    hi = np.full(len(f), np.float64(rmax)).view(np.int64)
    lo = np.full(len(f), -1, np.int64)
    for _ in range(PASSES):
        if np.all(hi - lo <= 1):
            break
        bits = _trial_bits(lo, hi, trials)
        lo, hi = _narrow(bits, enclosed(_trial_radii(bits)) < want[:, None], lo, hi)
    assert np.all(hi - lo <= 1), "the multisection did not converge in PASSES passes"
    return [float(h) for h in hi.view(np.float64)]


def _narrow(r: np.ndarray, below: np.ndarray, lo: np.ndarray, hi: np.ndarray):
    """The bracket after one pass: the last trial below and the first at or above."""
    n_below = below.sum(axis=1)       # enclosed mass grows with r: a prefix is below
    rows = np.arange(len(r))
    lo = np.where(n_below > 0, r[rows, np.maximum(n_below - 1, 0)], lo)
    hi = np.where(n_below < r.shape[1], r[rows, np.minimum(n_below, r.shape[1] - 1)], hi)
    return lo, hi
