"""Initial conditions.  G = 1 and total mass M = 1 throughout.

* :func:`plummer`: Plummer sphere in N-body (Hénon) units, E = -1/4.
* :func:`hernquist`: Hernquist (1990) sphere with scale radius a = 1.
* :func:`cold_sphere`: uniform-density sphere at rest (cold collapse).

Every generator returns ``(pos, vel, mass)`` with shapes (n, 3), (n, 3), (n,),
equal masses 1/n, and the centre of mass at rest at the origin.

Blocks: the particles of a model are drawn in blocks of :data:`BLOCK` consecutive
IDs, block ``b`` (particle indices ``b·BLOCK .. (b+1)·BLOCK - 1``, IDs one higher)
from its own random stream (:func:`block_rng`), so that any range of particles can
be generated alone (:func:`generate_share`: each MPI process makes only its own
share) and is the same whoever makes it.  The shift to the centre-of-mass frame
comes from per-block moment sums (Σm, Σm·x, Σm·v, each block summed by one fixed
numpy reduction) added exactly and rounded once (:func:`com_offsets`), so the
particles are the same bits for any number of processes.  Block 0 draws from
``default_rng(seed)`` in the order the generators always used, so a model of at
most BLOCK particles is the one earlier versions gave (to the rounding of the
centre-of-mass shift).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping

import numpy as np

from ..config.quantities import accepts_quantities
from .hernquist_df import hernquist_speeds
from .profiles import check_truncation, plummer_radii
from .moments import MOMENTS, block_moments, com_offsets, exact_column_sums
from .threads import ordered_map

__all__ = ["BLOCK", "MOMENTS", "BlockDrawer", "Share", "block_drawer", "block_moments", "block_rng",
           "check_range", "check_seed", "cold_sphere", "com_offsets", "exact_column_sums",
           "generate_share", "hernquist", "hernquist_block", "hernquist_satellite", "isotropic",
           "plummer", "to_com_frame"]

Arrays = tuple[np.ndarray, np.ndarray, np.ndarray]

#: particles per block of the generators (a fixed part of what a seed means: changing
#: it changes every model of more than BLOCK particles)
BLOCK = 1 << 16


def plummer(n: int, seed: int = 0, r_max: float = 100.0) -> Arrays:
    """Plummer sphere (Aarseth, Hénon & Wielen 1974) of ``n`` equal masses.

    Returns (positions (n, 3), velocities (n, 3), masses (n,)) in Hénon units
    (scale radius 3π/16, total mass 1), centre of mass at rest at the origin.
    Radii beyond ``r_max`` Plummer radii are redrawn (where less than half the mass lies
    inside, the truncated mass profile is inverted instead); an ``r_max`` inside which
    less than 1 % of the mass lies is refused
    (:class:`hybridtree.ics.profiles.ModelError`).
    """
    return _whole("plummer", n, seed, r_max=r_max)


def hernquist(n: int, seed: int = 0, r_max: float = 100.0) -> Arrays:
    """Hernquist (1990) sphere of ``n`` equal masses 1/n with G = M = a = 1.

    Density ρ(r) = a / (2π r (r + a)^3), potential Φ(r) = -1 / (r + a),
    enclosed mass M(<r) = r^2 / (r + a)^2; lengths in units of the scale
    radius a = 1 (half-mass radius (1 + √2) a), velocities in √(GM/a),
    time in √(a^3/GM).  Radii are drawn from M(<r) truncated at ``r_max``
    scale radii (the truncated CDF is inverted directly; the particles keep
    total mass 1, so the mass inside r_max is scaled up by 1/M(<r_max), about
    2 % for r_max = 100; r_max < 1/9, which keeps less than 1 % of the mass,
    is refused: :class:`hybridtree.ics.profiles.ModelError`).  Velocities are
    isotropic, drawn from the model's ergodic distribution function f(E)
    (Hernquist 1990 eq. 17) at each particle's radius, see
    :func:`hernquist_speeds`.  The truncation makes
    the sample slightly non-virial: 2K/|W| ≈ 0.981 for r_max = 100.
    The shift to the centre-of-mass frame moves the cusp off the origin by
    about √(<r²>/n) ≈ 13 a/√n for r_max = 100 (dominated by the few outermost
    particles), e.g. 0.04 a for n = 10⁵ and 0.4 a for n = 10³.

    Returns (positions (n, 3), velocities (n, 3), masses (n,)), centre of mass
    at rest at the origin.
    """
    return _whole("hernquist", n, seed, r_max=r_max)


def hernquist_satellite(n: int, seed: int = 0, ratio: float = 0.1, scale: float = 0.2,
                        distance: float = 2.0, r_max: float = 100.0) -> Arrays:
    """A Hernquist halo (G = a = 1, :func:`hernquist`) with a Hernquist satellite of
    ``ratio`` times its mass and scale radius ``scale`` at ``distance`` on the x axis,
    moving along y at half the local circular speed (it falls in): a cusp with a second
    cusp, the hard case for force errors and time steps.  Equal masses 1 / n, total mass
    1: the satellite has round(n ratio / (1 + ratio)) of them, the halo the rest (mass
    m_h = 1 / (1 + ratio), speeds those of :func:`hernquist` times sqrt(m_h)).  Centre of
    mass at rest at the origin.  Returns (positions (n, 3), velocities (n, 3), masses)."""
    n_sat = int(round(n * ratio / (1.0 + ratio)))
    if not 0 < n_sat < n:
        raise ValueError(f"n = {n} is too small for a satellite of mass ratio {ratio}")
    pos, vel, _ = hernquist(n - n_sat, seed, r_max)
    spos, svel, _ = hernquist(n_sat, seed + 1, r_max)
    m_halo, m_sat = (n - n_sat) / n, n_sat / n
    # a Hernquist model of mass m and scale b: lengths x b, velocities x sqrt(m / b)
    vel = vel * math.sqrt(m_halo)
    spos = spos * scale + [distance, 0.0, 0.0]
    v_circ = math.sqrt(m_halo * distance / (distance + 1.0) ** 2)
    svel = svel * math.sqrt(m_sat / scale) + [0.0, 0.5 * v_circ, 0.0]
    pos, vel = np.concatenate([pos, spos]), np.concatenate([vel, svel])
    mass = np.full(n, 1.0 / n)
    pos, vel = to_com_frame(pos, vel, mass)
    return pos, vel, mass


@accepts_quantities(radius="length")
def cold_sphere(n: int, seed: int = 0, radius: float = 1.0) -> Arrays:
    """Uniform-density sphere of total mass 1 and radius ``radius`` (a number, internal
    units, or a length quantity, converted in ``units=`` or 1 kpc), at rest.

    Positions are uniform in the ball |x| <= radius; all velocities are zero.  With G = M =
    1 t_ff = (π/2) √(R^3 / 2), W = -3/5 · 1/R (continuum; -(3/5)(1 - 1/n)/R for n points).
    The shift to the centre-of-mass frame displaces the ball by the sample's
    mean position, |Δ| ~ R √(3/(5n)), so radii measured from the origin reach
    up to R + |Δ|; the density and the radius of the ball are not altered.

    Returns (positions (n, 3), velocities (n, 3) of zeros, masses (n,)).
    """
    return _whole("cold_sphere", n, seed, radius=radius)


@dataclass
class Share:
    """Particles ``lo .. hi - 1`` (0-based indices; IDs ``lo + 1 .. hi``) of a generated
    model, in the model's own frame (not yet shifted to the centre of mass).

    ``pos`` (hi - lo, 3) and ``vel`` (hi - lo, 3) in the model's units (see the
    generators), ``mass`` (hi - lo,) = 1/n each.  ``sums`` (k, 7) holds the moments
    Σm, Σm·x (3), Σm·v (3) of the k whole blocks whose first particle lies in
    [lo, hi), blocks ``first_block .. first_block + k - 1``: the shares of any
    partition of [0, n) into ranges hold every block exactly once.
    """

    lo: int
    hi: int
    pos: np.ndarray
    vel: np.ndarray
    mass: np.ndarray
    first_block: int
    sums: np.ndarray

    @property
    def ids(self) -> np.ndarray:
        """Particle IDs lo + 1 .. hi (uint64)."""
        return np.arange(self.lo + 1, self.hi + 1, dtype=np.uint64)


def block_rng(seed: int, block: int) -> np.random.Generator:
    """The random stream of block ``block`` of a model with seed ``seed``.

    Block 0 draws from ``default_rng(seed)`` (the stream the generators used before
    they worked in blocks); block b >= 1 from child b of ``SeedSequence(seed)``
    (``SeedSequence(seed).spawn(b + 1)[b]``), a stream independent of every other.
    """
    if block == 0:
        return np.random.default_rng(seed)
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(block,)))


def generate_share(model: str, n: int, lo: int, hi: int, seed: int = 0,
                   **params: float) -> Share:
    """Particles ``lo .. hi - 1`` of the ``model`` ("plummer", "hernquist" or
    "cold_sphere") of ``n`` particles with seed ``seed``, drawn alone: the same bits
    as rows lo .. hi - 1 of the whole model before its centre-of-mass shift, and the
    moments of the blocks that start in the range (:class:`Share`).

    ``params``: ``r_max`` (plummer, hernquist; in scale radii, default 100) or
    ``radius`` (cold_sphere; in length units, default 1).  Every block that overlaps
    the range is generated whole (a block is one stream), so a share costs at most two
    blocks more than its own particles.  To put the particles of every share in the
    centre-of-mass frame, subtract :func:`com_offsets` of all the shares' ``sums``.
    """
    draw = block_drawer(model, n, seed, **params)
    n = draw.n
    lo, hi = check_range(lo, hi, n)
    pos = np.empty((hi - lo, 3))
    vel = np.empty((hi - lo, 3))
    m = 1.0 / n
    first_block = -(-lo // BLOCK)           # the first block that starts at or after lo
    sums = []
    blocks = range(lo // BLOCK, -(-hi // BLOCK) if hi > lo else 0)
    for b, (bp, bv) in zip(blocks, ordered_map(draw, blocks)):
        start = b * BLOCK
        a, e = max(lo, start), min(hi, start + len(bp))
        pos[a - lo:e - lo] = bp[a - start:e - start]
        vel[a - lo:e - lo] = bv[a - start:e - start]
        if start >= lo:
            sums.append(block_moments(bp, bv, m))
    sums_arr = np.array(sums, dtype=np.float64).reshape(len(sums), MOMENTS)
    return Share(lo, hi, pos, vel, np.full(hi - lo, m), first_block, sums_arr)


@dataclass(frozen=True)
class BlockDrawer:
    """Draws the raw blocks (:func:`block_rng`; not yet in the centre-of-mass frame) of
    a checked ``model`` of ``n`` particles: ``drawer(b)`` -> (pos, vel), each (size, 3), of
    block ``b`` (particles b·BLOCK .. of it).  Safe to call from several threads: every
    call makes its own Generator."""

    model: str
    fn: Callable[..., tuple[np.ndarray, np.ndarray]]
    n: int
    seed: int
    params: Mapping[str, float]

    def __call__(self, b: int) -> tuple[np.ndarray, np.ndarray]:
        start = b * BLOCK
        return self.fn(block_rng(self.seed, b), min(BLOCK, self.n - start), **self.params)


def block_drawer(model: str, n: int, seed: int = 0, **params: float) -> BlockDrawer:
    """The blocks of ``model`` of ``n`` particles with seed ``seed`` and ``params``
    (:func:`generate_share`'s), checked before any draw (ValueError, or
    :class:`hybridtree.ics.profiles.ModelError` for a truncation that keeps too little)."""
    try:
        block_fn, defaults = _MODELS[model]
    except (KeyError, TypeError):
        raise ValueError(f"unknown model {model!r}; expected one of {', '.join(_MODELS)}") from None
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        raise ValueError(f"{model} takes {', '.join(defaults)}, not {', '.join(unknown)}")
    kw = {**defaults, **params}
    for name, value in kw.items():
        _check_positive(name, value, allow_inf=name == "r_max")
    kw = {name: float(value) for name, value in kw.items()}
    if "r_max" in kw:
        check_truncation(model, kw["r_max"])    # before any draw
    return BlockDrawer(model, block_fn, _check_n(n), check_seed(seed), MappingProxyType(kw))


def to_com_frame(pos: np.ndarray, vel: np.ndarray, mass: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return copies of ``pos`` and ``vel`` with the mass-weighted centre of
    mass moved to the origin and its velocity to zero (any consistent units).
    """
    pos = np.asarray(pos, dtype=np.float64)
    vel = np.asarray(vel, dtype=np.float64)
    mass = np.asarray(mass, dtype=np.float64)
    n = len(mass)
    if mass.shape != (n,) or pos.shape != (n, 3) or vel.shape != (n, 3):
        raise ValueError(
            f"expected pos (n, 3), vel (n, 3), mass (n,); got {pos.shape}, {vel.shape}, {mass.shape}"
        )
    if not mass.sum() > 0.0:
        raise ValueError(f"total mass must be > 0, got {mass.sum()}")
    pos = pos - np.average(pos, axis=0, weights=mass)
    vel = vel - np.average(vel, axis=0, weights=mass)
    return pos, vel


# --- one block of each model --------------------------------------------------------
#
# Each takes the block's stream and size and returns raw (pos, vel) (m, 3), in the
# order of draws the whole-model generators always used, so block 0 is the old model.


def _plummer_block(rng: np.random.Generator, n: int, r_max: float) -> tuple[np.ndarray, np.ndarray]:
    scale = 3.0 * np.pi / 16.0
    r = plummer_radii(rng, n, r_max)
    pos = r[:, None] * isotropic(rng, n)
    # speed by von Neumann rejection from g(q) = q^2 (1 - q^2)^(7/2), q = v / v_esc
    q = np.empty(n)
    todo = np.arange(n)
    while len(todo):
        x1 = rng.uniform(0.0, 1.0, len(todo))
        x2 = rng.uniform(0.0, 0.1, len(todo))
        ok = x2 < x1 * x1 * (1.0 - x1 * x1) ** 3.5
        q[todo[ok]] = x1[ok]
        todo = todo[~ok]
    v = q * np.sqrt(2.0) * (1.0 + r * r) ** -0.25
    vel = v[:, None] * isotropic(rng, n)
    pos *= scale
    vel /= np.sqrt(scale)
    return pos, vel


def hernquist_block(rng: np.random.Generator, n: int, r_max: float) -> tuple[np.ndarray, np.ndarray]:
    m_cut = 1.0 / (1.0 + 1.0 / r_max) ** 2  # M(<r_max); 1 for r_max = inf
    u = rng.uniform(0.0, 1.0, n) * m_cut
    s = np.sqrt(u)  # s = r / (1 + r)
    r = s * (1.0 + s) / (1.0 - u)  # = s / (1 - s), finite for every u < 1
    pos = r[:, None] * isotropic(rng, n)
    v = hernquist_speeds(rng, r)
    vel = v[:, None] * isotropic(rng, n)
    return pos, vel


def _cold_block(rng: np.random.Generator, n: int, radius: float) -> tuple[np.ndarray, np.ndarray]:
    r = radius * np.cbrt(rng.uniform(0.0, 1.0, n))
    pos = r[:, None] * isotropic(rng, n)
    return pos, np.zeros((n, 3))


_MODELS: Mapping[str, tuple[Callable[..., tuple[np.ndarray, np.ndarray]], Mapping[str, float]]] = \
    MappingProxyType({
        "plummer": (_plummer_block, MappingProxyType({"r_max": 100.0})),
        "hernquist": (hernquist_block, MappingProxyType({"r_max": 100.0})),
        "cold_sphere": (_cold_block, MappingProxyType({"radius": 1.0})),
    })


def _whole(model: str, n: int, seed: int, **params: float) -> Arrays:
    """All n particles of ``model``, shifted to the centre-of-mass frame."""
    s = generate_share(model, n, 0, _check_n(n), seed, **params)
    x_cm, v_cm = com_offsets([s.sums])
    s.pos -= x_cm
    s.vel -= v_cm
    return s.pos, s.vel, s.mass


# --- helpers -----------------------------------------------------------------------


def _check_n(n: int) -> int:
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral):
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    return int(n)


def check_range(lo: int, hi: int, n: int) -> tuple[int, int]:
    """(lo, hi) as ints, or ValueError unless they are integers with 0 <= lo <= hi <= n."""
    for name, v in (("lo", lo), ("hi", hi)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
            raise ValueError(f"{name} must be an integer, got {v!r}")
    if not 0 <= lo <= hi <= n:
        raise ValueError(f"need 0 <= lo <= hi <= n, got lo = {lo}, hi = {hi}, n = {n}")
    return int(lo), int(hi)


def check_seed(seed: int) -> int:
    """``seed`` as an int, or ValueError unless it is an integer >= 0."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    return int(seed)


def _check_positive(name: str, value: float, allow_inf: bool = False) -> None:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive number, got {value!r}") from None
    if not x > 0.0 or (np.isinf(x) and not allow_inf):
        raise ValueError(f"{name} must be positive{'' if allow_inf else ' and finite'}, got {value!r}")


def isotropic(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` unit vectors uniformly distributed on the sphere, shape (n, 3)."""
    z = rng.uniform(-1.0, 1.0, n)
    phi = rng.uniform(0.0, 2.0 * np.pi, n)
    s = np.sqrt(1.0 - z * z)
    return np.stack([s * np.cos(phi), s * np.sin(phi), z], axis=1)
