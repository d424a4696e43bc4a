"""The long-range mesh of a periodic box shared by many processes in slabs, as GADGET's
PM does it (Springel 2005; GADGET-4's slab decomposition of PMGRID): no process holds
the whole N_mesh³ mesh, and what travels between processes grows as N_mesh³ / K per
process, not N_mesh³.

Layout (K processes, N = N_mesh):

- process r owns the x-planes [r N / K, (r + 1) N / K) of the mesh (its slab), and after
  the transpose the y-planes Y_r with every x and z.  Y_r is made of whole pairs
  {j, N - j}, so that a wave vector's mirror -k, which separates the two interlaced meshes
  held as one complex array (cl/pm.cl ``green_point``), lies on the same process;
- a process's particles reach a *window* of x-planes: those between its lowest and
  highest particle's clouds (both interlaced meshes), a range that wraps around the box,
  or the whole mesh when they reach every plane.

One call (collective):

1. the density of this process's particles on its window (device), read back; each plane
   goes to the process owning it (``Comm.alltoallv``), which adds the planes it received
   in rank order (the same bits on every run);
2. the slab on the device, FFT over y and z (reikna), read back; the transpose: to
   process r the lines [slab x, Y_r, all z]; what arrives, stacked in x, is all x for Y_r;
   on the device, FFT over x;
3. per mesh (two when interlaced): the Green's function and gradients on this process's
   part (cl/pm.cl ``pm_green_part``), inverse FFT over x, read back, transposed back to
   slabs, inverse FFT over y and z, read back; each process gets the planes of its window
   from their owners, and interpolates at its particles.

The result is the one-process mesh's (:class:`.pm_device.DeviceMesh`) to rounding: the
density's sums over processes and the FFTs' passes run in another order.  Every mesh
array travels through the host, as the whole-mesh sum did before this.
Units: G = 1, the caller's.
"""

from __future__ import annotations

import math

import numpy as np
import pyopencl as cl

from ..device.runtime import Runtime
from .tree.device_build import device_extent
from .periodic import Periodic
from .pm_device import MeshKernels, device_memory, refuse_unless_fits

__all__ = ["SlabMesh", "slab_bounds", "y_planes"]


def slab_bounds(n_mesh: int, size: int) -> np.ndarray:
    """First x-plane of every process's slab and the end: (size + 1,) ints."""
    return np.array([r * n_mesh // size for r in range(size + 1)], np.int64)


def y_planes(n_mesh: int, size: int) -> list[np.ndarray]:
    """The y-planes of every process after the transpose: whole pairs {j, N - j} (0 and,
    for even N, N / 2 alone), the pairs dealt out in blocks of consecutive j."""
    pairs = [[0]] + [[j, n_mesh - j] for j in range(1, (n_mesh + 1) // 2)]
    if n_mesh % 2 == 0:
        pairs.append([n_mesh // 2])
    owner = [q * size // len(pairs) for q in range(len(pairs))]
    return [np.array(sorted(j for q, pair in enumerate(pairs) if owner[q] == r for j in pair),
                     np.int64) for r in range(size)]


def _window_planes(window: tuple[int, int], n_mesh: int) -> np.ndarray:
    """The x-planes of a window (w0, nx), in window order."""
    w0, nx = window
    return (w0 + np.arange(nx)) % n_mesh


class SlabMesh(MeshKernels):
    """The long-range forces of periodic cube ``p`` over the processes of ``comm``
    (:class:`hybridtree.parallel.comm.Comm`, K > 1), each process's part on ``rt``'s
    device (module docstring).  Needs N_mesh >= 2 K (every process owns x- and y-planes)."""

    def __init__(self, rt: Runtime, p: Periodic, comm) -> None:
        n, size = p.n_mesh, comm.size
        if n < 2 * size:
            raise ValueError(f"a {n}^3 PM mesh in slabs needs pm_grid >= 2 x processes "
                             f"({2 * size}): every process owns x- and y-planes of it")
        self._x = slab_bounds(n, size)
        self._ys = y_planes(n, size)
        r = comm.rank
        self.ns, ys = int(self._x[r + 1] - self._x[r]), self._ys[r]
        self.ny = len(ys)
        _check_part_fits(rt, n, self.ns, self.ny)
        super().__init__(rt, p)
        self.comm = comm
        place = {int(j): i for i, j in enumerate(ys)}
        self._ky = rt.to_device(ys.astype(np.uint32))
        self._mirror = rt.to_device(np.array([place[(n - int(j)) % n] for j in ys], np.uint32))
        thr = self._thr
        self._slabs = [thr.array((self.ns, n, n), np.complex128) for _ in range(2)]
        self._parts = [thr.array((n, self.ny, n), np.complex128) for _ in range(3)]
        self._fft_yz = self._compile_fft(self._slabs[0], (1, 2))
        self._fft_x = self._compile_fft(self._parts[0], (0,))
        self.window = (0, 0)        # the last call's (first x-plane, planes) of this process

    # -- where the planes are ---------------------------------------------------------

    def _window(self, pos: cl.Buffer, n: int) -> tuple[int, int]:
        """(first x-plane, planes) of the window this process's particles reach; (0, 0)
        without particles, (0, N) when they reach every plane."""
        if n == 0:
            return 0, 0
        lo, hi = device_extent(self.rt, pos, n, self._work)
        # cells: floor(u) (CIC) or rint(u) (TSC) of u = x N / L + shift, shift 0 or 0.5;
        # the clouds reach one plane below and (TSC) one above: two planes of margin
        first = math.floor(float(lo[0]) * self._scale) - 2
        end = math.floor(float(hi[0]) * self._scale) + 3
        n_mesh = self.p.n_mesh
        if end - first >= n_mesh:
            return 0, n_mesh
        return first % n_mesh, end - first

    def _shared(self, window: tuple[int, int], owner: int) -> np.ndarray:
        """The planes of ``window`` that process ``owner``'s slab holds, ascending."""
        planes = np.sort(_window_planes(window, self.p.n_mesh))
        return planes[(planes >= self._x[owner]) & (planes < self._x[owner + 1])]

    # -- the steps --------------------------------------------------------------------

    def _to_owners(self, density: np.ndarray, window: tuple[int, int],
                   windows: list) -> np.ndarray:
        """This process's slab of the density: the window's planes sent to their owners,
        those received added in rank order."""
        comm, n = self.comm, self.p.n_mesh
        send = [self._shared(window, r) for r in range(comm.size)]
        rows = np.concatenate([density[(planes - window[0]) % n] for planes in send])
        got = comm.alltoallv(rows, np.array([len(planes) for planes in send]))
        slab = np.zeros((self.ns, n, n), np.complex128)
        x0, k = self._x[comm.rank], 0
        for w in windows:                               # rank order: the same sum always
            planes = self._shared(w, comm.rank)
            slab[planes - x0] += got[k:k + len(planes)]
            k += len(planes)
        return slab

    def _transpose(self, slab: np.ndarray) -> np.ndarray:
        """Slab (ns, N, N) -> this process's y-planes with every x: (N, ny, N)."""
        comm, n = self.comm, self.p.n_mesh
        rows = np.concatenate([slab[:, ys, :].reshape(-1, n) for ys in self._ys])
        got = comm.alltoallv(rows, np.array([self.ns * len(ys) for ys in self._ys]))
        return got.reshape(n, self.ny, n)               # the slabs arrive in x order

    def _transpose_back(self, part: np.ndarray) -> np.ndarray:
        """This process's (N, ny, N) -> its slab (ns, N, N) of the same array."""
        comm, n, x = self.comm, self.p.n_mesh, self._x
        rows = part.reshape(n, self.ny * n)
        got = comm.alltoallv(rows.reshape(-1, n),
                             np.array([(x[s + 1] - x[s]) * self.ny for s in range(comm.size)]))
        slab = np.empty((self.ns, n, n), np.complex128)
        k = 0
        for ys in self._ys:
            block = got[k:k + self.ns * len(ys)].reshape(self.ns, len(ys), n)
            slab[:, ys, :] = block
            k += self.ns * len(ys)
        return slab

    def _to_windows(self, f1: np.ndarray, f2: np.ndarray, window: tuple[int, int],
                    windows: list) -> np.ndarray:
        """The planes of this process's window of two field slabs, from their owners:
        (nx, 2, N, N) in window order."""
        comm, n = self.comm, self.p.n_mesh
        x0 = self._x[comm.rank]
        send = [self._shared(w, comm.rank) for w in windows]
        rows = np.concatenate([np.stack([f1[planes - x0], f2[planes - x0]], axis=1)
                               for planes in send])
        got = comm.alltoallv(rows, np.array([len(planes) for planes in send]))
        out = np.empty((window[1], 2, n, n), np.complex128)
        k = 0
        for r in range(comm.size):
            planes = self._shared(window, r)
            out[(planes - window[0]) % n] = got[k:k + len(planes)]
            k += len(planes)
        return out

    def _put(self, arr, host: np.ndarray) -> None:
        cl.enqueue_copy(self.rt.queue, arr.data, np.ascontiguousarray(host))

    def _get(self, arr) -> np.ndarray:
        out = np.empty(arr.shape, np.complex128)
        cl.enqueue_copy(self.rt.queue, out, arr.data)
        return out

    def add_forces(self, pos_buf: cl.Buffer, mass_buf: cl.Buffer, n: int,
                   acc_buf: cl.Buffer, pot_buf: cl.Buffer) -> None:
        """Add the long-range accelerations (length / time^2, G = 1) and potentials
        (length^2 / time^2) of every process's sources to this process's ``n``
        particles, which are its sources and its sinks (float64 device buffers: pos and
        acc n x 3 AoS, mass and pot n).  Collective; the mesh's term of a source at
        itself is included, as in :func:`.pm.pm_forces`."""
        rt, p, n_mesh = self.rt, self.p, self.p.n_mesh
        shifts = (0.0, 0.5) if p.interlace else (0.0,)
        window = self.window = self._window(pos_buf, int(n))
        plane = 16 * n_mesh * n_mesh
        max_alloc, global_mem = device_memory(rt)
        room = min(max_alloc, global_mem // 4)
        fits = 2 * plane * window[1] <= room
        windows = self.comm.allgather((window, fits))
        if not all(f for _, f in windows):
            bad = [r for r, (_, f) in enumerate(windows) if not f]
            raise ValueError(f"the PM mesh's window of process(es) {bad} does not fit their "
                             f"device: take a smaller pm_grid or more processes")
        windows = [w for w, _ in windows]
        order = None
        if n:
            wz = self._work("pm_window", plane * window[1])
            cl.enqueue_fill_buffer(rt.queue, wz, np.float64(0.0), 0, plane * window[1])
            for comp, shift in enumerate(shifts):
                order = self._assign(pos_buf, mass_buf, int(n), shift, comp, wz, window[0],
                                     window[1])
            density = np.empty((window[1], n_mesh, n_mesh), np.complex128)
            cl.enqueue_copy(rt.queue, density, wz)
        else:
            density = np.empty((0, n_mesh, n_mesh), np.complex128)
        slab, part = self._slabs[0], self._parts[0]
        self._put(slab, self._to_owners(density, window, windows))
        self._fft_yz(slab, slab, 0)
        self._put(part, self._transpose(self._get(slab)))
        self._fft_x(part, part, 0)
        tmp = self._work("pm_tmp", 32 * max(int(n), 1))
        for mesh, shift in enumerate(shifts):
            f1, f2 = self._parts[1], self._parts[2]
            self._run("pm_green_part", n_mesh * self.ny * n_mesh, part.data,
                      np.uint32(self.ny), self._ky, self._mirror, np.uint32(mesh),
                      np.float64(p.rs ** 2), self._kvec, self._sinc, f1.data, f2.data)
            fields = []
            for f, s in zip((f1, f2), self._slabs):
                self._fft_x(f, f, 1)           # reikna's inverses divide by N and N², as irfftn
                self._put(s, self._transpose_back(self._get(f)))
                self._fft_yz(s, s, 1)
                fields.append(self._get(s))
            near = self._to_windows(fields[0], fields[1], window, windows)
            if not n:
                continue
            wf = self._work("pm_window", plane * window[1])
            wf2 = self._work("pm_window2", plane * window[1])
            cl.enqueue_copy(rt.queue, wf, np.ascontiguousarray(near[:, 0]))
            cl.enqueue_copy(rt.queue, wf2, np.ascontiguousarray(near[:, 1]))
            mode = 0 if len(shifts) == 1 else 1 + mesh
            self._interp(order, pos_buf, int(n), shift, wf, wf2, mode, tmp, acc_buf, pot_buf,
                         window[0])


def _check_part_fits(rt: Runtime, n_mesh: int, ns: int, ny: int) -> None:
    """Refuse, before allocating anything, slabs the device cannot hold (two slabs of
    ns x N² and three parts of N x ny x N complex128 points, and the FFTs' scratch of
    the largest)."""
    one = 16 * n_mesh * n_mesh * max(ns, ny)
    total = 16 * n_mesh * n_mesh * (2 * ns + 3 * ny) + one
    refuse_unless_fits(rt, one, total, f"this process's slabs of a {n_mesh}^3 PM mesh need",
                       "take a smaller pm_grid or more processes")
