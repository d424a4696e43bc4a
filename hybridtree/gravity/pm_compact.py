"""The long-range part of periodic gravity on a compact float32 mesh: the computation of
:class:`.pm_device.DeviceMesh` (and of the float64 host reference :func:`.pm.pm_forces`)
in two float32 arrays of n^3 words and side buffers of n^2, nothing per particle, for
meshes a complex128 one cannot hold (a 1024^3 box on one GPU: 8 GiB here, ~140 GiB
there with 2^30 particles).  Kernels in cl/pm32.cl and cl/fft.cl.

Steps, per mesh (the second of an interlaced pair offset by half a cell, its results
added at half weight: a second pass, no per-particle scratch):

- deposit without a sort: every particle adds its CIC/TSC weights x mass as a 64-bit
  fixed-point integer, lo words in array A and hi words in array B, with 32-bit integer
  atomics (core OpenCL 1.2: the carry detected from the lo word's old value, then
  atomic_inc of the hi word).  Integer sums are exact: the density is the same bits in
  any order.  The unit is 2^-s of a mass with one particle's weight below 2^31 units (s
  from the largest mass's exponent, found on the device with atomic_max);
- in place into A: the float32 density contrast rho - mean (the mean from the exact
  integer total; a float32 FFT of rho with its mean loses 10x, pm_device's docstring);
- the real transform as a complex64 n x n x n/2 transform of the z pairs (cl/fft.cl:
  batched radix-2 lines in local memory, twiddles made in float64), post-processed in
  place to the half spectrum, its kz = n/2 plane in a side buffer;
- per field (phi, a_x, a_y, a_z): the Green's function and gradient of cl/pm.cl (its
  Nyquist convention) from A into B, pre-processed for the inverse, inverse transform
  of B in place, interpolation at the particles with the same window.

Precision (measured, CPU device): the float32 FFT misses numpy's rfftn/irfftn by rms
1.0e-7 (8^3), 1.5e-7 (32^3), 1.7e-7 (64^3), 1.9e-7 (128^3), 2.0e-7 (256^3) relative.
Against :func:`.pm.pm_forces` the rms relative errors are, on a 32^3 lattice displaced
by 1 % of its spacing (32^3 mesh, the hardest case: the force comes from contrasts of
1e-2 under the mean), accelerations 3.3e-7 to 5.0e-7 and potentials 4.2e-7 to 6.4e-7
(CIC, TSC, interlaced or not); on 3000 clustered particles (16^3 and 32^3 meshes)
1.0e-7 to 1.5e-7 and 0.8e-7 to 1.4e-7; 2^17 random particles on 128^3 (TSC,
interlaced) 1.1e-7 and 0.9e-7: float32 rounding, far below the mesh's own force errors
(1e-4 to 1e-2, pm.py's docstring); the tests bound them by 2e-6.  The contrast, not
rho, is transformed (pm_device's docstring measured reikna's complex64 FFT of rho 10x
worse than of the contrast).
Units: G = 1, the caller's lengths and masses.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from ..device.kernels import kernel, launch, option_sets, spread_local
from ..device.runtime import Runtime
from ..device.transfer import download, upload
from .periodic import Periodic
from .pm_device import MeshSizeError, refuse_unless_fits

__all__ = ["CompactMesh", "compact_mesh_bytes", "fft_defines", "MAX_SIDE"]

_SOURCE, _FFT = "pm32.cl", "fft.cl"
#: the largest mesh side (the FFT's longest line, 2048 complex64 = 16 KiB of local memory)
MAX_SIDE = 2048
#: lines per work-group of a strided FFT axis at most (coalesced loads: each work-item
#: of a row reads a neighbour's word)
_MAX_LINES = 16


def _refuse_side(n: int) -> None:
    if not (isinstance(n, (int, np.integer)) and 8 <= n <= MAX_SIDE and n & (n - 1) == 0):
        raise MeshSizeError(f"the float32 PM mesh needs a power-of-two pm_grid from 8 to "
                            f"{MAX_SIDE}, got {n}: take such a pm_grid, or "
                            f'memory.mesh = "float64" for any side')


def compact_mesh_bytes(n_mesh: int) -> tuple[int, int]:
    """(largest single buffer, all buffers) in bytes of a :class:`CompactMesh` of
    ``n_mesh``^3 points, exactly what it allocates: two float32 arrays of n^3, the
    Nyquist plane and the row sums (8 n^2 each), the plane sums, wave numbers and windows
    (8 n each), the twiddles (8 (n / 2 + 1)), the bit reversals (2 (n / 2 + 2 n)) and
    12 bytes of scalars."""
    n = int(n_mesh)
    return 4 * n ** 3, (8 * n ** 3 + 16 * n * n + 24 * n + 8 * (n // 2 + 1)
                        + 2 * (n // 2 + 2 * n) + 12)


def fft_defines(info, n_mesh: int, length: int, contig: bool) -> dict[str, int]:
    """cl/fft.cl's build for lines of ``length`` points of a mesh of side ``n_mesh`` on a
    device of description ``info``: as many lines per work-group as its local memory
    holds (a power of two, at most 16; contiguous lines: as many as make 512 points).
    With 48 KiB (NVIDIA) a strided work-group reads 4 lines of 1024 side by side: one
    32-byte sector per row of complex64."""
    budget = max(info.local_mem_limit() - 1024, 8 * length)
    lines = max(1, min(_MAX_LINES, budget // (8 * length)))
    if contig:
        lines = max(1, min(lines, 512 // length))
    lines = 1 << (lines.bit_length() - 1)
    return {"FFT_L": int(length), "FFT_LOG": int(length).bit_length() - 1, "FFT_B": lines,
            "FFT_N": int(n_mesh), "FFT_CONTIG": int(contig)}


def compact_defines(n_mesh: int, order: int) -> dict[str, int]:
    """cl/pm32.cl's build for a mesh of side ``n_mesh`` and assignment ``order``."""
    return {"PM_N": int(n_mesh), "PM_ORDER": int(order)}


@option_sets
def compact_option_sets(info) -> list[tuple[str, dict]]:
    """Representative builds of cl/pm32.cl and cl/fft.cl: 32^3 with CIC and TSC, and
    256^3, the FFT's lines of both lengths, contiguous and strided."""
    out = [(_SOURCE, compact_defines(n, order)) for n in (32, 256) for order in (2, 3)]
    for n in (32, 256):
        out += [(_FFT, fft_defines(info, n, n // 2, True)),
                (_FFT, fft_defines(info, n, n, False))]
    return out


class CompactMesh:
    """The long-range forces of periodic cube ``p`` (a power-of-two mesh side of 8 to
    2048) on ``rt``'s device (cl_khr_fp64 for the float64 positions).  Buffers and
    builds are made once here; every call reuses them, and grows nothing."""

    def __init__(self, rt: Runtime, p: Periodic) -> None:
        n = p.n_mesh
        _refuse_side(n)
        if not rt.has_fp64:
            raise ValueError(f"the float32 PM mesh needs double precision (cl_khr_fp64) "
                             f"for the float64 positions, which {rt.info.name} lacks")
        refuse_unless_fits(rt, *compact_mesh_bytes(n), f"a {n}^3 PM mesh needs",
                           "take a smaller pm_grid", kind="float32")
        self.rt, self.p = rt, p
        self._defines = compact_defines(n, p.order)
        self.a, self.b = rt.empty(4 * n ** 3), rt.empty(4 * n ** 3)
        self._nyq = rt.empty(8 * n * n)
        self._rows = rt.empty(8 * n * n)
        self._cols = rt.empty(8 * n)
        self._total = rt.empty(8)
        self._mhi = rt.empty(4)
        k1 = 2.0 * np.pi / p.box * np.fft.fftfreq(n, 1.0 / n)    # as pm._kernel
        self._kvec = rt.to_device(k1)
        self._sinc = rt.to_device(np.sinc(k1 * (0.5 * p.box / n) / np.pi))
        tw = np.exp(-2j * np.pi * np.arange(n // 2 + 1) / n)      # float64, then float32
        self._tw = rt.to_device(tw.astype(np.complex64))
        self._scale = np.float64(n / p.box)
        self._fft_plan = self._plan_fft()

    # -- the transforms ---------------------------------------------------------------

    def _plan_fft(self) -> list[tuple]:
        """Per axis (z, y, x of the n x n x n/2 complex view): (defines, work-group,
        bit-reversal table, lines, stride, inner, outer)."""
        n, h, info = self.p.n_mesh, self.p.n_mesh // 2, self.rt.info
        plan = []
        for length, lines, stride, inner, outer in ((h, n * n, 1, 1, h),
                                                    (n, n * h, h, h, n * h),
                                                    (n, n * h, n * h, n * h, 0)):
            d = fft_defines(info, n, length, stride == 1)
            knl = kernel(self.rt, _FFT, "fft_lines", d)
            wg = min(d["FFT_B"] * length // 2, 256, self.rt.max_work_group_size(knl))
            wg = 1 << (wg.bit_length() - 1)
            bits = d["FFT_LOG"]
            rev = np.array([int(f"{j:0{bits}b}"[::-1], 2) for j in range(length)], np.uint16)
            plan.append((d, wg, self.rt.to_device(rev), lines, stride, inner, max(outer, 1)))
        return plan

    def _fft(self, buf: cl.Buffer, direction: int) -> None:
        """The complex n x n x n/2 transform of ``buf`` in place (unnormalised)."""
        plan = self._fft_plan if direction > 0 else self._fft_plan[::-1]
        for d, wg, rev, lines, stride, inner, outer in plan:
            groups = -(-lines // d["FFT_B"])
            launch(self.rt, _FFT, "fft_lines", groups * wg, buf, self._tw, rev, np.uint64(lines),
                   np.uint64(stride), np.uint64(inner), np.uint64(outer),
                   np.int32(direction), defines=d, local=wg, fixed=True)

    def _run(self, name: str, items: int, *args) -> None:
        launch(self.rt, _SOURCE, name, items, *args, defines=self._defines,
               local=spread_local(self.rt.info))

    # -- the steps --------------------------------------------------------------------

    def _deposit(self, pos: cl.Buffer, mass, n: int, shift: float) -> None:
        """A := the float32 density contrast (mass / length^3) of the mesh offset by
        ``shift`` cells, transformed: the half spectrum in A and the Nyquist plane."""
        rt, n_mesh = self.rt, self.p.n_mesh
        q = rt.queue
        for buf in (self.a, self.b):
            cl.enqueue_fill_buffer(q, buf, np.uint32(0), 0, 4 * n_mesh ** 3)
        if isinstance(mass, cl.Buffer):
            cl.enqueue_fill_buffer(q, self._mhi, np.uint32(0), 0, 4)
            self._run("c_mass_max", n, mass, np.uint32(n), self._mhi)
            mass_buf, mass1, has = mass, np.float64(0.0), np.uint32(1)
        else:
            mass1 = np.float64(mass)
            if not (np.isfinite(mass1) and mass1 >= 0):
                raise ValueError(f"the mass must be finite and >= 0, got {mass!r}")
            cl.enqueue_fill_buffer(q, self._mhi, np.uint32(mass1.view(np.uint64) >> 32),
                                   0, 4)
            mass_buf, has = self._mhi, np.uint32(0)
        self._run("c_deposit", n, pos, mass_buf, mass1, has, np.uint32(n), self._scale,
                  np.float64(shift), self._mhi, self.a, self.b)
        self._run("c_rowsum", n_mesh * n_mesh, self.a, self.b, self._rows)
        self._run("c_sum", n_mesh, self._rows, np.uint32(n_mesh), np.uint32(n_mesh),
                  self._cols)
        self._run("c_sum", 1, self._cols, np.uint32(n_mesh), np.uint32(1), self._total)
        self._run("c_contrast", n_mesh ** 3, self.a, self.b, self._total, self._mhi,
                  np.float64((n_mesh / self.p.box) ** 3))
        self._forward()

    def _forward(self) -> None:
        """A (a real field) := its half spectrum, the kz = n / 2 plane in the side buffer."""
        n_mesh = self.p.n_mesh
        self._fft(self.a, 1)
        self._run("c_r2c", n_mesh * n_mesh * (n_mesh // 4 + 1), self.a, self._nyq, self._tw)

    def _field(self, field: int) -> None:
        """B := field ``field`` (0 phi, 1-3 a_x .. a_z) on the mesh, from A."""
        n_mesh = self.p.n_mesh
        self._run("c_green_c2r", n_mesh * n_mesh * (n_mesh // 4 + 1), self.a, self._nyq,
                  self._tw, np.uint32(field), np.float64(self.p.rs ** 2), self._kvec,
                  self._sinc, self.b)
        self._fft(self.b, -1)

    def _forces(self, pos: cl.Buffer, mass, n: int, mode: int, acc, pot, part4) -> None:
        n = int(n)
        if n <= 0:
            return
        if n >= 2 ** 32:
            raise ValueError(f"n must be below 2^32, got {n}")
        shifts = (0.0, 0.5) if self.p.interlace else (0.0,)
        factor = np.float64(1.0 / len(shifts))
        for shift in shifts:
            self._deposit(pos, mass, n, shift)
            for field in range(4):
                self._field(field)
                self._run("c_interp", n, pos, np.uint32(n), self._scale, np.float64(shift),
                          self.b, np.uint32(field), factor, np.uint32(mode), acc, pot, part4)

    def add_forces(self, pos_buf: cl.Buffer, mass: cl.Buffer | float, n: int,
                   acc_buf: cl.Buffer, pot_buf: cl.Buffer) -> None:
        """Add the long-range accelerations (length / time^2, G = 1) and potentials
        (length^2 / time^2) of the ``n`` particles at themselves to ``acc_buf`` (float64,
        n x 3 AoS) and ``pot_buf`` (float64, n): :meth:`.DeviceMesh.add_forces` without
        other sinks.  ``pos_buf``: n x 3 float64 AoS, any periodic image; ``mass``: a
        buffer of n float64 masses (>= 0) or one mass for all.  Enqueued on the
        runtime's queue, nothing waits; the same inputs give the same bits, in any
        order of the particles (each particle's own results)."""
        self._forces(pos_buf, mass, n, 0, acc_buf, pot_buf, acc_buf)

    def add_forces4(self, pos_buf: cl.Buffer, mass: cl.Buffer | float, n: int,
                    part4_buf: cl.Buffer) -> None:
        """Add the long-range (a_x, a_y, a_z, pot) of :meth:`add_forces` to ``part4_buf``
        (float32 float4 per particle, at its own index: a device state's part,
        :mod:`hybridtree.state.parts4`), each mesh's term rounded to float32 once."""
        self._forces(pos_buf, mass, n, 1, part4_buf, part4_buf, part4_buf)

    def forces(self, pos: np.ndarray, mass: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
        """Long-range accelerations (n, 3) and potentials (n,) at the sources ``pos``
        (n, 3) of masses ``mass`` ((n,) or one for all); float64 host arrays, the meaning
        of :func:`.pm.pm_forces`."""
        rt = self.rt
        pos = np.ascontiguousarray(pos, np.float64).reshape(-1, 3)
        n = len(pos)
        acc, pot = np.zeros((n, 3)), np.zeros(n)
        if n == 0:
            return acc, pot
        scalar = np.ndim(mass) == 0
        arrays = [pos, acc, pot] + ([] if scalar else [np.asarray(mass, np.float64)])
        bufs = upload(rt, arrays, [None] * len(arrays))
        self.add_forces(bufs[0], float(mass) if scalar else bufs[3], n, bufs[1], bufs[2])
        download(rt, [(bufs[1], acc), (bufs[2], pot)])
        rt.queue.finish()
        return acc, pot

    # -- the density's spectrum (P(k): hybridtree.analysis.power_compact) -------------

    def transform(self, pos_buf: cl.Buffer, mass: cl.Buffer | float, n: int,
                  shift: float = 0.0) -> None:
        """Deposit the ``n`` particles (as :meth:`add_forces`) on the mesh offset by
        ``shift`` cells and transform: the half spectrum of the density contrast (mass /
        length^3; numpy's unnormalised rfftn, k = 0 about 0) stays on the device for
        :meth:`slab` to read."""
        if not 0 < int(n) < 2 ** 32:
            raise ValueError(f"n must be in [1, 2^32), got {n}")
        self._deposit(pos_buf, mass, int(n), shift)

    def slab(self, i: int) -> np.ndarray:
        """x-slab ``i`` of the half spectrum :meth:`transform` left: (n, n / 2 + 1)
        complex64, its last column the kz = n / 2 plane's (a download of 4 n^2 bytes)."""
        n, h, q = self.p.n_mesh, self.p.n_mesh // 2, self.rt.queue
        part, nyq = np.empty((n, h), np.complex64), np.empty(n, np.complex64)
        cl.enqueue_copy(q, part, self.a, src_offset=8 * n * h * int(i))
        cl.enqueue_copy(q, nyq, self._nyq, src_offset=8 * n * int(i))
        return np.concatenate([part, nyq[:, None]], axis=1)

    # -- the transforms alone (the tests' check against numpy) ------------------------

    def rfft(self, field: np.ndarray) -> np.ndarray:
        """numpy's rfftn of the real (n, n, n) ``field``, in float32 on the device."""
        n = self.p.n_mesh
        rt = self.rt
        cl.enqueue_copy(rt.queue, self.a, np.ascontiguousarray(field, np.float32))
        self._forward()
        half = np.empty((n, n, n // 2), np.complex64)
        nyq = np.empty((n, n), np.complex64)
        download(rt, [(self.a, half), (self._nyq, nyq)])
        rt.queue.finish()
        return np.concatenate([half, nyq[:, :, None]], axis=2)

    def irfft(self, half: np.ndarray) -> np.ndarray:
        """numpy's irfftn of the half spectrum (n, n, n / 2 + 1), in float32 on the
        device."""
        n = self.p.n_mesh
        rt = self.rt
        half = np.asarray(half, np.complex64)
        cl.enqueue_copy(rt.queue, self.a, np.ascontiguousarray(half[:, :, :-1]))
        cl.enqueue_copy(rt.queue, self._nyq, np.ascontiguousarray(half[:, :, -1]))
        self._field(4)
        out = np.empty((n, n, n), np.float32)
        download(rt, [(self.b, out)])
        rt.queue.finish()
        return out
