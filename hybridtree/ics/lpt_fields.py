"""The Lagrangian displacement fields of one cosmological realization, computed once and
held lean (:func:`lpt_fields`): the bits of :func:`hybridtree.ics.cosmological.
lpt_displacements` (the same noise, the same spectra, the same one-dimensional transforms
in the same order), in about 48 bytes a grid point at the peak for 2LPT in float64
instead of a whole real field per component plus the transforms' work arrays.

How (scipy.fft's pocketfft): ``irfftn`` of a half-spectrum over three axes is the complex
inverse transform over the first two axes followed by the complex-to-real one over the
last, each one-dimensional line computed alone; so a component is kept as its spectrum
transformed in place over the first two axes (complex, n·n·(n/2+1) values: 8 bytes a
grid point in float64) and its real values come one plane at a time (:meth:`LptFields.rows`),
scaled by 1/n³ as ``irfftn`` scales them (a rounded product, the same one).  The forward
``rfftn`` of the noise and of the second-order source is, likewise, the real-to-complex
transform of each plane's rows followed by the complex transform over the first two axes
in place: the noise is never held whole, and the source's six derivative fields are
summed plane by plane, in the order and with the roundings of the whole-field formula.

Peak host memory, per grid point (float64; float32 fields: half): the spectrum δ_k and a
work spectrum (8 B each) with the source and one derivative field (8 B each) while the
second-order source is summed (32 B); at the end the six components' spectra (48 B; 24 B
for Zel'dovich), the last component of each order made in place of its source spectrum.
"""

from __future__ import annotations

import numbers
from typing import Callable

import numpy as np

from .threads import ordered_map

__all__ = ["FIELDS", "LptFields", "check_seed", "complex_type", "fields_of", "lpt_fields",
           "noise_k", "scale_by_power", "zero_unwanted"]


def _sfft():
    """scipy.fft, imported when a field is first made: every run imports this module
    (run/setup.py), and scipy's import would cost each process 0.2 s of CPU."""
    import scipy.fft
    return scipy.fft


#: the fields' precisions (memory.ics_fields): float64 (the reference bits) or float32
FIELDS = ("float64", "float32")


def complex_type(fields: str) -> type:
    """The complex dtype of fields of precision ``fields`` (:data:`FIELDS`)."""
    return np.complex64 if fields == "float32" else np.complex128


class LptFields:
    """ψ1 (and ψ2) of one realization on an n³ grid of comoving side ``box`` (internal
    length), each component a spectrum transformed over the first two axes; real values
    plane by plane (:meth:`rows`, :meth:`take`).  :meth:`release` frees them."""

    def __init__(self, n: int, g1: list[np.ndarray], g2: list[np.ndarray] | None,
                 workers: int) -> None:
        self.n, self.workers = n, workers
        self.g1, self.g2 = g1, g2
        real = g1[0].real.dtype.type
        self.fct = _inverse_scale(n, real)

    @property
    def order(self) -> int:
        return 1 if self.g2 is None else 2

    def release(self) -> None:
        """Free the fields (their memory goes back at once)."""
        self.g1, self.g2 = [], None

    def plane(self, i: int, workers: int | None = None
              ) -> tuple[np.ndarray, np.ndarray | None]:
        """(ψ1 (3, n²), ψ2 (3, n²) or None) of the grid points of first index ``i``, in
        the fields' real type: the bits ``irfftn`` gives there.  ``workers``: FFT
        threads (None: the fields')."""
        workers = self.workers if workers is None else workers

        def real(gs: list[np.ndarray]) -> np.ndarray:
            out = np.empty((3, self.n * self.n), self.g1[0].real.dtype)
            for a, g in enumerate(gs):
                out[a] = _c2r_plane(g[i], self.n, self.fct, workers).ravel()
            return out
        return real(self.g1), (None if self.g2 is None else real(self.g2))

    def rows(self, lo: int, hi: int, workers: int | None = None
             ) -> tuple[np.ndarray, np.ndarray | None]:
        """(ψ1 (3, m), ψ2 (3, m) or None) of grid points lo .. hi - 1 (linear index)."""
        return self.take(np.arange(lo, hi, dtype=np.int64), workers)

    def take(self, idx: np.ndarray, workers: int | None = None
             ) -> tuple[np.ndarray, np.ndarray | None]:
        """(ψ1 (3, m), ψ2 (3, m) or None) of the grid points of ascending linear indices
        ``idx``, computed plane by plane (``workers`` as :meth:`plane`'s)."""
        nn = self.n * self.n
        dtype = self.g1[0].real.dtype
        psi1 = np.empty((3, len(idx)), dtype)
        psi2 = None if self.g2 is None else np.empty((3, len(idx)), dtype)
        planes = idx // nn
        cuts = np.flatnonzero(np.diff(planes)) + 1
        for a, b in zip(np.r_[0, cuts], np.r_[cuts, len(idx)]):
            if a == b:
                continue
            p1, p2 = self.plane(int(planes[a]), workers)
            at = idx[a:b] - planes[a] * nn
            psi1[:, a:b] = p1[:, at]
            if psi2 is not None:
                psi2[:, a:b] = p2[:, at]
        return psi1, psi2


def lpt_fields(n: int, box: float, power: Callable[[np.ndarray], np.ndarray], seed: int,
               order: int, workers: int = -1, fields: str = "float64") -> LptFields:
    """The displacement fields of the realization ``seed`` of spectrum ``power`` (P(k) at
    a = 1, internal units) on the n³ grid of comoving side ``box``: Zel'dovich (``order``
    1) or 2LPT (2), ``fields`` "float64" (the bits of
    :func:`hybridtree.ics.cosmological.lpt_displacements`) or "float32" (half the memory)."""
    delta_k = noise_k(n, seed, workers, complex_type(fields))
    scale_by_power(delta_k, box, power)
    zero_unwanted(delta_k)
    return fields_of(delta_k, box, order, workers)


def fields_of(delta_k: np.ndarray, box: float, order: int, workers: int = -1) -> LptFields:
    """:class:`LptFields` of the linear field ``delta_k`` (rfftn layout), whose array is
    used up (it becomes the last ψ1 component's spectrum)."""
    n = delta_k.shape[0]
    mu2_k = _mu2_k(delta_k, box, workers) if order == 2 else None
    g1 = _components(delta_k, box, +1, workers)
    del delta_k
    g2 = None if mu2_k is None else _components(mu2_k, box, -1, workers)
    return LptFields(n, g1, g2, workers)


def noise_k(n: int, seed: int, workers: int = -1, ctype=np.complex128) -> np.ndarray:
    """``rfftn`` of :func:`hybridtree.ics.cosmological.white_noise` (the same bits in
    complex128; ``ctype`` complex64: the noise rounded to float32 first), made plane by
    plane (each drawn by a thread of :func:`hybridtree.ics.threads.ordered_map`, its rows
    transformed) and transformed over the first two axes in place."""
    real = np.float32 if ctype == np.complex64 else np.float64
    out = np.empty((n, n, n // 2 + 1), ctype)

    def draw(i: int) -> np.ndarray:
        w = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(i,))
                                  ).standard_normal((n, n))
        return _sfft().rfft(w.astype(real, copy=False), axis=-1, workers=1)

    for i, row_k in enumerate(ordered_map(draw, range(n))):
        out[i] = row_k
    return _c2c(out, True, workers)


def check_seed(seed) -> int:
    """``seed`` as an int (ValueError unless an integer >= 0)."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    return int(seed)


# --- the transforms, as irfftn / rfftn do them ----------------------------------------------

def _inverse_scale(n: int, real) -> np.floating:
    """irfftn's 1/n³, as pocketfft rounds it (long double, then the field's type)."""
    return real(np.longdouble(1) / np.longdouble(n ** 3))


def _c2c(g: np.ndarray, forward: bool, workers: int) -> np.ndarray:
    """The unscaled complex transform of ``g`` over axes 0 and 1, in place."""
    fn = _sfft().fftn if forward else _sfft().ifftn
    out = fn(g, axes=(0, 1), norm="backward" if forward else "forward", overwrite_x=True,
             workers=workers)
    assert np.shares_memory(out, g)
    return g


def _c2r_plane(g_plane: np.ndarray, n: int, fct, workers: int) -> np.ndarray:
    """Real values (n, n) of one plane of a spectrum transformed over axes 0 and 1."""
    out = _sfft().irfft(g_plane, n=n, axis=-1, norm="forward", workers=workers)
    out *= fct
    return out


def scale_by_power(delta_k: np.ndarray, box: float, power: Callable) -> None:
    """δ_k × √(P(k) N / V) plane by plane (the noise's modes to the field's)."""
    n = delta_k.shape[0]
    kf = 2.0 * np.pi / box
    m_max = 3 * (n // 2) ** 2
    amp = np.sqrt(power(kf * np.sqrt(np.arange(m_max + 1.0))) * n ** 3 / box ** 3)
    ix, iz = _freq_ints(n), np.arange(n // 2 + 1)
    m_yz = ix[:, None] ** 2 + iz[None, :] ** 2
    for p in range(n):
        delta_k[p] *= amp[ix[p] ** 2 + m_yz]


def _components(src_k: np.ndarray, box: float, sign: int, workers: int
                ) -> list[np.ndarray]:
    """The three spectra sign·i k_a/k² src_k, each transformed over axes 0 and 1; the
    last made in ``src_k``'s array (used up)."""
    out = []
    for a in range(3):
        g = _multiply(src_k, box, _i_k_over_k2(a, sign), out=src_k if a == 2 else None)
        out.append(_c2c(g, False, workers))
    return out


def _mu2_k(delta_k: np.ndarray, box: float, workers: int) -> np.ndarray:
    """The spectrum (rfftn layout, mean and Nyquist planes zero) of μ2 = Σ_{a<b}
    (ψ_{a,a} ψ_{b,b} - ψ_{a,b}²), each term's plane as the whole-field formula rounds it
    (Σ_{a<b} ψ_{a,a} ψ_{b,b} as (d00 d11) + (d00 + d11) d22, then minus each
    ψ_{a,b}², each product and sum rounded as numpy rounds it on whole arrays): one real field (the sum) and one derivative
    field at a time besides a work spectrum."""
    n = delta_k.shape[0]
    fct = _inverse_scale(n, delta_k.real.dtype.type)
    work = np.empty_like(delta_k)

    def planes(a: int, b: int):
        _c2c(_multiply(delta_k, box, _k_k_over_k2(a, b), out=work), False, workers)
        for p in range(n):
            yield p, _c2r_plane(work[p], n, fct, workers)

    d0 = np.empty((n, n, n), delta_k.real.dtype)
    for p, d in planes(0, 0):
        d0[p] = d
    acc = np.empty_like(d0)
    for p, d1 in planes(1, 1):
        np.multiply(d0[p], d1, out=acc[p])
        d0[p] += d1
    for p, d2 in planes(2, 2):
        d0[p] *= d2
        acc[p] += d0[p]
    del d0
    for a, b in ((0, 1), (0, 2), (1, 2)):
        for p, off in planes(a, b):
            off *= off
            acc[p] -= off
    for p in range(n):
        work[p] = _sfft().rfft(acc[p], axis=-1, workers=workers)
    del acc
    _c2c(work, True, workers)
    zero_unwanted(work)
    return work


# --- spectral helpers ---------------------------------------------------------------------

def _freq_ints(n: int) -> np.ndarray:
    """Integer frequencies of a full FFT axis: 0, 1, .., -2, -1 (int64)."""
    return np.fft.fftfreq(n, 1.0 / n).round().astype(np.int64)


def zero_unwanted(field_k: np.ndarray) -> None:
    """Zero the k = 0 mode and (even n) the Nyquist planes of an rfftn-layout field."""
    n = field_k.shape[0]
    field_k[0, 0, 0] = 0.0
    if n % 2 == 0:
        field_k[n // 2] = 0.0
        field_k[:, n // 2] = 0.0
        field_k[:, :, n // 2] = 0.0


def _multiply(src_k: np.ndarray, box: float, factor: Callable,
              out: np.ndarray | None = None) -> np.ndarray:
    """src_k × factor(k, 1/k²), plane by plane along the first axis (temporaries stay one
    plane big), into ``out`` (None: a new array; ``src_k`` itself: in place).  ``factor``
    gets the wave vector (k_x scalar, k_y (n, 1), k_z (1, m)) in internal 1/length and
    1/k² (0 at k = 0) of the plane."""
    n = src_k.shape[0]
    kf = 2.0 * np.pi / box
    kx = kf * _freq_ints(n)
    ky, kz = kx[:, None], kf * np.arange(n // 2 + 1.0)[None, :]
    k2_yz = ky ** 2 + kz ** 2
    out = np.empty_like(src_k) if out is None else out
    for p in range(n):
        k2 = kx[p] ** 2 + k2_yz
        inv = np.divide(1.0, k2, out=np.zeros_like(k2), where=k2 > 0.0)
        out[p] = src_k[p] * factor((kx[p], ky, kz), inv)
    return out


def _i_k_over_k2(axis: int, sign: int) -> Callable:
    """Factor sign · i k_axis / k² (ψ1 from δ with +1, ψ2 from μ2 with -1)."""
    return lambda k, inv: (sign * 1j) * (k[axis] * inv)


def _k_k_over_k2(a: int, b: int) -> Callable:
    """Factor -k_a k_b / k²: ψ1_{a,b} = ∂ψ1_a/∂q_b from δ."""
    return lambda k, inv: -(k[a] * k[b]) * inv
