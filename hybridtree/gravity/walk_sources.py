"""The walk kernels' source arguments: the cells and source particles of a tree, from a
device-built tree as they are, or packed from a host-built one (float hi/lo pairs
relative to the cube's centre, the kernels' layout; cl/treewalk.cl)."""

from __future__ import annotations

import numpy as np

from ..device.runtime import Runtime, pack4, split_hi_lo
from .tree import Octree
from .tree.device_build import DeviceTree

__all__ = ["source_buffers"]


def source_buffers(rt: Runtime, tree: Octree | DeviceTree) -> list:
    """Kernel arguments for the sources: n_cells, cell_hi, cell_lo, link[, cell_eps][, quad],
    src_hi, src_lo (cell_eps: a device tree with a softening per particle, PER_EPS)."""
    if isinstance(tree, DeviceTree):
        quad = [tree.cell_quad] if tree.cell_quad is not None else []
        per_eps = [tree.cell_eps] if tree.cell_eps is not None else []
        return [np.int32(tree.n_cells), tree.cell_hi, tree.cell_lo, tree.link, *per_eps,
                *quad, tree.src_hi, tree.src_lo]
    centre = tree.cube.centre
    src_hi, src_lo = split_hi_lo(tree.pos - centre)
    com_hi, com_lo = split_hi_lo(tree.com - centre)
    link = np.zeros((tree.n_cells, 4), np.int32)
    link[:, 0] = tree.next
    link[:, 1] = tree.start
    link[:, 2] = np.where(tree.is_leaf, tree.count, 0)
    # bounding radius (rounded up) for the hard walk's cut-off
    link[:, 3] = np.nextafter(tree.radius.astype(np.float32), np.float32(np.inf)).view(np.int32)
    args = [np.int32(tree.n_cells), rt.to_device(pack4(com_hi, tree.cell_mass)),
            rt.to_device(pack4(com_lo, tree.s_eff)), rt.to_device(link)]
    if tree.quad is not None:
        q8 = np.zeros((tree.n_cells, 8), np.float32)
        q8[:, :6] = tree.quad
        args.append(rt.to_device(q8))
    return args + [rt.to_device(pack4(src_hi, tree.mass)), rt.to_device(pack4(src_lo))]
