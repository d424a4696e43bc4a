"""A device state's masses kept once where every particle has the same
(:class:`.device.DeviceState` ``uniform``): an 8-byte buffer read as ``mass[i *
mass_step]`` with ``mass_step`` 0 (1: a mass per particle, 8 bytes each), the same value
read, so every kernel writes the same bits (issue 56: 8 bytes a particle less).  Here:
the decision and the host's mass column of a download.  Mass units: the caller's."""

from __future__ import annotations

import numpy as np

__all__ = ["host_columns", "one_mass"]


def one_mass(mass: np.ndarray, allowed: bool) -> float | None:
    """The one mass of ``mass`` (float64) where ``allowed`` and every value has the same
    bits as the first (so 0.0 and -0.0 differ, and NaN is kept per particle: its check
    names the particle); None otherwise (and for no particles)."""
    if not allowed or len(mass) == 0:
        return None
    bits = np.ascontiguousarray(mass, np.float64).view(np.uint64)
    return float(mass[0]) if bool(np.all(bits == bits[0])) else None


def host_columns(s, columns: list, host_mass: np.ndarray) -> list:
    """The (device buffer, host array) ``columns`` of a download from state ``s``: where
    ``s`` keeps one mass, ``host_mass`` := that mass and the mass column left out."""
    if s.mass_step:
        return columns
    host_mass[:] = s.mass_value
    return [c for c in columns if c[0] is not s.mass]
