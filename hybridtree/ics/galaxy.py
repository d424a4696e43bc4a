"""Disk galaxies in equilibrium: an NFW or Hernquist dark halo, an exponential disk with a
sech² vertical profile and a Hernquist bulge, each in the potential of all three.

Units: G = 1, lengths in kpc, masses in 1e10 Msun, hence velocities in
sqrt(G 1e10 Msun / kpc) = 207.4 km/s and times in 4.715 Myr (hybridtree's default units).

* Halo and bulge (GADGET types 1 and 3): density ρ(r) = ρ0 s(r / a) ½ erfc((r - r_cut) /
  (2 cut_width)), s the NFW or Hernquist shape, ``mass`` the total after the cut-off.
  Isotropic velocities from the distribution function f(E) that Eddington's formula gives
  in the total potential (the disk's contribution spherically averaged).
* Disk (type 2): Σ(R) = M_d / (2π R_d²) exp(-R / R_d) (cut at 20 R_d), ρ ∝ Σ(R)
  sech²(z / z_d).  Gaussian velocities with the moments of the Jeans equations (Hernquist
  1993; Springel's MakeNewDisk): σ_z from vertical hydrostatic equilibrium in the total
  potential, σ_R from a Toomre Q at R_d (σ_R² ∝ exp(-R / R_d), as GalactICS and MAGI) or
  σ_R = ``sigma_ratio`` σ_z, σ_φ from the epicyclic approximation, the mean v_φ from the
  asymmetric drift.  The disk's own forces are exact (Hankel transforms).

Particles are ordered halo, disk, bulge (IDs 1..N), equal masses within each component.
They are drawn in blocks of :data:`hybridtree.ics.spheres.BLOCK` consecutive particles,
each from its own stream (:func:`hybridtree.ics.spheres.block_rng`), so any range is
made alone (:func:`galaxy_share`) with the bits of the whole model; the tables are the
same on every process (:mod:`hybridtree.ics.galaxy_df`).  docs/galaxies.md has the
method, the two parameter sets (:func:`milky_way`, :func:`m31`) and their sources.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

import numpy as np
from scipy import special

from . import galaxy_df
from .galaxy_df import DiskTable, GalaxyTables, SpheroidTable
from .profiles import ModelError
from .spheres import (BLOCK, MOMENTS, Share, block_moments, block_rng, check_range, check_seed,
                      com_offsets, isotropic)

__all__ = ["Disk", "GalaxyParams", "GalaxyShare", "Spheroid", "TYPE_BULGE", "TYPE_DISK",
           "TYPE_HALO", "galaxy", "galaxy_params", "galaxy_share", "galaxy_tables", "m31",
           "milky_way", "split_counts"]

#: GADGET particle types of the components
TYPE_HALO, TYPE_DISK, TYPE_BULGE = 1, 2, 3

KINDS = ("nfw", "hernquist")


@dataclass(frozen=True)
class Spheroid:
    """A halo or bulge: ``kind`` "nfw" or "hernquist", total ``mass`` (1e10 Msun, after
    the cut-off), ``scale`` radius a (kpc), cut-off radius ``r_cut`` and ``cut_width``
    (kpc; density × ½ erfc((r - r_cut) / (2 cut_width))), ``n`` particles."""

    kind: str
    mass: float
    scale: float
    r_cut: float
    cut_width: float
    n: int

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"spheroid kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        for name in ("mass", "scale", "r_cut", "cut_width"):
            _check_positive(name, getattr(self, name))
        if self.r_cut <= self.scale:
            raise ValueError(f"r_cut ({self.r_cut} kpc) must exceed the scale radius "
                             f"({self.scale} kpc)")
        _check_count("n", self.n)


@dataclass(frozen=True)
class Disk:
    """The exponential disk: ``mass`` (1e10 Msun), scale length ``r_d`` and sech² scale
    height ``z_d`` (kpc; ρ ∝ exp(-R/r_d) sech²(z/z_d)), ``n`` particles; radial dispersion
    from ``toomre_q`` (Q = σ_R κ / (3.36 G Σ) at R = r_d, σ_R² ∝ exp(-R/r_d)) or, with
    toomre_q None, σ_R = ``sigma_ratio`` σ_z."""

    mass: float
    r_d: float
    z_d: float
    n: int
    toomre_q: float | None = 1.5
    sigma_ratio: float = 1.0

    def __post_init__(self) -> None:
        for name in ("mass", "r_d", "z_d", "sigma_ratio"):
            _check_positive(name, getattr(self, name))
        if self.toomre_q is not None:
            _check_positive("toomre_q", self.toomre_q)
        if self.z_d > 0.5 * self.r_d:
            raise ValueError(f"z_d ({self.z_d} kpc) must be at most r_d / 2 ({self.r_d / 2} "
                             f"kpc): the Jeans moments assume a thin disk")
        _check_count("n", self.n)


@dataclass(frozen=True)
class GalaxyParams:
    """A galaxy: any of ``halo`` (:class:`Spheroid`), ``disk`` (:class:`Disk`) and
    ``bulge`` (:class:`Spheroid`), None where absent (at least one)."""

    halo: Spheroid | None = None
    disk: Disk | None = None
    bulge: Spheroid | None = None

    def __post_init__(self) -> None:
        for name, kind in (("halo", Spheroid), ("disk", Disk), ("bulge", Spheroid)):
            value = getattr(self, name)
            if value is not None and not isinstance(value, kind):
                raise ValueError(f"{name} must be a {kind.__name__} or None, got {value!r}")
        if not self.components():
            raise ValueError("a galaxy needs at least one of halo, disk and bulge")

    @property
    def n(self) -> int:
        """Total number of particles."""
        return sum(c.n for _, c in self.components())

    def components(self) -> list[tuple[int, Spheroid | Disk]]:
        """(GADGET type, component) of the components present, in particle order."""
        out = [(TYPE_HALO, self.halo), (TYPE_DISK, self.disk), (TYPE_BULGE, self.bulge)]
        return [(t, c) for t, c in out if c is not None]

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (halo/disk/bulge: dicts or None) that :func:`galaxy_params` reads."""
        return dataclasses.asdict(self)


@dataclass
class GalaxyShare(Share):
    """A :class:`hybridtree.ics.spheres.Share` of a galaxy (particles lo .. hi - 1, IDs lo
    + 1 .. hi, not yet in the centre-of-mass frame; ``sums`` the moments of the blocks
    that start in the range) with the particles' GADGET ``types`` (uint8)."""

    types: np.ndarray


def milky_way(n: int = 1 << 20) -> GalaxyParams:
    """A Milky-Way-like model of ``n`` equal-mass particles: NFW halo of 1e12 Msun with a =
    20 kpc (c = 10 for r_200 = 200 kpc), cut at 200 kpc (width 20 kpc); disk 5e10 Msun, R_d
    = 2.6 kpc, z_d = 0.3 kpc, Q = 1.5 at R_d; Hernquist bulge 1e10 Msun, a = 0.6 kpc, cut
    at 6 kpc (width 0.6 kpc).  Sources in docs/galaxies.md."""
    return split_counts(GalaxyParams(
        halo=Spheroid("nfw", 100.0, 20.0, 200.0, 20.0, 1),
        disk=Disk(5.0, 2.6, 0.3, 1, toomre_q=1.5),
        bulge=Spheroid("hernquist", 1.0, 0.6, 6.0, 0.6, 1)), n)


def m31(n: int = 1 << 23) -> GalaxyParams:
    """M31 as GOTHIC's and MAGI's papers model it (Fardal et al. 2007, after Geehan et al.
    2006), with MAGI's parameters: NFW halo 8.11e11 Msun, a = 7.63 kpc, cut at 250 kpc
    (width 25 kpc); Hernquist bulge 3.24e10 Msun, a = 0.61 kpc, cut at 6.1 kpc (width 0.61
    kpc); exponential disk 3.66e10 Msun, R_d = 5.4 kpc, z_d = 0.6 / arccosh(√e) = 0.5816
    kpc (MAGI's z_d = 0.6 kpc is the height where ρ falls by e), Q = 2 at R_d; ``n``
    equal-mass particles (2^23 by default, as GOTHIC's M31 runs)."""
    return split_counts(GalaxyParams(
        halo=Spheroid("nfw", 81.1, 7.63, 250.0, 25.0, 1),
        disk=Disk(3.66, 5.4, 0.6 / math.acosh(math.sqrt(math.e)), 1, toomre_q=2.0),
        bulge=Spheroid("hernquist", 3.24, 0.61, 6.1, 0.61, 1)), n)


def split_counts(params: GalaxyParams, n: int) -> GalaxyParams:
    """``params`` with ``n`` particles split in proportion to the components' masses (one
    particle mass for all; largest remainders, at least one particle each)."""
    comps = params.components()
    _check_count("n", n)
    if n < len(comps):
        names = ", ".join(_NAMES[t] for t, _ in comps)
        raise ModelError(f"n = {n} is fewer than the {len(comps)} components ({names}) of "
                         f"the galaxy, one particle at least each: take n >= {len(comps)}")
    masses = np.array([c.mass for _, c in comps])
    share = (n - len(comps)) * masses / masses.sum()
    counts = 1 + np.floor(share).astype(np.int64)
    order = np.argsort(-(share - np.floor(share)), kind="stable")
    counts[order[:n - int(counts.sum())]] += 1
    new = {_NAMES[t]: dataclasses.replace(c, n=int(k)) for (t, c), k in zip(comps, counts)}
    return dataclasses.replace(params, **new)


def galaxy_params(spec: Mapping[str, Any]) -> GalaxyParams:
    """Parameters from a plain mapping (a config's ``ics`` table): ``model`` ("milky_way"
    or "m31") with optional ``n``, or ``halo``, ``disk``, ``bulge`` as mappings of the
    fields of :class:`Spheroid` / :class:`Disk`; with a model, those mappings change
    fields of the model's components."""
    spec = dict(spec)
    model, n = spec.pop("model", None), spec.pop("n", None)
    unknown = sorted(set(spec) - set(_NAMES.values()))
    if unknown:
        raise ValueError(f"unknown galaxy keys {', '.join(unknown)}; expected model, n, "
                         "halo, disk, bulge")
    if model is not None:
        if model not in _MODELS:
            raise ValueError(f"unknown galaxy model {model!r}; expected {', '.join(_MODELS)}")
        base = _MODELS[model](*(() if n is None else (n,))).to_dict()
    else:
        base = {"halo": None, "disk": None, "bulge": None}
    for name, kind in (("halo", Spheroid), ("disk", Disk), ("bulge", Spheroid)):
        if name in spec:
            if spec[name] is not None and not isinstance(spec[name], Mapping):
                raise ValueError(f"{name} must be a mapping of its fields or None, got "
                                 f"{spec[name]!r}")
            fields = {**(base[name] or {}), **dict(spec[name] or {})}
            base[name] = fields if spec[name] is not None else None
        if base[name] is not None:
            try:
                base[name] = kind(**base[name])
            except TypeError as exc:
                raise ValueError(f"{name}: {exc}") from None
    params = GalaxyParams(**base)
    if n is None and model is not None:
        n = params.n
    return params if n is None else split_counts(params, n)


def galaxy_tables(params: GalaxyParams) -> GalaxyTables:
    """The deterministic tables of ``params`` (cached; the particle counts do not enter)."""
    return _cached_tables(_physics(params.halo), _physics(params.disk), _physics(params.bulge))


def galaxy_share(params: GalaxyParams, lo: int, hi: int, seed: int = 0) -> GalaxyShare:
    """Particles ``lo .. hi - 1`` of the galaxy ``params`` with seed ``seed``, drawn alone:
    the same bits as rows lo .. hi - 1 of the whole model before its centre-of-mass shift,
    for any partition.  Positions (kpc), velocities (207.4 km/s), masses (1e10 Msun) and
    types as a :class:`GalaxyShare`; subtract :func:`hybridtree.ics.spheres.com_offsets`
    of all shares' ``sums`` to put every share in the centre-of-mass frame."""
    if not isinstance(params, GalaxyParams):
        raise ValueError(f"params must be GalaxyParams, got {type(params).__name__}")
    n = params.n
    lo, hi = check_range(lo, hi, n)
    seed = check_seed(seed)
    tables = galaxy_tables(params)
    pos, vel = np.empty((hi - lo, 3)), np.empty((hi - lo, 3))
    mass, types = np.empty(hi - lo), np.empty(hi - lo, np.uint8)
    sums = []
    for b in range(lo // BLOCK, -(-hi // BLOCK) if hi > lo else 0):
        start = b * BLOCK
        bp, bv, bm, bt = _block(params, tables, block_rng(seed, b), start, min(BLOCK, n - start))
        a, e = max(lo, start), min(hi, start + len(bm))
        for out, src in ((pos, bp), (vel, bv), (mass, bm), (types, bt)):
            out[a - lo:e - lo] = src[a - start:e - start]
        if start >= lo:
            sums.append(block_moments(bp, bv, bm))
    sums_arr = np.array(sums, dtype=np.float64).reshape(len(sums), MOMENTS)
    return GalaxyShare(lo, hi, pos, vel, mass, -(-lo // BLOCK), sums_arr, types)


def galaxy(params: GalaxyParams, seed: int = 0) -> tuple[np.ndarray, ...]:
    """The whole galaxy in its centre-of-mass frame: (pos (N, 3) kpc, vel (N, 3) in 207.4
    km/s, mass (N,) 1e10 Msun, ids (N,) uint64 1..N, types (N,) uint8)."""
    s = galaxy_share(params, 0, params.n, seed)
    x_cm, v_cm = com_offsets([s.sums])
    s.pos -= x_cm
    s.vel -= v_cm
    return s.pos, s.vel, s.mass, s.ids, s.types


# --- one block ------------------------------------------------------------------------


def _block(params: GalaxyParams, tables: GalaxyTables, rng: np.random.Generator, start: int,
           size: int) -> tuple[np.ndarray, ...]:
    """Particles start .. start + size - 1: each component's part drawn in turn from the
    block's stream (halo, disk, bulge)."""
    parts = []
    first = 0
    for t, comp in params.components():
        a, e = max(start, first), min(start + size, first + comp.n)
        first += comp.n
        if e <= a:
            continue
        if t == TYPE_DISK:
            p, v = _disk_particles(rng, e - a, comp, tables.disk)
        else:
            p, v = _spheroid_particles(rng, e - a, tables.halo if t == TYPE_HALO else tables.bulge)
        parts.append((p, v, np.full(e - a, comp.mass / comp.n), np.full(e - a, t, np.uint8)))
    return tuple(np.concatenate(x) for x in zip(*parts))


def _spheroid_particles(rng: np.random.Generator, n: int,
                        tab: SpheroidTable) -> tuple[np.ndarray, np.ndarray]:
    """Radius by the inverse of M(<r) (interpolated in ln M), speed by the inverse CDF of
    p(v | r) ∝ v² f(Ψ(r) - v²/2), isotropic directions."""
    with np.errstate(divide="ignore"):
        ln_r = np.interp(np.log(rng.uniform(0.0, 1.0, n)) + tab.ln_m[-1], tab.ln_m, tab.ln_r)
    pos = np.exp(ln_r)[:, None] * isotropic(rng, n)
    x = (ln_r - tab.ln_r[0]) / ((tab.ln_r[-1] - tab.ln_r[0]) / (len(tab.ln_r) - 1))
    k = np.arccos(1.0 - 2.0 * rng.uniform(0.0, 1.0, n)) * ((tab.q2.shape[1] - 1) / np.pi)
    w = _bilinear(tab.q2, x, k) * np.interp(ln_r, tab.ln_r, tab.psi)
    vel = np.sqrt(2.0 * w)[:, None] * isotropic(rng, n)
    return pos, vel


def _disk_particles(rng: np.random.Generator, n: int, disk: Disk,
                    tab: DiskTable) -> tuple[np.ndarray, np.ndarray]:
    """R from the inverse of the exponential's M(<R) (Lambert W), z = z_d artanh(2u - 1),
    Gaussian v_R, v_z, v_φ with the table's moments at (R, |z|)."""
    edge = galaxy_df.DISK_RMAX
    u = rng.uniform(0.0, 1.0, n) * (-math.expm1(-edge) - edge * math.exp(-edge))
    R = disk.r_d * (-1.0 - special.lambertw(-(1.0 - u) / math.e, k=-1).real)
    z = disk.z_d * np.arctanh(np.clip(2.0 * rng.uniform(0.0, 1.0, n) - 1.0, -1.0 + 2**-52, 1.0))
    phi = rng.uniform(0.0, 2.0 * np.pi, n)
    x = (np.log(np.maximum(R, 1e-300)) - tab.ln_r[0]) / ((tab.ln_r[-1] - tab.ln_r[0])
                                                         / (len(tab.ln_r) - 1))
    y = np.abs(z) / disk.z_d / (tab.t[1] - tab.t[0])
    g = rng.standard_normal((3, n))
    v_r = _bilinear(tab.sig_r, x, y) * g[0]
    v_z = _bilinear(tab.sig_z, x, y) * g[1]
    v_phi = _bilinear(tab.v_phi, x, y) + _bilinear(tab.sig_phi, x, y) * g[2]
    c, s = np.cos(phi), np.sin(phi)
    pos = np.stack([R * c, R * s, z], axis=1)
    vel = np.stack([v_r * c - v_phi * s, v_r * s + v_phi * c, v_z], axis=1)
    return pos, vel


def _bilinear(table: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``table`` (nx, ny) at fractional indices (x, y), clamped to the table."""
    nx, ny = table.shape
    x = np.clip(x, 0.0, nx - 1.0)
    y = np.clip(y, 0.0, ny - 1.0)
    i = np.minimum(x.astype(np.int64), nx - 2)
    j = np.minimum(y.astype(np.int64), ny - 2)
    fx, fy = x - i, y - j
    return ((1.0 - fx) * ((1.0 - fy) * table[i, j] + fy * table[i, j + 1])
            + fx * ((1.0 - fy) * table[i + 1, j] + fy * table[i + 1, j + 1]))


# --- tables and checks ----------------------------------------------------------------


def _physics(comp: Spheroid | Disk | None) -> tuple | None:
    if comp is None:
        return None
    if isinstance(comp, Spheroid):
        return (comp.kind, float(comp.mass), float(comp.scale), float(comp.r_cut),
                float(comp.cut_width))
    q = None if comp.toomre_q is None else float(comp.toomre_q)
    return float(comp.mass), float(comp.r_d), float(comp.z_d), q, float(comp.sigma_ratio)


@functools.lru_cache(maxsize=4)
def _cached_tables(halo: tuple | None, disk: tuple | None, bulge: tuple | None) -> GalaxyTables:
    return galaxy_df.build_tables(halo, disk, bulge)


_NAMES = MappingProxyType({TYPE_HALO: "halo", TYPE_DISK: "disk", TYPE_BULGE: "bulge"})
_MODELS = MappingProxyType({"milky_way": milky_way, "m31": m31})


def _check_positive(name: str, value: Any) -> None:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive number, got {value!r}") from None
    if not (x > 0.0 and math.isfinite(x)):
        raise ValueError(f"{name} must be positive and finite, got {value!r}")


def _check_count(name: str, value: Any) -> None:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
