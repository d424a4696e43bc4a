"""Initial conditions, G = 1: equilibrium spheres (Plummer, Hernquist, a cusp with a
satellite, a cold sphere) in :mod:`.spheres`, each process generating its own share; and
cosmological spheres cut from a Gaussian cold-dark-matter field (Zel'dovich or 2LPT) in
:mod:`.cosmological` (imported on first use: it needs colossus and scipy)."""

from .spheres import (BLOCK, MOMENTS, Share, block_rng, cold_sphere, com_offsets,
                      exact_column_sums, generate_share, hernquist, hernquist_satellite, plummer,
                      to_com_frame)
from .profiles import ModelError

_COSMOLOGICAL = ("cosmo_sphere", "cosmo_sphere_share", "lagrangian_positions",
                 "linear_density_k", "lpt_displacements", "sphere_count", "white_noise")

__all__ = ["BLOCK", "MOMENTS", "ModelError", "Share", "block_rng", "cold_sphere", "com_offsets",
           "exact_column_sums", "generate_share", "hernquist", "hernquist_satellite", "plummer",
           "to_com_frame", *_COSMOLOGICAL]


def __getattr__(name: str):
    # lazily: colossus and scipy only when a cosmological model is asked for
    if name in _COSMOLOGICAL:
        from . import cosmological
        return getattr(cosmological, name)
    raise AttributeError(f"module 'hybridtree.ics' has no attribute {name!r}")
