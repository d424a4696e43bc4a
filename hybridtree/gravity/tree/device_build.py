"""Octree build on the OpenCL device (cl/treebuild.cl): the numpy build's tree, kept there.

The host uploads positions once (float32 hi/lo pairs relative to the cube centre); keys,
sort, cells, links and moments are computed on the device and stay there for the walk,
so that large N is not limited by numpy.  Given the same cube, the cells (first particle,
count, level, next, leaf) are those of :func:`hybridtree.gravity.tree.build_tree`; moments agree
to float32 rounding.  The cube's side is a power of two so that the key scaling and every
cell centre are exact in float32 (:func:`device_cube`).  Lengths and masses: the caller's
units.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pyopencl as cl

from ...device.kernels import launch, option_sets, spread_local
from ...device.runtime import DeviceInfo, Runtime, fit_work_group, pack4, split_hi_lo
from ...device.transfer import allocator, read_small, upload
from .device_sort import exclusive_scan, radix_sort
from .morton import BITS, MAX_LEVEL, Cube, bounding_cube, extent_cube
from .octree import MULTIPOLES, PACK_SPREAD, PACK_UNION, check_build_args

__all__ = ["DeviceGroups", "DeviceTree", "build_device_tree", "device_cube", "device_moments",
           "device_extent", "device_groups", "group_boxes"]


def device_cube(pos: np.ndarray) -> Cube:
    """Bounding cube with a power-of-two side, centred on the particles' extent."""
    return bounding_cube(pos, power_of_two=True)


@dataclass
class DeviceTree:
    """A tree on the device.  Buffers over cells are in pre-order (as :class:`Octree`)."""

    rt: Runtime
    cube: Cube
    theta: float
    n_leaf: int
    multipole: str
    n: int                      # particles
    n_cells: int
    order: cl.Buffer            # uint32 (N,) caller index of the i-th particle in tree order
    keys: cl.Buffer             # uint64 (N,) sorted Morton keys
    src_hi: cl.Buffer           # float4 (N,) tree order: x, y, z hi (cube-centre relative), m
    src_lo: cl.Buffer           # float4 (N,) lo parts; w: the softening eps (PER_EPS) or 0
    info: cl.Buffer             # int4 (C,) first particle, count, level, is_leaf
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
    #: uint32 (N,): the tree position of each caller index (:func:`inverse_order`)
    inverse: cl.Buffer | None = None
    alloc: object = None        # where this tree's buffers came from (its groups' too)

    def to_host(self) -> dict[str, np.ndarray]:
        """Copies of the device arrays (tests and debugging); positions relative to the cube
        are turned back into the caller's coordinates."""
        q = self.rt.queue

        def get(buf, shape, dtype):
            out = np.empty(shape, dtype)
            if out.size:
                cl.enqueue_copy(q, out, buf)
            return out

        info = get(self.info, (self.n_cells, 4), np.int32)
        link = get(self.link, (self.n_cells, 4), np.int32)
        chi = get(self.cell_hi, (self.n_cells, 4), np.float32)
        clo = get(self.cell_lo, (self.n_cells, 4), np.float32)
        centre = self.cube.centre
        out = {"order": get(self.order, self.n, np.uint32).astype(np.int64),
               "keys": get(self.keys, self.n, np.uint64),
               "start": info[:, 0], "count": info[:, 1], "level": info[:, 2],
               "is_leaf": info[:, 3].astype(bool), "next": link[:, 0],
               "radius": link[:, 3].view(np.float32),
               "cell_mass": chi[:, 3].astype(np.float64),
               "com": chi[:, :3].astype(np.float64) + clo[:, :3] + centre,
               "s_eff": clo[:, 3].astype(np.float64)}
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


def _launch(rt: Runtime, name: str, n: int, *args, defines: dict | None = None) -> None:
    """Kernel ``name`` of treebuild.cl over ``n`` work-items (kernels check their bounds)."""
    launch(rt, "treebuild.cl", name, n, *args, defines=defines, local=spread_local(rt.info))


def extent_work_group(info: DeviceInfo) -> int:
    """Work-group size of prepare.cl's ``extent`` (its WG define): 256 on GPUs, 64 on CPUs,
    within the device's work-group limit and local memory (48 bytes per work-item), a
    power of two (its tree reduction halves it)."""
    return fit_work_group(256 if info.kind == "gpu" else 64, info.work_group_limit(),
                          info.local_mem_limit() // 48)


def device_extent(rt: Runtime, pos: cl.Buffer, n: int, alloc=None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) corner of the box around n float64 positions on the device (the
    work-groups' boxes reduced on the device, 48 bytes read back); n = 0 gives (inf, -inf)."""
    if n == 0:
        return np.full(3, np.inf), np.full(3, -np.inf)
    alloc = allocator(rt, alloc)
    wg = extent_work_group(rt.info)
    n_wg = max(1, min(-(-n // wg), 4 * rt.info.compute_units))
    part = alloc("extent", 48 * n_wg)
    i32 = np.int32
    launch(rt, "prepare.cl", "extent", n_wg * wg, i32(n), i32(3), i32(0), pos, part,
           defines={"WG": wg}, local=wg, fixed=True)
    launch(rt, "prepare.cl", "extent", wg, i32(n_wg), i32(6), i32(3), part, part,
           defines={"WG": wg}, local=wg, fixed=True)        # the groups' rows, in place
    ext = read_small(rt, np.empty(6), part)
    return ext[:3], ext[3:]


@dataclass
class DeviceArrays:
    """Particles already on the device (hybridtree.integrate.state): float64 positions (n x 3)
    and masses (n), in the caller's order; ``eps``: float32 softenings (n), one per
    particle (None: one softening for all, given to the walk)."""

    pos: cl.Buffer
    mass: cl.Buffer
    n: int
    eps: cl.Buffer | None = None


def upload_sources(rt: Runtime, pos: np.ndarray | DeviceArrays, mass: np.ndarray | None,
                   cube: Cube | None, on_device: bool | None = None, alloc=None,
                   eps: np.ndarray | None = None) -> tuple[Cube, cl.Buffer, cl.Buffer]:
    """(cube, hi, lo): float4 hi/lo positions relative to the cube centre, w = mass (hi)
    and the softening (lo: ``eps``, one per particle, or the :class:`DeviceArrays`'
    ``eps``; else 0).

    ``on_device`` (default: where the device has double precision): upload the
    float64 arrays as they are and find the extent and split on the device
    (cl/prepare.cl); otherwise on the host.  Both give the same bits.
    :class:`DeviceArrays` are used where they are (double precision needed).
    ``alloc``: a :class:`hybridtree.device.transfer.Workspace` for the device buffers.
    """
    alloc = allocator(rt, alloc)
    resident = isinstance(pos, DeviceArrays)
    n = pos.n if resident else len(pos)
    if on_device is None:
        on_device = rt.has_fp64
    if not resident and (not on_device or n == 0):
        cube = cube or device_cube(pos)
        hi, lo = split_hi_lo(pos - cube.centre)
        return (cube, rt.to_device(pack4(hi, mass)),
                rt.to_device(pack4(lo, 0.0 if eps is None else eps)))
    if not rt.has_fp64:         # prepare.cl is float64 throughout
        raise ValueError("particles kept or prepared on the device need double precision "
                         f"(cl_khr_fp64), which {rt.info.label} lacks")
    if resident:
        d_pos, d_mass, d_eps = pos.pos, pos.mass, pos.eps
    else:
        d_pos, d_mass = upload(rt, [np.asarray(pos, np.float64), np.asarray(mass, np.float64)],
                               ["upload_pos", "upload_mass"])
        d_eps = None if eps is None else upload(rt, [np.asarray(eps, np.float32)],
                                                ["upload_eps"])[0]
    if cube is None:
        lo, hi = device_extent(rt, d_pos, n, alloc)
        cube = extent_cube(lo, hi, power_of_two=True)
    hi, lo = alloc("in_hi", 16 * n), alloc("in_lo", 16 * n)
    c = cube.centre
    per_eps = [d_eps] if d_eps is not None else []
    launch(rt, "prepare.cl", "split_sources", n, np.int32(n), d_pos, d_mass, np.float64(c[0]),
           np.float64(c[1]), np.float64(c[2]), *per_eps, hi, lo, local=spread_local(rt.info),
           defines={"PER_EPS": 1} if per_eps else None)
    return cube, hi, lo


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
                      timed: bool = True) -> DeviceTree:
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
    device markers).
    """
    work = alloc
    alloc = allocator(rt, alloc)
    n = pos.n if isinstance(pos, DeviceArrays) else len(pos)
    check_build_args(n, theta, n_leaf, multipole)
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
    cube, in_hi, in_lo = upload_sources(rt, pos, mass, cube, prepare_on_device, work, eps)
    t1 = phase("upload", t0)

    i32 = np.int32
    keys = alloc("keys", 8 * n)
    _launch(rt, "morton_keys", n, i32(n), in_hi, in_lo, np.float32(2.0**BITS / cube.side), keys)
    skeys, order = radix_sort(rt, keys, n, key_bits=3 * BITS, alloc=work)
    src_hi, src_lo = alloc("src_hi", 16 * n), alloc("src_lo", 16 * n)
    _launch(rt, "gather", n, i32(n), order, in_hi, in_lo, src_hi, src_lo)
    t2 = phase("sort", t1)

    n_start = alloc("n_start", 4 * n)
    _launch(rt, "count_cells", n, i32(n), skeys, i32(n_leaf), n_start, None, None)
    offset, n_cells = exclusive_scan(rt, n_start, n, alloc=work, name="cell_offset")
    info, link = alloc("cell_info", 16 * n_cells), alloc("cell_link", 16 * n_cells)
    _launch(rt, "fill_cells", n, i32(n), skeys, i32(n_leaf), offset, info, link)
    t3 = phase("cells", t2)

    quad = multipole == "quadrupole"
    cell_hi, cell_lo = alloc("cell_hi", 16 * n_cells), alloc("cell_lo", 16 * n_cells)
    cell_quad = alloc("cell_quad", 32 * n_cells) if quad else None
    cell_eps = alloc("cell_eps", 16 * n_cells) if per_eps else None
    tree = DeviceTree(rt=rt, cube=cube, theta=float(theta), n_leaf=int(n_leaf),
                      multipole=multipole, n=n, n_cells=int(n_cells), order=order, keys=skeys,
                      src_hi=src_hi, src_lo=src_lo, info=info, link=link, cell_hi=cell_hi,
                      cell_lo=cell_lo, cell_quad=cell_quad, cell_eps=cell_eps, timings=t,
                      alloc=work)
    device_moments(tree)
    phase("moments", t3)
    return tree


def device_moments(tree: DeviceTree, ext: cl.Buffer | None = None) -> None:
    """(Re)compute every cell's mass, centre of mass, S_eff, bounding radius (and
    quadrupole) from the tree's particles, level by level, deepest first (enqueued only).
    ``ext``: a float buffer over the cells for a refit (cl/treebuild.cl ``cell_moments``:
    the cells' sides grown to hold their particles); None: a build."""
    i32, n_cells = np.int32, tree.n_cells
    quad = [tree.cell_quad] if tree.cell_quad is not None else []
    per_eps = [tree.cell_eps] if tree.cell_eps is not None else []
    rest = [np.float32(tree.cube.side), np.float32(1.0 / tree.theta), tree.keys, tree.src_hi,
            tree.src_lo, tree.info, tree.link, tree.cell_hi, tree.cell_lo, ext] + per_eps + quad
    defines, count = moment_defines(tree.multipole, bool(per_eps)), i32(n_cells)
    for level in range(MAX_LEVEL + 1, -1, -1):
        _launch(tree.rt, "cell_moments", n_cells, count, i32(level), *rest, defines=defines)


def inverse_order(tree: DeviceTree) -> cl.Buffer:
    """The inverse of the tree's ``order`` (made once per tree on first use; a refit keeps
    the order): results go back to the caller's order as a gather (prepare.cl)."""
    if tree.inverse is None:
        tree.inverse = allocator(tree.rt, tree.alloc)("inverse", 4 * tree.n)
        launch(tree.rt, "prepare.cl", "invert_order", tree.n, np.int32(tree.n), tree.order,
               tree.inverse, local=spread_local(tree.rt.info))
    return tree.inverse


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

    n_start, flag, size = alloc("g_start", 4 * n), alloc("g_flag", 4 * n), alloc("g_size", 4 * n)
    _launch(rt, "count_cells", n, i32(n), tree.keys, i32(n_group), n_start, flag, size)
    offset, n_groups = exclusive_scan(rt, flag, n, alloc=base, name="g_offset")
    ranges = alloc("g_leaves", 8 * n_groups)
    _launch(rt, "fill_leaves", n, i32(n), size, offset, ranges)
    if pack:
        n_leaves, leaves = n_groups, ranges
        gflag, box = alloc("g_pack", 4 * n_leaves), alloc("g_box", 32 * n_leaves)
        _launch(rt, "leaf_boxes", n_leaves, i32(n_leaves), leaves, tree.keys, box)
        _launch(rt, "pack_leaves", n_leaves, i32(n_leaves), leaves, i32(n), tree.keys, box,
                i32(n_group), np.array(PACK_SPREAD + PACK_UNION, np.int32).view(cl.cltypes.int4)[0],
                gflag)
        offset, n_groups = exclusive_scan(rt, gflag, n_leaves, alloc=base, name="g_offset2")
        ranges = alloc("g_ranges", 8 * n_groups)
        _launch(rt, "fill_groups", n_leaves, i32(n_leaves), leaves, gflag, offset, ranges)
    g_hi, g_lo, g_half = (alloc("g_hi", 16 * n_groups), alloc("g_lo", 16 * n_groups),
                          alloc("g_half", 16 * n_groups))
    tree.groups[n_group, pack] = DeviceGroups(int(n_groups), ranges, g_hi, g_lo, g_half)
    group_boxes(tree, tree.groups[n_group, pack])
    return tree.groups[n_group, pack]


def group_boxes(tree: DeviceTree, g: DeviceGroups) -> None:
    """The boxes of ``g`` around the tree's particles as they are now (enqueued)."""
    _launch(tree.rt, "group_boxes", g.n_groups, np.int32(g.n_groups), g.ranges, tree.src_hi,
            tree.src_lo, g.hi, g.lo, g.half)
