"""Input and output: snapshots (GADGET-style HDF5), diagnostics files, logs; yt
(:func:`load_yt`: a snapshot in yt with its own units; yt itself is imported only then)."""

from .yt import load_yt

__all__ = ["load_yt"]
