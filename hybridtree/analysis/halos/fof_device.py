"""Friends of friends on an OpenCL device (cl/fof.cl): the groups of
:func:`hybridtree.analysis.halos.fof.friends_of_friends` without k-d trees.

The particles go into a grid of cells of side w >= the linking length (the periodic
box's cube, else the particles' bounding box; at most :data:`MAX_CELLS` cells, wider
ones where more would be needed), sorted by cell on the device (the package's radix
sort, :mod:`hybridtree.gravity.tree.device_sort`).  Labels start as each particle's own
sorted index; each round every particle takes the smallest label among its partners in
the 27 cells around it (and hooks its old root onto it), then every label jumps to its
root; rounds repeat until none changes (one flag read back a round).  At the end each
particle's root is its group's smallest original index: what the host's union-find
gives, so :func:`hybridtree.analysis.halos.fof._first_member_labels` numbers both alike.

Precision: the host links a pair when its float64 distance is <= the linking length;
here each position is taken relative to its cell's corner (float64 on the host, then
float32) and the pair's squared distance is a float32 sum: a pair whose distance is
within about 1e-6 (relative) of the linking length may be linked on one path and not on
the other.  Any other pair gets the same answer, so the groups are the same.  No double
precision is needed on the device.
"""

from __future__ import annotations

import itertools
import math
import os

import numpy as np
import pyopencl as cl

from ...device.kernels import launch, spread_local
from ...device.runtime import Runtime
from ...gravity.tree.device_sort import MAX_N, radix_sort
from ...particles import bounds

__all__ = ["MAX_CELLS", "cells_and_offsets", "device_roots", "grid", "halo_runtime", "usable"]

#: most cells of the grid: 12 bytes a cell (start, end, smallest label), 3 GiB at most
MAX_CELLS = 1 << 28

#: cells per particle at most (a small set gets no huge empty grid)
CELLS_PER_PARTICLE = 16

#: bytes of device memory a particle takes (keys and order of the sort, ping-pong
#: halves, offsets, labels) and a cell (start, end, smallest label)
PARTICLE_BYTES, CELL_BYTES = 100, 12


def halo_runtime() -> Runtime | None:
    """The device ``hybridtree halos`` links on: the one ``hybridtree pk`` takes
    (:func:`hybridtree.analysis.power_device.analysis_runtime`: ``HYBRIDTREE_DEVICE``, else
    the best one), but a CPU device only where the user named one (``HYBRIDTREE_DEVICE``,
    ``PYOPENCL_CTX``): on a CPU the host's k-d trees are faster (a 128^3 clustered box on 2
    cores: 2.6 CPU seconds against 7.3); None: the host links."""
    from ...device.drivers import list_devices
    from ..power_device import analysis_runtime
    named = os.environ.get("HYBRIDTREE_DEVICE") or os.environ.get("PYOPENCL_CTX")
    if not named and not any(d.kind == "gpu" and not d.simulator for d in list_devices()):
        return None             # no context made (and no probe) for a host run
    rt = analysis_runtime()
    if rt is None or (rt.info.kind == "cpu" and not named):
        return None
    return rt


def usable(rt: Runtime | None, n: int) -> bool:
    """Whether :func:`device_roots` can take ``n`` particles on ``rt`` (a runtime, or None:
    no device): 0 < n < 2^31 and the buffers fit the device's memory (half of it)."""
    if rt is None or not 0 < n <= MAX_N:
        return False
    need = PARTICLE_BYTES * n + CELL_BYTES * min(MAX_CELLS, CELLS_PER_PARTICLE * n + 27)
    return need <= rt.device.global_mem_size // 2


def grid(pos: np.ndarray, link: float, box: float | None
         ) -> tuple[np.ndarray, float, tuple[int, int, int]]:
    """The grid of the particles at ``pos`` ((N, 3) float64, in [0, box) for a periodic
    ``box``): (its corner, the side w of a cell, cells per axis).  w >= the linking
    length times (1 + 1e-6), so that rounding cannot put two partners two cells apart;
    the periodic cube is an integer number of cells (w = box / cells a side)."""
    n_max = min(MAX_CELLS, CELLS_PER_PARTICLE * len(pos) + 27)
    margin = link * (1.0 + 1e-6)
    if box is not None:
        side = max(1, int(box / margin))
        side = max(1, min(side, int(round(n_max ** (1.0 / 3.0)))))
        while side ** 3 > n_max:
            side -= 1
        while side > 1 and box / side < margin:
            side -= 1
        return np.zeros(3), box / side, (side, side, side)
    lo, hi = bounds(pos)
    extent = hi - lo
    w = margin

    def cells(w: float) -> tuple[int, int, int]:
        return tuple(int(e / w) + 1 for e in extent)
    shape = cells(w)
    while math.prod(shape) > n_max:
        w *= max(1.01, (math.prod(shape) / n_max) ** (1.0 / 3.0))
        shape = cells(w)
    return lo, w, shape


def cells_and_offsets(pos: np.ndarray, lo: np.ndarray, w: float,
                      shape: tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Each particle's cell key ((cz ny + cy) nx + cx, uint64) and its position relative
    to the cell's corner (float32, (N, 3)) in the grid of :func:`grid`; few passes over
    the positions (a 256^3 box's are 400 MB)."""
    scaled = pos - lo if lo.any() else pos * 1.0
    scaled *= 1.0 / w
    cell = scaled.astype(np.int32)              # >= 0: truncation is the floor
    np.minimum(cell, np.array(shape, np.int32) - 1, out=cell)
    scaled -= cell
    scaled *= w
    key = np.ravel_multi_index((cell[:, 2], cell[:, 1], cell[:, 0]), shape[::-1])
    return key.view(np.uint64), scaled.astype(np.float32)


def device_roots(rt: Runtime, pos: np.ndarray, link: float, box: float | None) -> np.ndarray:
    """Each particle's root, its group's smallest index (int32, (N,)): the host's
    :func:`hybridtree.analysis.halos.fof._union_find` result for the links of
    :func:`hybridtree.analysis.halos.fof.friends_of_friends`.  ``pos`` (N, 3) float64,
    wrapped into [0, box) for a periodic ``box``; ``link`` < box / 2 there."""
    n = len(pos)
    lo, w, (nx, ny, nz) = grid(pos, link, box)
    key, offset = cells_and_offsets(pos, lo, w, (nx, ny, nz))
    n_cells = nx * ny * nz
    q = rt.queue
    key_buf = rt.to_device(key)
    offset_buf = rt.to_device(offset)
    del key, offset
    sorted_keys, order = radix_sort(rt, key_buf, n, key_bits=max(1, n_cells - 1).bit_length())
    del key_buf
    # an empty cell's start and end stay unwritten: its smallest label (cell_min) is
    # above every label, so no kernel reads them
    start, end, cell_min = (rt.empty(4 * n_cells), rt.empty(4 * n_cells),
                            rt.empty(4 * n_cells))
    local = spread_local(rt.info)
    count = np.uint32(n)
    launch(rt, "fof.cl", "fof_cell_bounds", n, count, sorted_keys, start, end, local=local)
    cl.enqueue_fill_buffer(q, cell_min, np.int32(np.iinfo(np.int32).max), 0, 4 * n_cells)
    pos_buf, labels, spare, prev = (rt.empty(16 * n), rt.empty(4 * n), rt.empty(4 * n),
                                    rt.empty(4 * n))
    launch(rt, "fof.cl", "fof_gather", n, count, order, offset_buf, pos_buf, labels,
           local=local)
    del offset_buf
    flag = np.zeros(1, np.int32)
    flag_buf = rt.empty(4)
    for round_ in itertools.count():
        cl.enqueue_fill_buffer(q, flag_buf, np.int32(0), 0, 4)
        cl.enqueue_copy(q, spare, labels)
        opening = np.uint32(round_ == 0)    # labels still the sorted indices
        launch(rt, "fof.cl", "fof_cell_min", n, count, sorted_keys, end, labels, prev,
               opening, cell_min, local=local)
        cl.enqueue_copy(q, prev, labels)
        launch(rt, "fof.cl", "fof_link", n, count, sorted_keys, start, end, cell_min,
               pos_buf, np.uint32(nx), np.uint32(ny), np.uint32(nz),
               np.uint32(box is not None), np.float32(w),
               np.float32(link) * np.float32(link), opening, labels, spare,
               flag_buf, local=local)
        launch(rt, "fof.cl", "fof_jump", n, count, spare, labels, local=local)
        cl.enqueue_copy(q, flag, flag_buf)          # blocking: waits for the round
        if not flag[0]:
            break
    del start, end, cell_min, pos_buf, sorted_keys, prev
    first = spare
    cl.enqueue_fill_buffer(q, first, np.int32(np.iinfo(np.int32).max), 0, 4 * n)
    launch(rt, "fof.cl", "fof_first", n, count, order, labels, first, local=local)
    root_buf = rt.empty(4 * n)
    launch(rt, "fof.cl", "fof_roots", n, count, order, labels, first, root_buf, local=local)
    roots = np.empty(n, np.int32)
    cl.enqueue_copy(q, roots, root_buf)
    return roots
