"""The long-range part of periodic gravity on a mesh (TreePM, :mod:`.periodic`) on the
OpenCL device: the same computation as :func:`hybridtree.gravity.pm.pm_forces` (the
float64 host reference), with the FFTs of ``reikna`` (a pure-Python OpenCL library).

Steps (kernels in cl/pm.cl), all on the device, nothing read back:

- mass assignment (CIC or TSC) by gather, not scatter, so that the density is the same
  bits on every run without floating-point atomics: each particle's cell is its sort key
  (:func:`hybridtree.gravity.tree.device_sort.radix_sort`, stable), each cell's range
  of sorted particles is found, and each mesh point sums, in float64 and in a fixed
  order, the weights of the particles of the 8 (CIC) or 27 (TSC) cells whose clouds
  reach it (a work-item fills a few points along z, reading each cell once).  With interlacing the second mesh (offset by half a cell) is sorted and
  gathered on its own and stored as the imaginary part of the same complex array;
- one complex-to-complex FFT (complex128) of that array, the two meshes' spectra being
  separated again by Hermitian symmetry;
- per mesh, the Green's function -4 pi exp(-k^2 r_s^2) / (k^2 W^2) and the gradient
  -i k phi in k-space, written as two complex spectra whose inverse FFTs give two real
  fields each ((phi, a_x) and (a_y, a_z)); on the Nyquist planes the gradient's factor
  is what numpy's irfftn makes of the host's half spectrum, so that the results agree
  there too;
- interpolation at the sinks with the same window, the two meshes averaged, the result
  added to the caller's acceleration and potential buffers.

Precision: float64 throughout, FFTs included.  With a complex64 FFT (everything else
float64) the device missed the host by rms 2e-5 to 7e-5 in the accelerations and 7e-5
to 1.4e-4 in the potentials on a 32^3 lattice displaced by 1 % of its spacing (32^3 and
64^3 meshes, CIC and TSC), where the mean density dwarfs the contrasts the force comes
from; subtracting the mean first still left 7e-6 to 4e-5 on the 64^3 mesh.
complex128 gives ~1e-15 there, and on the CPU device its FFTs cost about twice
complex64's, a minor part of the total.  Units: G = 1, the caller's lengths and masses.
"""

from __future__ import annotations

import warnings

import numpy as np
import pyopencl as cl

from ..errors import HybridtreeError
from ..device.kernels import launch, option_sets, spread_local
from ..device.runtime import Runtime
from ..device.transfer import Workspace, download, upload
from .periodic import Periodic
from .tree.device_sort import MAX_N, radix_sort

__all__ = ["DeviceMesh", "MeshKernels", "MeshSizeError", "mesh_bytes", "mesh_words"]

_SOURCE = "pm.cl"
#: mesh points along z per work-item of the assignment (cl/pm.cl, pm_assign): each
#: particle is read (ZB + 2) / ZB times per column instead of 3 times (TSC); 4 measured
#: fastest of 1-32 on the CPU device (2^20 particles, 128^3), by a loaded machine's noise
_ZB = 4
#: complex mesh arrays a DeviceMesh holds: the density and its transform, two field pairs
_MESH_ARRAYS = 3


def mesh_bytes(n_mesh: int) -> tuple[int, int]:
    """(largest single buffer, all mesh buffers) in bytes of a DeviceMesh of
    ``n_mesh``^3 points: its complex128 arrays, the cell starts and reikna's FFT scratch
    (measured with reikna 0.9: one mesh array for a power of two; for other sides
    Bluestein's passes, up to two mesh arrays and seven of M / n_mesh times that size,
    M the power of two >= 2 n_mesh - 1)."""
    n = int(n_mesh)
    one = 16 * n ** 3
    if n & (n - 1) == 0:
        largest, scratch = one, one
    else:
        pad = 1 << (2 * n - 2).bit_length()
        largest, scratch = one * pad // n, 2 * one + 7 * (one * pad // n)
    return largest, _MESH_ARRAYS * one + scratch + 4 * (n ** 3 + 1)


def device_memory(rt: Runtime) -> tuple[int, int]:
    """(largest buffer, all global memory) in bytes that ``rt``'s device allows."""
    return (rt.info.max_mem_alloc_size or int(rt.device.max_mem_alloc_size),
            rt.info.global_mem_size or int(rt.device.global_mem_size))


class MeshSizeError(HybridtreeError, ValueError):
    """A PM mesh (gravity.pm_grid) that the device cannot hold: the user's to change."""


def refuse_unless_fits(rt: Runtime, one: int, total: int, what: str, remedy: str,
                       kind: str = "complex128") -> None:
    """Refuse (:class:`MeshSizeError`), before allocating anything, mesh buffers the
    device cannot hold: ``one`` bytes the largest, ``total`` all of them; ``what`` says
    whose ("a 64^3 PM mesh needs"), ``remedy`` what the user can do, ``kind`` the
    buffers' type."""
    max_alloc, global_mem = device_memory(rt)
    if one > max_alloc or total > global_mem:
        raise MeshSizeError(mesh_words(what, kind, one, total, rt.info.name, max_alloc,
                                       global_mem, remedy))


def mesh_words(what: str, kind: str, one: int, total: int, device: str, max_alloc: int,
               global_mem: int, remedy: str) -> str:
    """The refusal of mesh buffers a device cannot hold (:func:`refuse_unless_fits`, and
    the memory plan's before any runtime is made: hybridtree/run/plan.py): ``one`` and
    ``total`` bytes asked of ``device``, which allows ``max_alloc`` per buffer and
    ``global_mem`` in all."""
    return (f"{what} {kind} buffers of up to {one / 2**20:.0f} MiB ({total / 2**20:.0f} "
            f"MiB in all) but {device} allows {max_alloc / 2**20:.0f} MiB per buffer "
            f"({global_mem / 2**20:.0f} MiB in all): {remedy}")


def _check_fits(rt: Runtime, n_mesh: int) -> None:
    """Refuse, before allocating anything, a mesh the device cannot hold."""
    refuse_unless_fits(rt, *mesh_bytes(n_mesh), f"a {n_mesh}^3 PM mesh needs",
                       "take a smaller pm_grid")


def _reikna(rt: Runtime):
    """reikna's OpenCL API wrapped around ``rt``'s queue, and its FFT class."""
    try:
        from reikna.cluda import ocl_api
        from reikna.cluda.tempalloc import TrivialManager
        from reikna.fft import FFT
    except ImportError as exc:
        raise ImportError("the device PM mesh needs the 'reikna' package "
                          "(pip install reikna)") from exc
    # the FFT's scratch in buffers of its own: reikna's default manager, which shares
    # scratch between computations, raises at interpreter exit when it frees them
    return ocl_api().Thread(rt.queue, temp_alloc={"cls": TrivialManager}), FFT


def pm_defines(n_mesh: int, order: int) -> dict[str, int]:
    """cl/pm.cl's build for a mesh of ``n_mesh`` points per side and assignment ``order``."""
    return {"PM_N": int(n_mesh), "PM_ORDER": int(order), "PM_ZB": min(_ZB, int(n_mesh))}


@option_sets
def pm_option_sets(info) -> list[tuple[str, dict]]:
    """Representative builds of cl/pm.cl (the mesh side is a define, one build per run's
    PMGRID): the default 32³ mesh with CIC and TSC, and a larger one."""
    return [(_SOURCE, pm_defines(n, order)) for n in (32, 256) for order in (2, 3)]


class MeshKernels:
    """What every device mesh of periodic cube ``p`` shares (cl/pm.cl): its build, the
    wave numbers and windows per axis, and the assignment and interpolation on a window
    of x-planes (the whole mesh, or a process's part of it: :mod:`.pm_slabs`).  Needs
    cl_khr_fp64."""

    def __init__(self, rt: Runtime, p: Periodic) -> None:
        if not rt.has_fp64:
            raise ValueError(f"the device PM mesh needs double precision (cl_khr_fp64), "
                             f"which {rt.info.name} lacks")
        self.rt, self.p = rt, p
        n = p.n_mesh
        self._defines = pm_defines(n, p.order)
        self._thr, self._fft_class = _reikna(rt)
        # wave numbers 2 pi / L fftfreq and the window per axis, np.sinc(k h / (2 pi)),
        # exactly as pm._kernel makes them
        k1 = 2.0 * np.pi / p.box * np.fft.fftfreq(n, 1.0 / n)
        self._kvec = rt.to_device(k1)
        self._sinc = rt.to_device(np.sinc(k1 * (0.5 * p.box / n) / np.pi))
        self._work = Workspace(rt)
        self._key_bits = max(1, (n ** 3 - 1).bit_length())
        self._scale = np.float64(n / p.box)         # as the host: pos * (n / box) + shift

    def _compile_fft(self, like, axes: tuple[int, ...]):
        """reikna's FFT over ``axes`` of arrays shaped as ``like``, compiled."""
        with warnings.catch_warnings():
            # reikna's builds leave compiler remarks (pyopencl warns about any); the
            # build itself fails loudly when it fails
            warnings.simplefilter("ignore", cl.CompilerWarning)
            return self._fft_class(like, axes=axes).compile(self._thr)

    def _run(self, name: str, items: int, *args) -> None:
        """Enqueue kernel ``name`` of cl/pm.cl over ``items`` work-items, through the one
        launcher (the work-group the element-wise kernels prefer, lowered to what the
        built kernel allows)."""
        launch(self.rt, _SOURCE, name, items, *args, defines=self._defines,
               local=spread_local(self.rt.info))

    def _sort(self, pos: cl.Buffer, n: int, shift: float,
              w0: int = 0) -> tuple[cl.Buffer, cl.Buffer]:
        """(sorted cell keys, order) of ``n`` positions on the mesh offset by ``shift``
        cells, x counted from plane ``w0``; workspace buffers, valid until the next sort."""
        keys = self._work("pm_keys", 8 * n)
        self._run("pm_keys", n, pos, np.uint32(n), self._scale, np.float64(shift),
                  np.uint32(w0), keys)
        return radix_sort(self.rt, keys, n, self._key_bits, alloc=self._work)

    def _assign(self, pos: cl.Buffer, mass: cl.Buffer, n: int, shift: float, comp: int,
                target: cl.Buffer, w0: int = 0, nx: int | None = None) -> cl.Buffer:
        """Component ``comp`` (0 real, 1 imaginary) of the complex array ``target`` := the
        density (mass / length^3) of the mesh offset by ``shift`` cells on the ``nx``
        x-planes from plane ``w0`` (default: the whole mesh, which then wraps in x; a
        window must hold every plane the clouds reach); returns the particles' order by
        cell (valid until the next sort)."""
        u32, n_mesh = np.uint32, self.p.n_mesh
        nx = n_mesh if nx is None else int(nx)
        assert 0 < nx <= n_mesh and (nx < n_mesh or w0 == 0), (w0, nx)
        sorted_keys, order = self._sort(pos, n, shift, w0)
        part = self._work("pm_part", 32 * n)
        self._run("pm_sorted", n, order, pos, mass, u32(n), self._scale, np.float64(shift),
                  part)
        cells = nx * n_mesh * n_mesh
        start = self._work("pm_start", 4 * (cells + 1))
        self._run("pm_cell_start", n + 1, sorted_keys, u32(n), np.uint64(cells), start)
        norm = np.float64((n_mesh / self.p.box) ** 3)
        zb = self._defines["PM_ZB"]
        self._run("pm_assign", nx * n_mesh * -(-n_mesh // zb), part, start, u32(comp), norm,
                  u32(nx), u32(nx == n_mesh), target)
        return order

    def _interp(self, order: cl.Buffer, sinks: cl.Buffer, m: int, shift: float, f1, f2,
                mode: int, tmp: cl.Buffer, acc: cl.Buffer, pot: cl.Buffer, w0: int = 0) -> None:
        """cl/pm.cl ``pm_interp`` of fields ``f1``, ``f2`` (complex, on the window from
        plane ``w0``, or the whole mesh) at the ``m`` sinks taken in ``order``."""
        self._run("pm_interp", m, order, sinks, np.uint32(m), self._scale, np.float64(shift),
                  np.uint32(w0), f1, f2, np.uint32(mode), tmp, acc, pot)


class DeviceMesh(MeshKernels):
    """The long-range forces of one periodic cube ``p`` on ``rt``'s device (which must
    have cl_khr_fp64), the whole mesh on this process (many processes share one mesh in
    slabs: :class:`.pm_slabs.SlabMesh`).  The mesh buffers and the compiled FFT are made
    once here and reused by every call; per-particle scratch grows on demand and is
    kept."""

    def __init__(self, rt: Runtime, p: Periodic) -> None:
        _check_fits(rt, p.n_mesh)
        super().__init__(rt, p)
        n = p.n_mesh
        self.cells = n ** 3
        self._mesh = [self._thr.array((n, n, n), np.complex128) for _ in range(_MESH_ARRAYS)]
        self._fft = self._compile_fft(self._mesh[0], (0, 1, 2))

    # -- the steps ----------------------------------------------------------------------

    def _fields(self, mesh: int) -> None:
        """Mesh arrays 1 and 2 := (phi, a_x) and (a_y, a_z) of mesh ``mesh`` (0, 1) from
        the transformed density in array 0."""
        z, f1, f2 = self._mesh
        self._run("pm_green", self.cells, z.data, np.uint32(mesh),
                  np.float64(self.p.rs ** 2), self._kvec, self._sinc, f1.data, f2.data)
        self._fft(f1, f1, 1)        # reikna's inverse divides by N^3, as irfftn
        self._fft(f2, f2, 1)

    def add_forces(self, pos_buf: cl.Buffer, mass_buf: cl.Buffer, n: int,
                   acc_buf: cl.Buffer, pot_buf: cl.Buffer,
                   sinks: tuple[cl.Buffer, int] | None = None) -> None:
        """Add the long-range accelerations (length / time^2, G = 1) and potentials
        (length^2 / time^2) of the ``n`` sources to ``acc_buf`` (float64, m x 3 AoS) and
        ``pot_buf`` (float64, m) at the sinks: ``sinks`` = (buffer of m x 3 float64
        positions, m), or the sources themselves (m = n) when None.

        ``pos_buf``: n x 3 float64 AoS (any periodic image: positions are wrapped on the
        mesh), ``mass_buf``: n float64.  Everything is enqueued on the runtime's queue
        and nothing waits.  The same inputs give the same bits every time; the mesh's
        term of a source at itself is included, as in :func:`.pm.pm_forces`."""
        n = int(n)
        if not 0 <= n <= MAX_N:
            raise ValueError(f"n must be in [0, {MAX_N}], got {n}")
        sink_buf, m = (pos_buf, n) if sinks is None else (sinks[0], int(sinks[1]))
        if n == 0 or m == 0:
            return                  # no sources: the neutral background alone, no force
        shifts = (0.0, 0.5) if self.p.interlace else (0.0,)
        z = self._mesh[0]
        if len(shifts) == 1:        # the imaginary half stays empty
            cl.enqueue_fill_buffer(self.rt.queue, z.data, np.float64(0.0), 0, z.nbytes)
        for comp, shift in enumerate(shifts):
            order = self._assign(pos_buf, mass_buf, n, shift, comp, z.data)
        if sinks is not None:       # sinks in cell order too: see pm_interp
            order = self._sort(sink_buf, m, 0.0)[1]
        self._fft(z, z, 0)
        tmp = self._work("pm_tmp", 32 * m if len(shifts) == 2 else 32)
        for mesh, shift in enumerate(shifts):
            self._fields(mesh)
            # one mesh: add; two: keep the first, add the mean with the second
            mode = 0 if len(shifts) == 1 else 1 + mesh
            self._interp(order, sink_buf, m, shift, self._mesh[1].data, self._mesh[2].data,
                         mode, tmp, acc_buf, pot_buf)

    def forces(self, pos: np.ndarray, mass: np.ndarray | float,
               sinks: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Long-range accelerations (m, 3) and potentials (m,) at ``sinks`` (default: the
        sources ``pos``, (n, 3)) from sources of masses ``mass`` (n,) or one mass for
        all; float64 host arrays in and out, the meaning of :func:`.pm.pm_forces`."""
        rt = self.rt
        pos = np.asarray(pos, np.float64).reshape(-1, 3)
        n = len(pos)
        mass = np.broadcast_to(np.asarray(mass, np.float64), (n,))
        at = pos if sinks is None else np.asarray(sinks, np.float64).reshape(-1, 3)
        acc, pot = np.zeros((len(at), 3)), np.zeros(len(at))
        arrays = [pos, mass, acc, pot] + ([] if sinks is None else [at])
        bufs = upload(rt, arrays, [None] * len(arrays))
        self.add_forces(bufs[0], bufs[1], n, bufs[2], bufs[3],
                        None if sinks is None else (bufs[4], len(at)))
        download(rt, [(bufs[2], acc), (bufs[3], pot)])
        rt.queue.finish()
        return acc, pot
