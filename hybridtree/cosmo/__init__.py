"""The cosmological background: :class:`Cosmology` (expansion, age, linear growth, power
spectrum; colossus underneath) in hybridtree's internal units (G = 1).  The initial
conditions cut from it are in :mod:`hybridtree.ics.cosmological`.

colossus and scipy are imported when this package is, not by ``import hybridtree``.
"""

from .background import Cosmology

__all__ = ["Cosmology"]
