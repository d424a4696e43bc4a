"""Octree build on the OpenCL device (cl/treebuild.cl): the numpy build's tree, kept there.

The particles' float64 positions are on the device (a run's state, or uploaded once);
keys, sort, cells, links, the float32 hi/lo pairs relative to the cube centre in tree
order and moments are computed on the device and stay there for the walk, so that large
N is not limited by numpy.  Given the same cube, the cells (first particle, count, level,
next, leaf) are those of :func:`hybridtree.gravity.tree.build_tree`; moments agree to
float32 rounding.  The cube's side is a power of two so that the key scaling and every
cell centre are exact in float32 (:func:`.device_sources.device_cube`; the cube comes
from :mod:`.device_sources`).  Memory: what only one stage needs (the unsorted keys, the
sort's spare halves, the counts) lives in the buffers the tree keeps
(:func:`build_device_tree`; docs/running.md, "Device memory by owner").  Lengths and
masses: the caller's units.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from ...device.kernels import launch, option_sets, spread_local
from ...device.runtime import DeviceInfo, Runtime
from ...device.transfer import Workspace, allocator, read_counts, read_small
from .device_sort import SortBuffers, exclusive_scan, sort_input, sort_into
from .device_tree import (DeviceGroups, DeviceTree, build_launch as _launch, drop_keys,
                          inverse_order, sorted_keys)
from .device_sources import (DeviceArrays, cube_buffers, device_cube, device_extent,
                             extent_work_group, upload_sources)
from .morton import BITS, MAX_LEVEL, Cube
from .octree import MULTIPOLES, PACK_SPREAD, PACK_UNION, check_build_args

# DeviceArrays, cube_buffers, device_cube, device_extent and extent_work_group live in
# .device_sources, DeviceTree, DeviceGroups, drop_keys, inverse_order and sorted_keys in
# .device_tree; they are named here too for the modules that import them from here
__all__ = ["DeviceArrays", "DeviceGroups", "DeviceTree", "build_device_tree", "cube_buffers",
           "device_cube", "device_extent", "device_groups", "device_moments", "drop_keys",
           "extent_work_group", "group_boxes", "inverse_order", "sorted_keys"]


def moment_defines(multipole: str, per_eps: bool = False) -> dict:
    """Build-time defines of cl/treebuild.cl's ``cell_moments`` for a multipole order and
    a softening per particle or not (its other kernels are built without defines)."""
    return {"QUAD": int(multipole == "quadrupole"), **({"PER_EPS": 1} if per_eps else {})}


@option_sets
def build_option_sets(info: DeviceInfo) -> list[tuple[str, dict]]:
    """The tree build's builds with defines: ``cell_moments`` per multipole order, with
    one softening or one per particle; prepare.cl's ``extent`` at the device's work-group
    (:func:`extent_work_group`) and ``split_sources`` with a softening per particle."""
    return [("treebuild.cl", moment_defines(m, e)) for m in MULTIPOLES for e in (False, True)
            ] + [("prepare.cl", {"WG": extent_work_group(info)}), ("prepare.cl", {"PER_EPS": 1})]


def build_device_tree(rt: Runtime, pos: np.ndarray | DeviceArrays, mass: np.ndarray | None,
                      theta: float = 0.5,
                      n_leaf: int = 16, multipole: str = "monopole",
                      cube: Cube | None = None, prepare_on_device: bool | None = None,
                      alloc=None, eps: np.ndarray | None = None,
                      timed: bool = True, group_sizes: tuple[int, ...] = (),
                      keep_keys: bool = False) -> DeviceTree:
    """Build the octree of ``pos`` (N, 3) float64 with masses ``mass`` (N,) on ``rt``'s device.

    ``cube`` defaults to :func:`device_cube`; its side must be a power of two.
    ``prepare_on_device``: see :func:`upload_sources` (which also takes ``pos`` as
    :class:`DeviceArrays`, with ``mass`` None).  ``alloc``: a
    :class:`hybridtree.device.transfer.Workspace` (no allocation when the sizes repeat; the
    tree is then valid until the workspace's next build), default fresh buffers.
    ``eps``: (N,) softenings, one per particle (or the :class:`DeviceArrays`' ``eps``):
    the tree then carries them for a walk with PER_EPS (``cell_eps``).  ``timed``: wait
    for each phase and keep its seconds in ``timings`` (upload, sort, cells, moments);
    false: enqueue all and wait only where a count is read (a run's steps, timed by
    device markers).  ``group_sizes``: sink-group sizes the walks will ask for
    (:func:`device_groups`): their first split is counted with the cells', so that one
    wait reads both.  ``keep_keys``: the sorted keys in ``alloc``'s buffer "keys", kept
    with the tree (no allocation a build; 8 bytes a particle at the walk's peak), else a
    buffer of the tree's own let go once the sink groups are made (:func:`drop_keys`).
    """
    work = alloc
    alloc = allocator(rt, alloc)
    n = pos.n if isinstance(pos, DeviceArrays) else len(pos)
    check_build_args(n, theta, n_leaf, multipole)
    # the workspace's last tree (a weak reference: :meth:`DeviceTree.let_go`)
    last = work.last if isinstance(work, Workspace) else None
    if last is not None and last() is not None:
        # the last tree of this workspace ends here: its cells must not be held beside
        # grown ones (the cells of a step with more cells than the last: 22 bytes a
        # particle counted twice at the peak)
        last().let_go()
    if n >= 2**31 - 1:
        raise ValueError(f"{n} particles exceed the device build's int32 indices")
    t = {}
    t0 = time.perf_counter()

    def phase(name: str, since: float) -> float:
        if not timed:
            return since
        rt.queue.finish()
        now = time.perf_counter()
        t[name] = now - since
        return now

    if cube is not None and not np.log2(cube.side).is_integer():
        raise ValueError(f"the device build needs a power-of-two cube side, got {cube.side}")
    per_eps = (pos.eps if isinstance(pos, DeviceArrays) else eps) is not None
    src = upload_sources(rt, pos, mass, cube, prepare_on_device, work, eps)
    cube, cube_d, cube_f = src.cube, src.cube_d, src.cube_f
    t1 = phase("upload", t0)

    # Bytes a particle, kept with the tree: 8 (keys) + 4 (order) + 32 (src_hi, src_lo);
    # what only one stage needs lives in these: the sort's spare halves (12) and then the
    # cells' and the first split's counts and scans (4 + 8) in src_hi and src_lo, which
    # the gather fills last; the keys are a buffer of the tree's own, not the workspace's,
    # let go once the sink groups are made (drop_keys).  The cells: 52 bytes a cell (84 with the quadrupole, 100
    # with a softening per particle; the LET's rows 16 more: DeviceTree.info), 0.2-0.25
    # cells a particle at n_leaf = 16.
    i32 = np.int32
    src_hi = alloc("src_hi", max(16 * n, 4 * (n + 1)))         # 16 B/particle
    src_lo = alloc("src_lo", max(16 * n, 4 * (2 * n + 1)))     # 16 B/particle
    keys = alloc("keys", 8 * n) if keep_keys else rt.empty(8 * n)   # 8 B/particle
    bufs = SortBuffers(keys=keys, order=alloc("order", 4 * n),      # + 4 B/particle
                       spare_keys=src_hi, spare_vals=src_lo)
    key_bits = 3 * BITS
    if n:
        keys_in = sort_input(rt, bufs, key_bits)
        if src.arrays is not None:
            launch(rt, "prepare.cl", "split_keys", n, i32(n), src.arrays.pos, cube_d, cube_f,
                   keys_in, local=spread_local(rt.info))
        else:
            _launch(rt, "morton_keys", n, i32(n), src.hi, src.lo, cube_f, keys_in)
    sort_into(rt, bufs, n, key_bits, alloc=work)
    skeys, order = bufs.keys, bufs.order
    t2 = phase("sort", t1)

    # counts scanned in place: the cells' in src_hi, the first split's flags in src_lo
    # with its leaf sizes behind them (from n + 1 on); further splits have their own
    _launch(rt, "count_cells", n, i32(n), skeys, i32(n_leaf), src_hi, None, None, np.uint32(0))
    offset, _ = exclusive_scan(rt, src_hi, n, src_hi, alloc=work, name="cell_offset",
                               read_total=False)
    splits = {}
    for k, g in enumerate(int(g) for g in group_sizes):
        splits[g] = _leaf_split(rt, n, skeys, g, allocator(rt, work), src_lo if k == 0 else None)
    counts = read_counts(rt, [(offset, 4 * n)] + [(sp.offset, 4 * n) for sp in splits.values()])
    n_cells = int(counts[0])
    # 4 + 16 B/cell (0.2-0.3 cells a particle at n_leaf 16)
    levels, link = alloc("cell_level", 4 * n_cells), alloc("cell_link", 16 * n_cells)
    _launch(rt, "fill_cells", n, i32(n), skeys, i32(n_leaf), offset, levels, link)
    for (g, split), count in zip(splits.items(), counts[1:]):
        _fill_leaves(rt, n, split, int(count), allocator(rt, work), g)
    if src.arrays is not None:      # into tree order: overwrites the counts
        a = src.arrays
        eps_arg = [a.eps] if a.eps is not None else []
        launch(rt, "prepare.cl", "split_gather", n, i32(n), order, a.pos, a.mass,
               i32(a.mass_step), cube_d,
               *eps_arg, src_hi, src_lo, local=spread_local(rt.info),
               defines={"PER_EPS": 1} if eps_arg else None)
    else:
        _launch(rt, "gather", n, i32(n), order, src.hi, src.lo, src_hi, src_lo)
    t3 = phase("cells", t2)

    quad = multipole == "quadrupole"
    cell_hi, cell_lo = alloc("cell_hi", 16 * n_cells), alloc("cell_lo", 16 * n_cells)  # 32 B/cell
    cell_quad = alloc("cell_quad", 32 * n_cells) if quad else None      # 32 B/cell
    cell_eps = alloc("cell_eps", 16 * n_cells) if per_eps else None     # 16 B/cell
    tree = DeviceTree(rt=rt, host_cube=cube, theta=float(theta), n_leaf=int(n_leaf),
                      multipole=multipole, n=n, n_cells=int(n_cells), order=order, keys=skeys,
                      src_hi=src_hi, src_lo=src_lo, levels=levels, link=link, cell_hi=cell_hi,
                      cell_lo=cell_lo, cell_quad=cell_quad, cell_eps=cell_eps, timings=t,
                      alloc=work, cube_d=cube_d, cube_f=cube_f, leaf_splits=splits,
                      keys_kept=keep_keys)
    device_moments(tree)
    phase("moments", t3)
    if isinstance(work, Workspace):
        work.last = weakref.ref(tree)
    return tree


def device_moments(tree: DeviceTree, ext: cl.Buffer | None = None) -> None:
    """(Re)compute every cell's mass, centre of mass, S_eff, bounding radius (and
    quadrupole) from the tree's particles, level by level, deepest first (enqueued only);
    the cells' centres from the sorted keys of their first particles, or where those are
    let go (:func:`drop_keys`) from the cells' own keys (``tree.cell_keys``).
    ``ext``: a float buffer over the cells for a refit (cl/treebuild.cl ``cell_moments``:
    the cells' sides grown to hold their particles); None: a build."""
    i32, n_cells = np.int32, tree.n_cells
    quad = [tree.cell_quad] if tree.cell_quad is not None else []
    per_eps = [tree.cell_eps] if tree.cell_eps is not None else []
    lent = tree.keys is None
    rest = [tree.cube_f, np.float32(1.0 / tree.theta), tree.cell_keys if lent else tree.keys,
            i32(0 if lent else -1), tree.src_hi, tree.src_lo, tree.levels,
            tree.link, tree.cell_hi, tree.cell_lo, ext] + per_eps + quad
    defines, count = moment_defines(tree.multipole, bool(per_eps)), i32(n_cells)
    for level in range(MAX_LEVEL + 1, -1, -1):
        _launch(tree.rt, "cell_moments", n_cells, count, i32(level), *rest, defines=defines)


@dataclass
class LeafSplit:
    """The leaves of a split with at most n_group per leaf (cl/treebuild.cl count_cells):
    the exclusive scan of where leaves start (``offset``, in place of the flags), per
    particle the size of the leaf that starts there (0: none) in ``size`` from
    ``size_at`` on, and once the count is read the leaves themselves (int2 first
    particle, count: ``leaves``, ``n_leaves``)."""

    size: cl.Buffer
    size_at: int
    offset: cl.Buffer
    n_leaves: int = 0
    leaves: cl.Buffer | None = None


def _leaf_split(rt: Runtime, n: int, keys: cl.Buffer, n_group: int, alloc,
                room: cl.Buffer | None = None) -> LeafSplit:
    """Enqueue the split of n >= 0 sorted keys into leaves of at most n_group (nothing
    read back: :func:`_fill_leaves` follows once the count is read).  ``room``: a buffer
    of at least 4 (2 n + 1) bytes free until the leaves are filled, for the flags (then
    their scan) and the sizes; None: buffers of the split's own (4 + 4 B/particle)."""
    if room is None:
        # 8 B/particle, a split of its own (splits of other sizes stay valid)
        room = alloc(f"g_flag_{n_group}", 4 * (2 * n + 1))
    _launch(rt, "count_cells", n, np.int32(n), keys, np.int32(n_group), None, room, room,
            np.uint32(n + 1))
    offset, _ = exclusive_scan(rt, room, n, room, alloc=alloc, name=f"g_offset_{n_group}",
                               read_total=False)
    return LeafSplit(room, n + 1, offset)


def _fill_leaves(rt: Runtime, n: int, split: LeafSplit, n_leaves: int, alloc,
                 n_group: int) -> None:
    """The split's ``n_leaves`` leaves (read back by the caller) into its ``leaves``
    (8 bytes a leaf, enqueued)."""
    split.n_leaves = n_leaves
    split.leaves = alloc(f"g_leaves_{n_group}", 8 * n_leaves)     # 8 B/leaf
    _launch(rt, "fill_leaves", n, np.int32(n), split.size, np.uint32(split.size_at),
            split.offset, split.leaves)


def device_groups(tree: DeviceTree, n_group: int, pack: bool = True) -> DeviceGroups:
    """Groups of at most ``n_group`` Morton-consecutive particles: the leaves of a split
    with ``n_group`` per leaf (:func:`hybridtree.gravity.tree.leaf_ranges`), with ``pack``
    consecutive siblings merged (:func:`hybridtree.gravity.tree.octree.packed_leaf_ranges`);
    computed once per tree, group size and packing."""
    if (n_group, pack) in tree.groups:
        return tree.groups[n_group, pack]
    rt, n = tree.rt, tree.n
    i32 = np.int32
    work = tree.alloc
    base = allocator(rt, work)

    def alloc(name: str, nbytes: int) -> cl.Buffer:   # groups of other sizes stay valid
        return base(f"{name}_{n_group}_{int(pack)}", nbytes)

    split = tree.leaf_splits.get(n_group)
    if split is None:                   # not counted with the build's cells
        split = tree.leaf_splits[n_group] = _leaf_split(rt, n, sorted_keys(tree), n_group,
                                                         base)
        count = int(read_small(rt, np.empty(1, np.uint32), split.offset, 4 * n)[0])
        _fill_leaves(rt, n, split, count, base, n_group)
    n_groups, ranges = split.n_leaves, split.leaves
    if pack:
        n_leaves, leaves = n_groups, ranges
        gflag, box = alloc("g_pack", 4 * n_leaves), alloc("g_box", 32 * n_leaves)  # 36 B/leaf
        keys = sorted_keys(tree)
        _launch(rt, "leaf_boxes", n_leaves, i32(n_leaves), leaves, keys, box)
        _launch(rt, "pack_leaves", n_leaves, i32(n_leaves), leaves, i32(n), keys, box,
                i32(n_group), np.array(PACK_SPREAD + PACK_UNION, np.int32).view(cl.cltypes.int4)[0],
                gflag)
        offset, n_groups = exclusive_scan(rt, gflag, n_leaves, alloc=base, name="g_offset2")
        ranges = alloc("g_ranges", 8 * n_groups)                 # 8 B/group
        _launch(rt, "fill_groups", n_leaves, i32(n_leaves), leaves, gflag, offset, ranges)
        del keys                # held here, they would outlive drop_keys below
    g_hi, g_lo, g_half = (alloc("g_hi", 16 * n_groups), alloc("g_lo", 16 * n_groups),
                          alloc("g_half", 16 * n_groups))            # 48 B/group
    tree.groups[n_group, pack] = DeviceGroups(int(n_groups), ranges, g_hi, g_lo, g_half)
    group_boxes(tree, tree.groups[n_group, pack])
    drop_keys(tree)             # the walks need none of the keys (8 B/particle)
    return tree.groups[n_group, pack]


def group_boxes(tree: DeviceTree, g: DeviceGroups) -> None:
    """The boxes of ``g`` around the tree's particles as they are now (enqueued)."""
    _launch(tree.rt, "group_boxes", g.n_groups, np.int32(g.n_groups), g.ranges, tree.src_hi,
            tree.src_lo, g.hi, g.lo, g.half)
