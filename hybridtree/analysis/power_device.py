"""The mass assignment and FFT of :func:`hybridtree.analysis.power.power_spectrum` on an
OpenCL device: the periodic TreePM mesh's own kernels (cl/pm.cl: the particles sorted by
cell, a gather deposit in float64 whose sums run in a fixed order) and reikna's FFT.

Both meshes of the interlaced estimator share one complex128 array, the unshifted one as
its real part and the one shifted by half a cell as its imaginary part: one complex FFT
Z = F1 + i F2 gives both transforms of real fields, F1(k) = [Z(k) + Z(−k)*] / 2 and
F2(k) = [Z(k) − Z(−k)*] / (2i), taken apart on the host over the rfft half.  Float64
throughout: the result equals the host's to rounding (the sums run in another order).
Needs cl_khr_fp64; a mesh of 8 points a side or more.
"""

from __future__ import annotations

import os

import numpy as np
import pyopencl as cl

from ..device.runtime import Runtime
from ..device.transfer import upload
from ..gravity.periodic import Periodic
from ..gravity.pm_device import MeshKernels, mesh_bytes, refuse_unless_fits
from ..gravity.tree.device_sort import MAX_N

__all__ = ["analysis_runtime", "device_meshes", "device_slab", "usable"]


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


def device_meshes(rt: Runtime, pos: np.ndarray, mass: np.ndarray, box: float, n_mesh: int,
                  order: int, interlace: bool) -> np.ndarray:
    """Z (n, n, n, complex128) = F1 + i F2 with F1 and F2 the DFTs of the mass meshes
    (mass per mesh point, the unit of ``mass``) of the particles at ``pos`` ((N, 3),
    length, any image) in the periodic cube of side ``box``: F1 of the mesh whose points
    sit at j box / n, F2 (with ``interlace``, else 0) of the one at j box / n − box / (2 n);
    :func:`device_slab` takes them apart.  ``order`` 2 (CIC) or 3 (TSC)."""
    n = int(n_mesh)
    one, total = mesh_bytes(n)
    refuse_unless_fits(rt, one, total + 48 * len(pos), f"P(k) on a {n}^3 mesh needs",
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
    fft(z, z, 0)
    full = z.get()
    rt.queue.finish()
    full *= (box / n) ** 3          # density (mass / length^3) back to mass per point
    return full


def device_slab(full: np.ndarray, i: int, interlace: bool
                ) -> tuple[np.ndarray, np.ndarray | None]:
    """x-slab ``i`` of the rfft halves (n, n // 2 + 1) of F1 and F2 (None without
    ``interlace``) of :func:`device_meshes`' Z: F1(k) = [Z(k) + Z(−k)*] / 2,
    F2(k) = [Z(k) − Z(−k)*] / (2i); what ``rfftn`` of
    :func:`hybridtree.gravity.pm.assign_mass` gives (shift 0 and box / (2 n)), to
    rounding."""
    n = full.shape[0]
    half = n // 2 + 1
    zk = full[i, :, :half]
    if not interlace:
        return zk, None
    neg = (-np.arange(n)) % n
    mirror = np.conj(full[neg[i]][neg][:, neg[:half]])         # Z(-k)*
    return 0.5 * (zk + mirror), -0.5j * (zk - mirror)
