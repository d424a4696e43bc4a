"""The mass assignment and FFT of :func:`hybridtree.analysis.power.power_spectrum` on an
OpenCL device: the periodic TreePM mesh's own kernels (cl/pm.cl: the particles sorted by
cell, a gather deposit in float64 whose sums run in a fixed order) and reikna's FFT.

Both meshes of the interlaced estimator share one complex128 array, the unshifted one as
its real part and the one shifted by half a cell as its imaginary part: one complex FFT
Z = F1 + i F2 gives both transforms of real fields, F1(k) = [Z(k) + Z(−k)*] / 2 and
F2(k) = [Z(k) − Z(−k)*] / (2i), taken apart on the device (cl/power.cl) over the rfft
half, which also sums each x-slab's modes into the shells: only those sums (n_mesh ×
shells × 3 numbers) come back, not the mesh (a 512³ mesh is 2 GiB of complex128).  Float64
throughout: each mode's |k| and shell, and the modes and mean |k| of each shell, are the
host's bits; P(k) equals the host's to rounding (the FFT's sums run in another order).
Needs cl_khr_fp64; a mesh of 8 points a side or more.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from ..device.kernels import launch, spread_local
from ..device.runtime import Runtime
from ..device.transfer import upload
from ..gravity.periodic import Periodic
from ..gravity.pm_device import MeshKernels, mesh_bytes, refuse_unless_fits
from ..gravity.tree.device_sort import MAX_N

__all__ = ["AxisTables", "analysis_runtime", "device_shell_sums", "slab_shell_sums", "usable"]


def analysis_runtime(device: str | None = None) -> Runtime | None:
    """The process's OpenCL runtime for ``hybridtree pk`` and a run's P(k): ``device`` (a
    run's gravity.device), else the one ``HYBRIDTREE_DEVICE`` names, else the best one; or
    None where there is no usable device and none was asked for (the host computes then);
    a device asked for that does not exist stays the user's error (DeviceError)."""
    from ..device.choice import get_runtime
    from ..device.runtime import DeviceError
    try:
        return get_runtime(device or None)
    except DeviceError:
        if device or os.environ.get("HYBRIDTREE_DEVICE") or os.environ.get("PYOPENCL_CTX"):
            raise
        return None


def usable(rt: Runtime | None, n_particles: int, n_mesh: int) -> bool:
    """Whether :func:`device_meshes` can take this case on ``rt``: a device with
    cl_khr_fp64, 8 <= ``n_mesh`` <= 4096 and at most the device sort's particle count."""
    return (rt is not None and rt.has_fp64 and 8 <= n_mesh <= 4096
            and 0 < n_particles <= MAX_N)


@dataclass(frozen=True)
class AxisTables:
    """The per-axis tables of the estimator on an ``n``³ mesh, shared by the host's and
    the device's shell sums (the same bits in both): ``freq`` the integer wave numbers
    (fftfreq), ``freq_z`` the rfft half's, ``window``/``window_z`` sinc(freq / n)^order,
    ``phase``/``phase_z`` exp(iπ freq / n) (the half-cell shift's), ``kf`` 2π / box;
    for the host's slabs (:func:`slab_shell_sums`) ``kyz2`` freq_y² + freq_z² of a slab's
    (n, n / 2 + 1) modes and ``count`` the modes each stands for (flat)."""
    freq: np.ndarray
    freq_z: np.ndarray
    window: np.ndarray
    window_z: np.ndarray
    phase: np.ndarray
    phase_z: np.ndarray
    kf: float
    kyz2: np.ndarray
    count: np.ndarray

    @staticmethod
    def make(n: int, order: int, kf: float) -> "AxisTables":
        freq = np.fft.fftfreq(n, 1.0 / n)                       # integer wave numbers
        freq_z = np.fft.rfftfreq(n, 1.0 / n)
        kyz2 = (freq ** 2)[:, None] + (freq_z ** 2)[None, :]
        # the rfft half counts k and −k of the full grid, except on its k_z = 0 and
        # Nyquist planes
        count = np.full(len(freq_z), 2.0)
        count[0] = 1.0
        if n % 2 == 0:
            count[-1] = 1.0
        return AxisTables(freq, freq_z,
                          np.sinc(freq / n) ** order,           # np.sinc(x) = sin(πx)/(πx)
                          np.sinc(freq_z / n) ** order,
                          np.exp(1j * np.pi * freq / n),        # k_i H/2 = π m_i / n
                          np.exp(1j * np.pi * freq_z / n), kf, kyz2,
                          np.broadcast_to(count, kyz2.shape).ravel())


#: device bytes a particle of :func:`device_shell_sums` at its peak: positions 24 and
#: masses 8 uploaded, the mesh's cell keys 8, the radix sort's buffers 24 and the sorted
#: copies 32 (gravity/pm_device.py MeshKernels._assign).  48 had been assumed: a 1024^3
#: box's 2^30 particles then passed the check and failed in reikna's FFT on the H200
#: (MEM_OBJECT_ALLOCATION_FAILURE, round 149)
PARTICLE_BYTES = 96


def device_shell_sums(rt: Runtime, pos: np.ndarray, mass: np.ndarray, box: float,
                      n_mesh: int, order: int, interlace: bool, scale: float,
                      edges: np.ndarray, axes: AxisTables) -> np.ndarray:
    """The per-slab shell sums of :func:`hybridtree.analysis.power.power_spectrum` on the
    device: (n_mesh, len(edges) + 1, 3) float64, for each x-slab i and shell b (0: below
    edges[0], the last: beyond edges[-1], both left 0) the modes, sum count |k| and sum
    count P of the rfft half's modes of slab i in shell b (cl/power.cl), in the host's
    order; the host adds the slabs in order.  The meshes of the particles at ``pos``
    ((N, 3), length, any image) with masses ``mass`` in the periodic cube of side ``box``:
    F1 of the mesh whose points sit at j box / n, F2 (with ``interlace``) of the one at
    j box / n − box / (2 n), one complex FFT Z = F1 + i F2 (module docstring); nothing
    mesh-sized comes back to the host.  ``order`` 2 (CIC) or 3 (TSC); ``scale`` n³ / Σm;
    ``axes`` the window and phase tables of the host's path."""
    n = int(n_mesh)
    one, total = mesh_bytes(n)
    refuse_unless_fits(rt, one, total + PARTICLE_BYTES * len(pos), f"P(k) on a {n}^3 mesh needs",
                       "take a smaller --mesh")
    # the split scale is the force's only: the smallest Periodic allows on this mesh
    kernels = MeshKernels(rt, Periodic(float(box), n, asmth=0.5, rcut=2.0, order=order,
                                       interlace=interlace))
    z = kernels._thr.array((n, n, n), np.complex128)
    fft = kernels._compile_fft(z, (0, 1, 2))
    pos_buf, mass_buf = upload(rt, [np.asarray(pos, np.float64),
                                    np.asarray(mass, np.float64)], [None, None])
    shifts = (0.0, 0.5) if interlace else (0.0,)
    if not interlace:               # the imaginary half stays empty
        cl.enqueue_fill_buffer(rt.queue, z.data, np.float64(0.0), 0, z.nbytes)
    for comp, shift in enumerate(shifts):
        kernels._assign(pos_buf, mass_buf, len(pos), shift, comp, z.data)
    del pos_buf, mass_buf
    fft(z, z, 0)
    # |k| and shell of each integer |k|^2 = q, as the host computes a mode's
    q_max = 3 * (n // 2) ** 2
    kmag = axes.kf * np.sqrt(np.arange(q_max + 1, dtype=np.float64))
    bins = np.digitize(kmag, edges)                 # monotone in q
    shells = np.arange(len(edges) + 1)
    qrange = np.stack([np.searchsorted(bins, shells, side="left"),
                       np.searchsorted(bins, shells, side="right") - 1], axis=1)
    n_bins2 = len(edges) + 1
    out = np.empty((n, n_bins2, 3))
    out_buf = rt.empty(out.nbytes)
    tables = [rt.to_device(np.ascontiguousarray(a)) for a in (
        axes.window, axes.window_z, axes.phase, axes.phase_z, kmag,
        qrange.astype(np.int64))]
    launch(rt, "power.cl", "pk_shells", n * n_bins2, z.data, np.uint32(n),
           np.uint32(n // 2 + 1), np.uint32(interlace), np.float64((box / n) ** 3),
           np.float64(scale), *tables, np.uint32(n_bins2), out_buf,
           local=spread_local(rt.info))
    cl.enqueue_copy(rt.queue, out, out_buf)
    rt.queue.finish()
    return out


def slab_shell_sums(i: int, d: np.ndarray, other: np.ndarray | None, n_mesh: int,
                    order: int, scale: float, edges: np.ndarray, axes: AxisTables
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x-slab ``i``'s modes, Σ count |k| and Σ count P per shell (len(edges) + 1 of them)
    from its rfft half ``d`` (n_mesh, n_mesh // 2 + 1) of the mass mesh and, interlaced,
    ``other``'s, the mesh shifted by half a cell (combined first)."""
    freq, phase, phase_z = axes.freq, axes.phase, axes.phase_z
    wy, wz, kf, kyz2, count = axes.window, axes.window_z, axes.kf, axes.kyz2, axes.count
    if other is not None:
        d = (d + other * (phase[i] * phase[:, None] * phase_z[None, :])) * 0.5
    kmag = kf * np.sqrt(freq[i] ** 2 + kyz2).ravel()
    window = (np.sinc(freq[i] / n_mesh) ** order * wy[:, None] * wz[None, :]).ravel()
    p = np.abs(d.ravel() * (scale / window)) ** 2
    where = np.digitize(kmag, edges)          # 0: below k_f/2 (k = 0), n_bins + 1: above
    n_bins2 = len(edges) + 1
    return (np.bincount(where, count, minlength=n_bins2),
            np.bincount(where, count * kmag, minlength=n_bins2),
            np.bincount(where, count * p, minlength=n_bins2))
