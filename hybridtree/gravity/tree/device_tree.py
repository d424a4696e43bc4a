"""A tree on the OpenCL device (:class:`DeviceTree`, made by :mod:`.device_build`) and what
its stages ask of it after the build: the inverse of its order, which the walks' results
take back to the caller's order, written into the sorted keys' buffer once the keys are
done with (:func:`inverse_order`), the keys formed again where sink groups of another size
are asked for (:func:`sorted_keys`), the LET's int4 cell rows made when first asked for
(:attr:`DeviceTree.info`).  Lengths and masses: the caller's units.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyopencl as cl

from ...device.kernels import launch, spread_local
from ...device.runtime import Runtime
from ...device.transfer import allocator, read_small
from .morton import Cube

__all__ = ["DeviceGroups", "DeviceTree", "build_launch", "inverse_order", "sorted_keys"]


def build_launch(rt: Runtime, name: str, n: int, *args, defines: dict | None = None) -> None:
    """Kernel ``name`` of treebuild.cl over ``n`` work-items (kernels check their bounds)."""
    launch(rt, "treebuild.cl", name, n, *args, defines=defines, local=spread_local(rt.info))


@dataclass
class DeviceTree:
    """A tree on the device.  Buffers over cells are in pre-order (as :class:`Octree`)."""

    rt: Runtime
    host_cube: Cube | None      # the cube, where the host has it (else read on first use)
    theta: float
    n_leaf: int
    multipole: str
    n: int                      # particles
    n_cells: int
    order: cl.Buffer            # uint32 (N,) caller index of the i-th particle in tree order
    #: uint64 (N,) sorted Morton keys; None once their buffer (``room``) holds the inverse
    #: order (:func:`inverse_order`): :func:`sorted_keys` forms them again where needed
    keys: cl.Buffer | None
    src_hi: cl.Buffer           # float4 (N,) tree order: x, y, z hi (cube-centre relative), m
    src_lo: cl.Buffer           # float4 (N,) lo parts; w: the softening eps (PER_EPS) or 0
    #: int (C,) the cells' levels; a cell's first particle and a leaf's count are in its
    #: link (:attr:`info`: the LET's rows)
    levels: cl.Buffer
    link: cl.Buffer             # int4 (C,) next, first particle, leaf count or 0, radius bits
    cell_hi: cl.Buffer          # float4 (C,) centre of mass hi, mass
    cell_lo: cl.Buffer          # float4 (C,) centre of mass lo, S_eff
    cell_quad: cl.Buffer | None  # float8 (C,) traceless Q (xx yy zz xy xz yz) about the com
    #: float4 (C,) with a softening per particle: mass-weighted mean eps^2 of the cell's
    #: particles, their largest and smallest eps, the radius within which a mixed cell is
    #: opened (cl/walkcommon.cl PER_EPS); None: one eps
    cell_eps: cl.Buffer | None = None
    timings: dict = field(default_factory=dict)
    #: float (C,) after a refit (:mod:`.refit`): the largest max-norm distance of a cell's
    #: particles from its geometric centre, h; the cell's side in S_eff and the radius is
    #: then max(l, 2 h).  None for a build, where h <= l / 2.
    cell_ext: cl.Buffer | None = None
    groups: dict = field(default_factory=dict)   # (n_group, pack) -> DeviceGroups
    #: n_group -> the first step of :func:`device_groups` (:class:`LeafSplit`), done
    leaf_splits: dict = field(default_factory=dict)
    #: uint32 (N,): the tree position of each caller index (:func:`inverse_order`), in
    #: the sorted keys' buffer
    inverse: cl.Buffer | None = None
    #: the sorted keys' buffer (8 bytes a particle): the keys while the build and the sink
    #: groups need them, then the inverse order (the walks' results to the caller's order)
    room: cl.Buffer | None = None
    #: where the keys are lent (``keys`` None): the 8-byte slot of ``room`` from which on
    #: the keys of the cells' first particles lie, behind the inverse (:func:`inverse_order`)
    key_at: int = -1
    alloc: object = None        # where this tree's buffers came from (its groups' too)
    #: the cube on the device (:func:`cube_buffers`): float64 corner, side, centre (None
    #: without double precision) and float32 side, key scale
    cube_d: cl.Buffer | None = None
    cube_f: cl.Buffer | None = None
    _info: cl.Buffer | None = field(default=None, repr=False)

    @property
    def info(self) -> cl.Buffer | None:
        """int4 (C,) first particle, count, level, is_leaf of every cell (cl/let.cl's rows),
        made from the links and levels the first time it is asked for (the LET's: a run of
        one process never asks, and keeps 4 bytes a cell for it, not 16)."""
        if self._info is None and self.levels is not None:
            self._info = allocator(self.rt, self.alloc)("cell_info", 16 * self.n_cells)
            build_launch(self.rt, "cell_info", self.n_cells, np.int32(self.n_cells),
                    np.int32(self.n), self.levels, self.link, self._info)
        return self._info

    @property
    def cube(self) -> Cube:
        """The tree's cube; where the build found it on the device, read from there the
        first time it is asked for (a run's steps never ask)."""
        if self.host_cube is None:
            c = read_small(self.rt, np.empty(8), self.cube_d)
            self.host_cube = Cube(corner=c[:3].copy(), side=float(c[3]))
        return self.host_cube

    def let_go(self) -> None:
        """Drop the references to the buffers (the next build into the same workspace has
        begun: this tree is no longer valid), so that a workspace buffer that must grow
        is freed before its successor is made, not held by this tree beside it."""
        for name in ("order", "keys", "src_hi", "src_lo", "levels", "_info", "link", "cell_hi",
                     "cell_lo", "cell_quad", "cell_eps", "cell_ext", "inverse", "room"):
            setattr(self, name, None)
        self.groups, self.leaf_splits = {}, {}

    def to_host(self) -> dict[str, np.ndarray]:
        """Copies of the device arrays (tests and debugging); positions relative to the cube
        are turned back into the caller's coordinates."""
        q = self.rt.queue

        def get(buf, shape, dtype):
            out = np.empty(shape, dtype)
            if out.size:
                cl.enqueue_copy(q, out, buf)
            return out

        levels = get(self.levels, self.n_cells, np.int32)
        link = get(self.link, (self.n_cells, 4), np.int32)
        start, nxt = link[:, 1], link[:, 0]
        # a cell's particles end where the next cell after its subtree starts
        end = np.append(start, self.n)[np.minimum(nxt, self.n_cells)]
        chi = get(self.cell_hi, (self.n_cells, 4), np.float32)
        clo = get(self.cell_lo, (self.n_cells, 4), np.float32)
        centre = self.cube.centre
        out = {"order": get(self.order, self.n, np.uint32).astype(np.int64),
               "start": start, "count": end - start, "level": levels & 0xFF,
               "is_leaf": link[:, 2] != 0, "next": nxt,
               "radius": link[:, 3].view(np.float32),
               "cell_mass": chi[:, 3].astype(np.float64),
               "com": chi[:, :3].astype(np.float64) + clo[:, :3] + centre,
               "s_eff": clo[:, 3].astype(np.float64)}
        keys = self.keys
        if keys is None and self.cell_ext is None and self.n:   # lent: formed again aside
            keys = self.rt.empty(8 * self.n)
            build_launch(self.rt, "morton_keys", self.n, np.int32(self.n), self.src_hi, self.src_lo,
                    self.cube_f, keys)
        if keys is not None or not self.n:      # a refitted tree's lent keys are gone
            out["keys"] = get(keys, self.n, np.uint64)
        if self.cell_quad is not None:
            out["quad"] = get(self.cell_quad, (self.n_cells, 8), np.float32)[:, :6]
        if self.cell_eps is not None:
            ce = get(self.cell_eps, (self.n_cells, 4), np.float32).astype(np.float64)
            out["eps2_mean"], out["eps_max"], out["eps_min"] = ce[:, 0], ce[:, 1], ce[:, 2]
            out["eps_guard"] = ce[:, 3]
            out["eps"] = get(self.src_lo, (self.n, 4), np.float32)[:, 3].astype(np.float64)
        if self.cell_ext is not None:
            out["half_extent"] = get(self.cell_ext, self.n_cells, np.float32).astype(np.float64)
        return out


@dataclass
class DeviceGroups:
    """Sink groups of a device tree's own particles (tree order)."""

    n_groups: int
    ranges: cl.Buffer   # int2: first sink, sink count
    hi: cl.Buffer       # float4 box centre hi
    lo: cl.Buffer       # float4 box centre lo
    half: cl.Buffer     # float4 box half sides


def inverse_order(tree: DeviceTree) -> cl.Buffer:
    """The inverse of the tree's ``order`` (made once per tree on first use; a refit keeps
    the order): results go back to the caller's order as a gather (prepare.cl).  It is
    written into the sorted keys' buffer (``tree.room``): the walks need the inverse,
    the build and the sink groups the keys, never both at once, so the tree keeps 8
    bytes a particle for both, not 12.  Behind the inverse go the keys of the cells'
    first particles (cl/treebuild.cl ``cell_keys``, from the pairs as built), all a refit
    needs of the keys; a tree asked for groups of another size afterwards forms its keys
    again (:func:`sorted_keys`).  A tree refitted before its first inverse (its pairs
    moved), or of more cells than half its particles (tiny leaves), keeps its keys and
    gets a buffer of its own (4 bytes a particle)."""
    if tree.inverse is None:
        rt, n, i32 = tree.rt, tree.n, np.int32
        key_at = (n + 1) // 2           # the first 8-byte slot behind the inverse
        if tree.cell_ext is None and key_at + tree.n_cells <= n:
            build_launch(rt, "cell_keys", tree.n_cells, i32(tree.n_cells), i32(key_at),
                         tree.link, tree.src_hi, tree.src_lo, tree.cube_f, tree.room)
            tree.keys, tree.inverse, tree.key_at = None, tree.room, key_at
        else:
            tree.inverse = allocator(rt, tree.alloc)("inverse", 4 * n)   # 4 B/particle
        launch(rt, "prepare.cl", "invert_order", n, i32(n), tree.order, tree.inverse,
               local=spread_local(rt.info))
    return tree.inverse


def sorted_keys(tree: DeviceTree) -> cl.Buffer:
    """The tree's sorted Morton keys: where their buffer holds the inverse order, formed
    again there from the particles' hi/lo pairs in tree order (cl/treebuild.cl
    ``morton_keys``: the build's keys bit for bit, prepare.cl ``split_keys`` forms them
    from the same pairs), and the inverse made again when next asked for.  A refitted
    tree's particles have moved, so its keys cannot be formed again: a bug of the caller,
    who must ask for its sink groups before its first walk."""
    if tree.keys is None:
        if tree.cell_ext is not None:
            raise RuntimeError("the sorted keys of a refitted device tree were lent to its "
                               "inverse order: ask for its sink groups before its first walk")
        tree.keys, tree.inverse = tree.room, None
        build_launch(tree.rt, "morton_keys", tree.n, np.int32(tree.n), tree.src_hi,
                     tree.src_lo, tree.cube_f, tree.keys)
    return tree.keys
