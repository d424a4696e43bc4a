"""Friends-of-friends halos of a snapshot, GADGET-4's FOF catalogue, halo mass functions.

- :func:`friends_of_friends`: group labels of particles closer than a linking length
  (open boundaries), from scipy's cKDTree in slabs of bounded size.
- :func:`find_halos`: the FOF groups of a (cosmological) snapshot as a
  :class:`HaloCatalogue`: linking length b times the mean comoving interparticle
  separation, group properties in GADGET-4's conventions.
- :func:`write_catalogue`: the catalogue as GADGET-4's ``fof_tab_NNN.hdf5``.
- :func:`mass_function`, :func:`reference_mass_function`: dn/dlnM of a list of halo masses,
  and of a model (Sheth & Tormen 1999, Tinker et al. 2008 ...) through colossus.

The parts: :mod:`hybridtree.analysis.halos.fof` (friends of friends, the linking
length), :mod:`hybridtree.analysis.halos.catalogue` (:class:`HaloCatalogue`, reading a
snapshot, GADGET-4's conventions), :mod:`hybridtree.analysis.halos.catalogue_file` (the
catalogue file), :mod:`hybridtree.analysis.halos.massfunction` (mass functions, the
cosmology of a snapshot, colossus).
"""

from .catalogue import HaloCatalogue, find_halos
from .catalogue_file import catalogue_name, write_catalogue
from .fof import friends_of_friends, linking_length, mean_separation
from .massfunction import (MassFunction, colossus_cosmology, cosmology_params, mass_function,
                           reference_mass_function)

__all__ = ["HaloCatalogue", "MassFunction", "catalogue_name", "colossus_cosmology",
           "cosmology_params",
           "find_halos", "friends_of_friends", "linking_length", "mass_function",
           "mean_separation", "reference_mass_function", "write_catalogue"]
