"""The long-range part of periodic gravity on a mesh (TreePM, :mod:`.periodic`), in
float64 on the host (numpy's FFT).

Steps, as GADGET's pm_periodic: assignment of the masses to the N_mesh^3 points
x = i L / N_mesh (CIC or TSC, a deterministic sum: ``np.bincount``), a real-to-complex
FFT, the potential phi_k = -4 pi rho_k exp(-k^2 r_s^2) / k^2 (k = 0 dropped: the mean
density is the neutralising background) divided by the assignment window twice
(assignment and interpolation), the acceleration -i k phi_k, inverse FFTs and
interpolation at the sinks with the same window.  With ``interlace`` a second mesh
offset by half a cell is averaged in, which cancels the leading alias.  A point mass's
long-range force, errors per Newtonian force at r / r_s = 0-1, 1-2, 2-4, 4-8, > 8
(32^3 mesh, asmth 1.25, medians of 600 pairs): CIC 8.5e-4 4.7e-3 9.7e-3 4.3e-3 1.7e-3;
CIC interlaced 1.8e-4 1.1e-3 2.4e-3 1.2e-3 4.7e-4; TSC 2.6e-4 6.3e-4 1.4e-3 4.0e-4
7.7e-5; TSC interlaced (the default) 2.7e-5 7.1e-5 1.3e-4 4.5e-5 9.0e-6.
Units: G = 1, the caller's.
"""

from __future__ import annotations

import numpy as np

from .periodic import Periodic

__all__ = ["CHUNK", "assign_mass", "cloud_chunks", "pm_forces"]


#: particles per chunk of a cloud (:func:`cloud_chunks`): bounds its temporaries (27 rows
#: per particle for TSC, an int64 index and a float64 weight each: ~0.2 GB)
CHUNK = 1 << 19


def cloud_chunks(pos: np.ndarray, n: int, box: float, order: int, shift: float,
                 mass: np.ndarray | None = None):
    """The clouds of the particles at ``pos`` (length) on the periodic n³ mesh of the cube
    of side ``box`` whose points sit at j box / n - ``shift`` (length), CHUNK particles at
    a time: yields (first row, idx, wgt), idx (order³, rows) int64 flat mesh indices (C
    order) and wgt (order³, rows) their weights, CIC (``order`` 2) or TSC (3), times
    ``mass`` (its rows) where given."""
    for lo in range(0, len(pos), CHUNK):
        # wrapped here, chunk by chunk, rather than as a copy of all positions; a tiny
        # negative x can give box itself, which the index's % n wraps
        u = np.mod(pos[lo:lo + CHUNK] + shift, box) * (n / box)        # in mesh cells
        if order == 2:
            i0 = np.floor(u)
            d = u - i0
            base = i0.astype(np.int64)
            w = [1.0 - d, d]                                # to base, base + 1
        else:
            i0 = np.floor(u + 0.5)                          # the nearest mesh point
            d = u - i0
            base = i0.astype(np.int64) - 1
            w = [0.5 * (0.5 - d) ** 2, 0.75 - d * d, 0.5 * (0.5 + d) ** 2]
        m = 1.0 if mass is None else mass[lo:lo + CHUNK]
        # each axis' wrapped indices once: the 27 (or 8) index sums need no modulo
        at = [[(base[:, axis] + a) % n for a in range(order)] for axis in range(3)]
        rows = len(u)
        idx = np.empty((order ** 3, rows), np.int64)
        wgt = np.empty((order ** 3, rows))
        j = 0
        for a, wa in enumerate(w):
            for b, wb in enumerate(w):
                ixy = (at[0][a] * n + at[1][b]) * n
                wab = m * wa[:, 0] * wb[:, 1]
                for c, wc in enumerate(w):
                    np.add(ixy, at[2][c], out=idx[j])
                    np.multiply(wab, wc[:, 2], out=wgt[j])
                    j += 1
        yield lo, idx, wgt


def assign_mass(pos: np.ndarray, mass: np.ndarray, n: int, box: float, order: int,
                shift: float) -> np.ndarray:
    """Mass on the n³ mesh (n, n, n) of :func:`cloud_chunks` (a deterministic sum:
    ``np.bincount``)."""
    mesh = np.zeros(n ** 3)
    for _, idx, wgt in cloud_chunks(pos, n, box, order, shift, mass):
        mesh += np.bincount(idx.ravel(), wgt.ravel(), minlength=n ** 3)
    return mesh.reshape(n, n, n)


def _kernel(p: Periodic) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """The Green's function over the rfft half-mesh (the assignment window deconvolved
    twice) and the three wave-number axes, broadcastable."""
    n, box = p.n_mesh, p.box
    k1 = 2.0 * np.pi / box * np.fft.fftfreq(n, 1.0 / n)
    kz1 = 2.0 * np.pi / box * np.fft.rfftfreq(n, 1.0 / n)
    kx, ky, kz = k1[:, None, None], k1[None, :, None], kz1[None, None, :]
    k2 = kx * kx + ky * ky + kz * kz
    half = 0.5 * box / n
    # window per axis: sinc^order(k h / 2); np.sinc(x) = sin(pi x) / (pi x)
    win = (np.sinc(kx * half / np.pi) * np.sinc(ky * half / np.pi)
           * np.sinc(kz * half / np.pi)) ** p.order
    with np.errstate(divide="ignore", invalid="ignore"):
        green = -4.0 * np.pi * np.exp(-k2 * p.rs ** 2) / (k2 * win * win)
    green[0, 0, 0] = 0.0
    return green, (kx, ky, kz)


def _mesh(pos, mass, at, p: Periodic, shift: float, green, ks) -> np.ndarray:
    """(pot, ax, ay, az) at ``at`` from one mesh whose points are offset by ``shift``
    cells."""
    n = p.n_mesh
    offset = shift * p.box / n
    rho = assign_mass(pos, mass, n, p.box, p.order, offset) * (n / p.box) ** 3
    phi_k = green * np.fft.rfftn(rho)
    fields = [np.fft.irfftn(phi_k, s=(n, n, n), axes=(0, 1, 2)).ravel()]
    for k in ks:
        fields.append(np.fft.irfftn(-1j * k * phi_k, s=(n, n, n), axes=(0, 1, 2)).ravel())
    out = np.zeros((len(at), 4))
    for lo, idx, wgt in cloud_chunks(at, n, p.box, p.order, offset):
        for c, field in enumerate(fields):
            out[lo:lo + idx.shape[1], c] = (wgt * field[idx]).sum(axis=0)
    return out


def pm_forces(pos: np.ndarray, mass: np.ndarray, p: Periodic,
              sinks: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Long-range accelerations (n, 3) and potentials (n,) at ``sinks`` (default: the
    sources ``pos``) from the sources in the periodic cube ``p``; float64.  The mesh's
    own term of a source at itself is included (see :meth:`Periodic.self_potential`)."""
    pos = np.asarray(pos, np.float64)
    mass = np.broadcast_to(np.asarray(mass, np.float64), (len(pos),))
    at = pos if sinks is None else np.asarray(sinks, np.float64)
    green, ks = _kernel(p)
    out = _mesh(pos, mass, at, p, 0.0, green, ks)
    if p.interlace:
        out = 0.5 * (out + _mesh(pos, mass, at, p, 0.5, green, ks))
    return out[:, 1:], out[:, 0]
