"""A tree on the OpenCL device (:class:`DeviceTree`, made by :mod:`.device_build`) and what
its stages ask of it after the build: its sorted keys let go once its sink groups are made
(:func:`drop_keys`: the walk's peak holds no 8 bytes a particle for them), formed again
where sink groups of another size are asked for (:func:`sorted_keys`); the inverse of its
order, made when first asked for (:func:`inverse_order`); the LET's int4 cell rows made
when first asked for (:attr:`DeviceTree.info`).  Lengths and masses: the caller's units.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyopencl as cl

from ...device.kernels import launch, spread_local
from ...device.runtime import Runtime
from ...device.transfer import allocator, read_small
from .morton import Cube

__all__ = ["DeviceGroups", "DeviceTree", "build_launch", "drop_keys", "inverse_order",
           "keep_cell_keys", "sorted_keys"]


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
    #: uint64 (N,) sorted Morton keys, a buffer of the tree's own or the workspace's
    #: (:attr:`keys_kept`); None once let go (:func:`drop_keys`): :func:`sorted_keys`
    #: forms them again
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
    #: uint32 (N,): the tree position of each caller index (:func:`inverse_order`)
    inverse: cl.Buffer | None = None
    #: uint64 (C,) the keys of the cells' first particles as built, made for a refit where
    #: the sorted keys are let go (:func:`keep_cell_keys`): all a refit needs of the keys
    cell_keys: cl.Buffer | None = None
    alloc: object = None        # where this tree's buffers came from (its groups' too)
    #: the sorted keys are the workspace's, kept with the tree (not let go: drop_keys)
    keys_kept: bool = False
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
                     "cell_lo", "cell_quad", "cell_eps", "cell_ext", "inverse", "cell_keys"):
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
            box = get(self.cell_ext, (self.n_cells, 2, 3), np.float32).astype(np.float64)
            # the box's corners relative to the cell's geometric centre
            out["box_lo"], out["box_hi"] = box[:, 0], box[:, 1]
        return out


@dataclass
class DeviceGroups:
    """Sink groups of a device tree's own particles (tree order)."""

    n_groups: int
    ranges: cl.Buffer   # int2: first sink, sink count
    hi: cl.Buffer       # float4 box centre hi
    lo: cl.Buffer       # float4 box centre lo
    half: cl.Buffer     # float4 box half sides


def drop_keys(tree: DeviceTree) -> None:
    """Let the tree's sorted keys (8 bytes a particle) go: the build and the sink groups
    need them, the walks do not, so they are not held at the walk's peak.  A refit needs
    the keys of the cells' first particles only, which it makes before it moves the pairs
    (:func:`keep_cell_keys`); a tree refitted with its keys (its pairs moved) keeps them.
    Sink groups of another size form them again (:func:`sorted_keys`)."""
    if tree.cell_ext is None and not tree.keys_kept:
        tree.keys = None


def keep_cell_keys(tree: DeviceTree) -> None:
    """Before a refit moves the tree's pairs: where its sorted keys are let go, the keys
    of its cells' first particles (cl/treebuild.cl ``cell_keys``, 8 bytes a cell) from
    the pairs as built, all the refits of the tree need of the keys."""
    if tree.keys is None and tree.cell_keys is None and tree.n_cells:
        assert tree.cell_ext is None, "a refitted tree's pairs have moved"
        tree.cell_keys = tree.rt.empty(8 * tree.n_cells)           # 8 B/cell
        build_launch(tree.rt, "cell_keys", tree.n_cells, np.int32(tree.n_cells), np.int32(0),
                     tree.link, tree.src_hi, tree.src_lo, tree.cube_f, tree.cell_keys)


def inverse_order(tree: DeviceTree) -> cl.Buffer:
    """The inverse of the tree's ``order`` (uint32, 4 bytes a particle, a buffer of the
    tree's own): made once per tree when first asked for (a refit keeps the order);
    results go back to the caller's order as a gather (prepare.cl)."""
    if tree.inverse is None:
        rt, n = tree.rt, tree.n
        tree.inverse = rt.empty(4 * n)                               # 4 B/particle
        launch(rt, "prepare.cl", "invert_order", n, np.int32(n), tree.order, tree.inverse,
               local=spread_local(rt.info))
    return tree.inverse


def sorted_keys(tree: DeviceTree) -> cl.Buffer:
    """The tree's sorted Morton keys: where they were let go (:func:`drop_keys`), formed
    again from the particles' hi/lo pairs in tree order (cl/treebuild.cl ``morton_keys``:
    the build's keys bit for bit, prepare.cl ``split_keys`` forms them from the same
    pairs) into a buffer of their own, let go again by the caller.  A refitted tree's
    particles have moved, so its keys cannot be formed again: a bug of the caller, who
    must ask for its sink groups before its first walk."""
    if tree.keys is None:
        if tree.cell_ext is not None:
            raise RuntimeError("the sorted keys of a refitted device tree were let go: ask "
                               "for its sink groups before its first walk")
        tree.keys = tree.rt.empty(8 * tree.n)                         # 8 B/particle
        build_launch(tree.rt, "morton_keys", tree.n, np.int32(tree.n), tree.src_hi,
                     tree.src_lo, tree.cube_f, tree.keys)
    return tree.keys
