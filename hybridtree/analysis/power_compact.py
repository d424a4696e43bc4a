"""The shell sums of :func:`hybridtree.analysis.power.power_spectrum` on the compact
float32 mesh (:class:`hybridtree.gravity.pm_compact.CompactMesh`): P(k) of as many
particles as a run holds (2^30 on a 1024^3 mesh) in that mesh's memory, two float32
arrays of n^3 on the device and nothing per particle.

The mesh deposits (integer sums: the same bits in any order) and transforms on the
device; the half spectrum comes back one x-slab at a time (4 n^2 bytes) and the host
sums each slab's modes into the shells as its own path does
(:func:`hybridtree.analysis.power_device.slab_shell_sums`, the slabs in order).
Interlaced, the unshifted mesh's half spectrum is kept on the host (complex64, 4 n^3
bytes: 4 GiB at 1024^3) while the device makes the shifted one's.  P(k) matches the float64 paths to
float32 rounding (per shell 1.1e-7 to 1.7e-7 relative on 16^3, CIC and TSC,
interlaced or not: test_power_compact.py).
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from ..device.runtime import Runtime
from ..device.transfer import upload
from ..gravity.periodic import Periodic
from ..gravity.pm_compact import MAX_SIDE, CompactMesh, compact_mesh_bytes
from ..gravity.pm_device import device_memory, mesh_bytes
from .power_device import PARTICLE_BYTES, AxisTables, slab_shell_sums

__all__ = ["compact_power_sums", "compact_shell_sums", "prefer_compact"]


def prefer_compact(rt: Runtime, n_particles: int, n_mesh: int) -> bool:
    """Whether P(k) on ``rt`` should take the compact float32 mesh: the float64 one of
    :func:`.power_device.device_shell_sums` (its complex128 mesh, FFT scratch and 96
    bytes a particle) does not fit the device, and the compact one (its mesh and the
    positions and masses, 32 bytes a particle) does, on a power-of-two side."""
    max_alloc, global_mem = device_memory(rt)
    one, total = mesh_bytes(n_mesh)
    if one <= max_alloc and total + PARTICLE_BYTES * n_particles <= global_mem:
        return False
    one, total = compact_mesh_bytes(n_mesh)
    return (8 <= n_mesh <= MAX_SIDE and n_mesh & (n_mesh - 1) == 0 and one <= max_alloc
            and total + 32 * n_particles <= global_mem)


def compact_power_sums(rt: Runtime, pos: np.ndarray, mass: np.ndarray, box: float,
                       n_mesh: int, order: int, interlace: bool, scale: float,
                       edges: np.ndarray, axes: AxisTables
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`compact_shell_sums` of host arrays ``pos`` ((N, 3), length) and ``mass``
    ((N,)) in the periodic cube of side ``box`` on a mesh made here (the arguments of
    :func:`.power_device.device_shell_sums`)."""
    # the split scale is the force's only: the smallest Periodic allows on this mesh
    mesh = CompactMesh(rt, Periodic(float(box), int(n_mesh), asmth=0.5, rcut=2.0,
                                    order=order, interlace=interlace))
    pos_buf, mass_buf = upload(rt, [np.asarray(pos, np.float64),
                                    np.asarray(mass, np.float64)], [None, None])
    return compact_shell_sums(mesh, pos_buf, mass_buf, len(pos), interlace, scale, edges,
                              axes)


def compact_shell_sums(mesh: CompactMesh, pos_buf: cl.Buffer, mass: cl.Buffer | float,
                       n: int, interlace: bool, scale: float, edges: np.ndarray,
                       axes: AxisTables) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(modes, Σ count |k|, Σ count P) per shell (len(edges) + 1 of them, the first below
    and the last beyond the edges) of :func:`.power.power_spectrum` for the ``n``
    particles at ``pos_buf`` (n x 3 float64, any image) of masses ``mass`` (a buffer of
    n float64 or one for all) on ``mesh`` (its box, side and order; its own interlace
    setting is not used: ``interlace`` is); ``scale``: n_mesh^3 / Σm, ``axes`` the
    host's tables."""
    n_mesh, box = mesh.p.n_mesh, mesh.p.box
    to_mass = (box / n_mesh) ** 3            # the contrast's (mass / length^3) to mass
    first = None
    if interlace:
        mesh.transform(pos_buf, mass, n, 0.0)
        first = np.empty((n_mesh, n_mesh, n_mesh // 2 + 1), np.complex64)
        for i in range(n_mesh):
            first[i] = mesh.slab(i)
    mesh.transform(pos_buf, mass, n, 0.5 if interlace else 0.0)
    n_bins2 = len(edges) + 1
    modes, sum_k, sum_p = np.zeros(n_bins2), np.zeros(n_bins2), np.zeros(n_bins2)
    for i in range(n_mesh):
        d = mesh.slab(i).astype(np.complex128) * to_mass
        if first is not None:
            d, other = first[i].astype(np.complex128) * to_mass, d
        else:
            other = None
        m, k, p = slab_shell_sums(i, d, other, n_mesh, mesh.p.order, scale, edges, axes)
        modes += m
        sum_k += k
        sum_p += p
    return modes, sum_k, sum_p
