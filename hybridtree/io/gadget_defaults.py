"""GADGET's usual internal units, the bottom of the GADGET readers and writers: the
binary format (:mod:`hybridtree.io.gadget_binary`), the box ICs and the interpretation of
a file's units (:mod:`hybridtree.io.gadget_units`) all take them from here, so that none
of them imports another one's module for them (the units module itself reads binary
files' headers)."""

from __future__ import annotations

from types import MappingProxyType

__all__ = ["GADGET_DEFAULT_UNITS"]

#: GADGET's usual internal units (its example parameter files; yt and pynbody assume them
#: too) for a file that states none: 1 kpc/h, 10^10 Msun/h and 1 km/s (h only where the
#: coordinates are comoving); read-only, in this key order (readers list the keys from it)
GADGET_DEFAULT_UNITS = MappingProxyType({"UnitLength_in_cm": 3.085678e21,
                                         "UnitMass_in_g": 1.989e43,
                                         "UnitVelocity_in_cm_per_s": 1e5})
