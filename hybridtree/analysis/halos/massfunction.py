"""Halo mass functions: dn/dlnM of a list of halo masses (:func:`mass_function`), and of
a model (Sheth & Tormen 1999, Tinker et al. 2008 ...) through colossus
(:func:`reference_mass_function`), in the cosmology of a snapshot, a catalogue or a mapping
(:func:`cosmology_params`, :func:`colossus_cosmology`).
"""

from __future__ import annotations

import math
import threading
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping, NamedTuple

import h5py
import numpy as np

from ...errors import UserInputError
from ...io.snapshot import resolve_snapshot
from ...io.hdf5_files import attr_number, attr_value
from .catalogue import HaloCatalogue

__all__ = ["MassFunction", "colossus_cosmology", "cosmology_params", "mass_function",
           "reference_mass_function"]


# --------------------------------------------------------------------------------------
# mass functions

class MassFunction(NamedTuple):
    """A binned halo mass function: ``mass`` the bin centres (geometric means of ``edges``),
    ``dndlnm`` = counts / (volume × Δln M) and its Poisson ``error`` (units: 1/volume),
    ``counts`` per bin, ``edges``."""

    mass: np.ndarray
    dndlnm: np.ndarray
    error: np.ndarray
    counts: np.ndarray
    edges: np.ndarray


def mass_function(masses: np.ndarray, volume: float, bins: int | np.ndarray = 20
                  ) -> MassFunction:
    """dn/dlnM of halos of ``masses`` found in ``volume``: e.g. masses in M☉/h and the
    comoving volume in (Mpc/h)³ give dn/dlnM in (h/Mpc)³, to compare with
    :func:`reference_mass_function`.  ``bins``: a number of bins equally spaced in ln M
    from the smallest to the largest mass, or the bin edges (increasing, > 0)."""
    masses = np.asarray(masses, dtype=np.float64)
    if not volume > 0:
        raise UserInputError(f"volume must be > 0, not {volume}")
    if np.ndim(bins) == 0:
        if len(masses) == 0 or not (masses > 0).all():
            raise UserInputError("masses must be > 0 (and at least one) to choose bins")
        lo, hi = masses.min(), masses.max()
        hi = hi * (1 + 1e-12) if hi > lo else lo * 1.01
        edges = np.geomspace(lo, hi, int(bins) + 1)
    else:
        edges = np.asarray(bins, dtype=np.float64)
        if edges.ndim != 1 or len(edges) < 2 or not (edges > 0).all() or \
                not (np.diff(edges) > 0).all():
            raise UserInputError("bin edges must be positive and increasing")
    counts, _ = np.histogram(masses, edges)
    dlnm = np.diff(np.log(edges))
    return MassFunction(np.sqrt(edges[1:] * edges[:-1]), counts / (volume * dlnm),
                        np.sqrt(counts) / (volume * dlnm), counts, edges)


_COSMO_KEYS = MappingProxyType({  # our name: names accepted in a mapping (hybridtree config, GADGET, colossus)
    "omega_m": ("omega_m", "cosmology.omega_m", "Omega0", "Om0"),
    "omega_lambda": ("omega_lambda", "cosmology.omega_lambda", "OmegaLambda", "Ode0"),
    "h": ("h", "cosmology.h", "HubbleParam"),
    "sigma8": ("sigma8", "cosmology.sigma8"),
    "n_s": ("n_s", "cosmology.n_s", "ns"),
    "omega_b": ("omega_b", "cosmology.omega_b", "OmegaBaryon", "Ob0"),
})


def cosmology_params(source: str | Path | HaloCatalogue | Mapping[str, Any],
                     sigma8: float | None = None, n_s: float | None = None,
                     omega_b: float | None = None) -> dict[str, float]:
    """The cosmology of ``source`` as {omega_m, omega_lambda, h, sigma8, n_s, omega_b}.

    ``source``: a snapshot (file or stem; Ω_m, Ω_Λ, h from its Header, σ8, n_s, Ω_b from
    its Parameters ``cosmology.sigma8``, ``cosmology.n_s``, ``cosmology.omega_b``), a
    :class:`HaloCatalogue` (the same, as read), or a mapping (keys as here, as in the
    Parameters, GADGET's ``Omega0``/``OmegaLambda``/``HubbleParam``/``OmegaBaryon`` or
    colossus' ``Om0``/``Ode0``/``ns``/``Ob0``; ``H0`` in km/s/Mpc).  The arguments
    ``sigma8``, ``n_s``, ``omega_b`` fill in what the source does not state.
    """
    values: dict[str, Any] = {}
    if isinstance(source, HaloCatalogue):
        values = {**source.parameters, "Omega0": source.omega0,
                  "OmegaLambda": source.omega_lambda, "HubbleParam": source.hubble_param}
    elif isinstance(source, (str, Path)):
        with h5py.File(resolve_snapshot(source), "r") as f:
            if "Parameters" in f:
                values.update({k: attr_value(v) for k, v in f["Parameters"].attrs.items()})
            if "Header" in f:
                hd = f["Header"].attrs
                for key in ("Omega0", "OmegaLambda", "HubbleParam"):
                    if key in hd:
                        values[key] = attr_number(hd, key, math.nan)
    else:
        values = dict(source)
        if "H0" in values and "h" not in values:
            values["h"] = float(values["H0"]) / 100.0
    out: dict[str, float] = {}
    for name, keys in _COSMO_KEYS.items():
        for key in keys:
            if key in values and values[key] is not None:
                out[name] = float(values[key])
                break
    for name, value in (("sigma8", sigma8), ("n_s", n_s), ("omega_b", omega_b)):
        if name not in out and value is not None:
            out[name] = float(value)
    missing = [k for k in _COSMO_KEYS if k not in out]
    if missing:
        raise UserInputError(f"the cosmology lacks {', '.join(missing)} (give them as arguments)")
    if not out["omega_m"] > 0 or not out["h"] > 0:
        raise UserInputError(f"not a cosmology: omega_m = {out['omega_m']}, h = {out['h']}")
    return out


_COLOSSUS_LOCK = threading.Lock()


def colossus_cosmology(params: Mapping[str, float], name: str = "hybridtree"):
    """A colossus Cosmology of ``params`` (:func:`cosmology_params`'s keys) that writes and
    reads no cache files (``persistence=''``).  Flat when Ω_m + Ω_Λ = 1 (to 1e-6);
    ``relspecies`` off: a matter + Λ background like the N-body run's (no radiation)."""
    from colossus.cosmology import cosmology
    flat = abs(params["omega_m"] + params["omega_lambda"] - 1.0) < 1e-6
    return cosmology.Cosmology(
        name=name, flat=flat, Om0=params["omega_m"],
        Ode0=None if flat else params["omega_lambda"], Ob0=params["omega_b"],
        H0=100.0 * params["h"], sigma8=params["sigma8"], ns=params["n_s"],
        relspecies=False, persistence="", print_warnings=False)


def reference_mass_function(cosmo_params: str | Path | HaloCatalogue | Mapping[str, Any],
                            z: float, masses: np.ndarray, model: str = "sheth99",
                            mdef: str | None = None, **missing: float) -> np.ndarray:
    """dn/dlnM in (h/Mpc)³ (comoving) of the halo mass function ``model`` of colossus
    (``colossus.lss.mass_function.massFunction``, q_out='dndlnM') at redshift ``z`` and
    ``masses`` in M☉/h: "sheth99" (Sheth & Tormen 1999, FOF masses), "tinker08" (Tinker et
    al. 2008, spherical-overdensity masses, ``mdef`` "200m" unless given) or another
    colossus model.  ``mdef``: colossus' mass definition, by default "fof" where the model
    has it, else "200m".  ``cosmo_params``: see :func:`cosmology_params`; ``missing``
    (``sigma8``, ``n_s``, ``omega_b``) fills in what it lacks.  colossus writes no cache.
    """
    from colossus.cosmology import cosmology
    from colossus.lss import mass_function as mf
    params = cosmology_params(cosmo_params, **missing)
    if model not in mf.models:
        raise UserInputError(f"unknown mass function model {model!r} (colossus has "
                             f"{', '.join(mf.models)})")
    if mdef is None:
        mdef = "fof" if "fof" in mf.models[model].mdefs else "200m"
    masses = np.asarray(masses, dtype=np.float64)
    with _COLOSSUS_LOCK:        # colossus computes with its global "current" cosmology
        previous = cosmology.current_cosmo
        try:
            cosmology.setCurrent(colossus_cosmology(params))
            out = mf.massFunction(masses, float(z), q_in="M", q_out="dndlnM", mdef=mdef,
                                  model=model)
        finally:
            cosmology.current_cosmo = previous
    return np.asarray(out, dtype=np.float64)
