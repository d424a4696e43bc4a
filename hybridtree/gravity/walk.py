"""Host side of the group tree walk (cl/treewalk.cl, cl/walklist.cl): sink groups, device
arrays and the launches (which kernel and defines: :mod:`.walk_kernels`; the list walk's
batches and room: :mod:`.list_walk`).  How it groups sinks and sizes the lists: the
walk's tuning (:class:`.tuning.WalkTuning`), passed in."""

from __future__ import annotations

import time
from typing import Callable

import numpy as np
import pyopencl as cl

from ..device.kernels import launch, spread_local
from ..device.reduce import GroupCounts
from ..device.runtime import Runtime, pack4, split_hi_lo
from .criterion import Criterion, criterion_of
from .parts import FULL, Part
from .periodic import Periodic
from .tuning import TUNING, WalkTuning
from .splitting import Changeover
from .tree import Octree, integer_coords, leaf_ranges, morton_keys
from .tree.octree import packed_leaf_ranges
from ..device.transfer import allocator, download, read_counts, scratch
from .tree.device_build import DeviceGroups, DeviceTree, device_groups, inverse_order
from .tree.device_sort import exclusive_scan
from .list_walk import list_info, list_walk
from .walk_sources import source_buffers
from .walk_kernels import (LIST_WALK, LISTED_SINKS, OTHER_SINKS, OWN_SINKS, WalkKernel,
                           default_group, put_defines, walk_kernel, walk_options)

__all__ = ["default_group", "sink_groups", "tree_forces", "walk_active", "walk_into"]


def sink_groups(keys_sorted: np.ndarray, n_group: int, pack: bool = TUNING.pack_groups
                ) -> tuple[np.ndarray, np.ndarray]:
    """Groups of at most ``n_group`` Morton-consecutive sinks: the cells of a split with at
    most ``n_group`` per cell, consecutive siblings merged where ``pack``
    (:attr:`.tuning.WalkTuning.pack_groups`)."""
    if pack:
        return packed_leaf_ranges(keys_sorted, n_group)
    return leaf_ranges(keys_sorted, n_group)


def _group_boxes(pos: np.ndarray, gstart: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lo = np.minimum.reduceat(pos, gstart, axis=0)
    hi = np.maximum.reduceat(pos, gstart, axis=0)
    return 0.5 * (lo + hi), 0.5 * (hi - lo)


def _host_sinks(rt: Runtime, tree: Octree | DeviceTree, sinks: np.ndarray | None,
                n_group: int, criterion: Criterion, sink_eps: np.ndarray | None = None,
                pack: bool = TUNING.pack_groups) -> tuple[list, np.ndarray, int]:
    """Sink groups formed on the host: (kernel arguments from n_groups to sink_self,
    caller index of each sink in group order, n_groups).  A relative ``criterion`` (a_old
    of each sink, caller order): alpha times the group's smallest |a_old| goes into the w
    of its half-sides.  ``sink_eps``: the sinks' own softenings (a walk with PER_EPS;
    default 0: a pair takes the source's)."""
    centre = tree.cube.centre
    if sinks is None:          # a host tree's own particles (SELF OWN_SINKS)
        spos, skeys, sorder = tree.pos, tree.keys, tree.order
    else:                      # SELF OTHER_SINKS
        skeys = morton_keys(integer_coords(sinks, tree.cube))
        sorder = np.argsort(skeys, kind="stable")
        skeys, spos = skeys[sorder], sinks[sorder]
    gstart, gcount = sink_groups(skeys, n_group, pack)
    gcentre, ghalf = _group_boxes(spos, gstart)
    # the sinks' softenings in group order, and each group's smallest (cl/treebuild.cl
    # group_boxes: the w of the group centre's lo part, PER_EPS walks)
    s_eps = 0.0 if sink_eps is None else np.asarray(sink_eps, np.float32)[sorder]
    g_eps = 0.0 if sink_eps is None else np.minimum.reduceat(s_eps, gstart)
    half32 = np.nextafter(ghalf.astype(np.float32), np.float32(np.inf))
    bound = criterion.group_bounds(sorder, gstart) if criterion.relative else 0.0
    snk_hi, snk_lo = split_hi_lo(spos - centre)
    g_hi, g_lo = split_hi_lo(gcentre - centre)
    args = [np.int32(len(gstart)),
            rt.to_device(np.stack([gstart, gcount], axis=1).astype(np.int32)),
            rt.to_device(pack4(g_hi)), rt.to_device(pack4(g_lo, g_eps)),
            rt.to_device(pack4(half32, bound)),
            # w = the sink's own mass (list walk: its self term is removed at the end)
            rt.to_device(pack4(snk_hi, tree.mass if sinks is None else 0.0)),
            rt.to_device(pack4(snk_lo, s_eps)), None]
    return args, sorder, len(gstart)


def _device_sinks(tree: DeviceTree, n_group: int, groups: DeviceGroups | None = None,
                  pack: bool = TUNING.pack_groups) -> tuple[list, int]:
    """Sink groups of a device tree's own particles, formed on the device (or ``groups``;
    ``pack``: sibling leaves merged).  Whether they are the walked tree's sources too
    (their self terms removed) is the walk's SELF define (:func:`walk_options`): no
    sink_self buffer."""
    g = groups or device_groups(tree, n_group, pack)
    return [np.int32(g.n_groups), g.ranges, g.hi, g.lo, g.half, tree.src_hi, tree.src_lo,
            None], g.n_groups


def _set_floor(rt: Runtime, n_groups: int, ranges: cl.Buffer, caller: cl.Buffer,
               g_half: cl.Buffer, criterion: Criterion, n_sinks: int) -> None:
    """A relative ``criterion``'s alpha |a_old|, the smallest of each group's sinks, into
    the w of its half-sides (cl/blocks.cl ``group_floor``); ``caller``: each sink's row of
    the float64 a_old buffer, which has ``n_sinks`` rows (larger caller indices are not
    sinks).  Nothing for the geometric criterion."""
    if criterion.relative:
        a_old, alpha = criterion.floor_args
        four = isinstance(a_old, tuple)   # a float32 part and its net force (DeviceState)
        launch(rt, "blocks.cl", "group_floor4" if four else "group_floor", n_groups,
               np.int32(n_groups), np.int32(n_sinks), ranges, caller,
               *(a_old if four else (a_old,)), alpha, g_half)


def _enqueue_walk(rt: Runtime, walk: WalkKernel, args: list, n_groups: int, quad: bool,
                  then: Callable[[], None] | None = None, copies: int | None = None,
                  tuning: WalkTuning = TUNING) -> dict:
    """Enqueue the walk kernel(s), then ``then`` (see :func:`.list_walk.list_walk`, and
    there ``copies`` and ``tuning``); the list walk's kernel times with ``tuning.profile``."""
    if walk.name == LIST_WALK:
        return list_walk(rt, walk, args, quad, then, copies, tuning)
    # tree_walk_simd: private arrays, so work-groups of one group each
    per_group = 1 if walk.name == "tree_walk_simd" else walk.n_group
    launch(rt, walk.file, walk.name, n_groups * per_group, *args, defines=walk.defines,
           local=per_group, fixed=True)
    if then is not None:
        then()
    return {}


def _unsort64(rt: Runtime, n: int, keep: int, order: cl.Buffer, out: cl.Buffer,
              counts: cl.Buffer | None, acc: cl.Buffer, pot: cl.Buffer | None,
              cnt: cl.Buffer | None) -> None:
    """A walk's results (tree order) into the caller's order as float64, for the particles
    of caller index below ``keep`` (cl/prepare.cl ``unsort64``: scattered writes); ``pot``,
    ``cnt`` None: none written."""
    launch(rt, "prepare.cl", "unsort64", n, np.int32(n), np.int32(keep), order, out, counts,
           acc, pot, cnt, defines=put_defines(pot is not None, cnt is not None))


def _sort_back64(tree: DeviceTree, keep: int, out: cl.Buffer, counts: cl.Buffer | None,
                 acc: cl.Buffer, pot: cl.Buffer | None, cnt: cl.Buffer | None,
                 float4: bool = False) -> None:
    """:func:`_unsort64` as a gather (``sort_back64``; ``float4``: ``sort_back4``)."""
    name, args = ("sort_back4", (acc, cnt)) if float4 else ("sort_back64", (acc, pot, cnt))
    launch(tree.rt, "prepare.cl", name, keep, np.int32(keep), inverse_order(tree), out, counts,
           *args, defines=put_defines(float4 or pot is not None, cnt is not None))


def _group_counts(rt: Runtime, walk: WalkKernel, n_groups: int, alloc) -> cl.Buffer | None:
    """Where a walk without counts per sink (SINK_COUNTS 0) puts its groups' (entries,
    cells): the tree walks into a buffer of 8 bytes a group; the list walk has them in
    its list_info (None: no buffer)."""
    return None if walk.name == LIST_WALK else alloc("walk_gcounts", 8 * max(n_groups, 1))


def walk_into(rt: Runtime, tree: DeviceTree, eps: float, acc: cl.Buffer,
              pot: cl.Buffer | None, n_group: int | None = None,
              split: Changeover | None = None, part: Part | str = FULL,
              options: dict | None = None, n_sinks: int | None = None,
              groups: DeviceGroups | None = None, sinks: DeviceTree | None = None,
              criterion: Criterion | None = None, periodic: Periodic | None = None,
              tuning: WalkTuning = TUNING, per_sink: bool = False, float4: bool = False
              ) -> tuple[cl.Buffer | GroupCounts, int, dict]:
    """Walk a device tree for its own particles (double-precision device) and write the
    results as float64, in the caller's particle order, into ``acc`` (n x 3) and
    ``pot`` (n; None: no potential written, none kept); nothing is read back but the list
    sizes.  Units: the tree's.  ``float4``: ``acc`` is float4s instead (ax, ay, az, pot).

    ``n_sinks``: only the particles of caller index below it are sinks (default all: a
    tree of local particles and received LET entries keeps the local ones first);
    ``groups``: the sink groups to walk (default all groups of ``n_group``; they must
    hold every sink).  ``sinks``: another device tree built in the same cube whose
    particles are the sinks instead (its groups, no self term: e.g. the local particles
    against a tree of the LET received from other processes); results in its caller
    order.  Returns (the interaction counts: with ``per_sink`` int2 per sink in the
    caller's order, particle-particle, particle-cell, else kept per group (no buffer of 8
    bytes a sink: :class:`hybridtree.device.reduce.GroupCounts`, which
    :meth:`~hybridtree.device.reduce.Reducer.count_sum` sums alike); the number of groups
    walked; timings of the list kernels with ``tuning.profile``).  ``split``/``part`` as
    for :func:`tree_forces`.
    ``criterion``: the opening criterion (:mod:`.criterion`; None: geometric); a relative
    one's a_old is a float64 n x 3 buffer in the caller's order, and the tree must be
    built with its :attr:`~.criterion.Relative.build_theta`.  ``periodic``: TreePM's
    short-range force in that box (:mod:`.periodic`; positions in the box).  ``tuning``:
    the walk's switches (:class:`.tuning.WalkTuning`).
    """
    if not rt.has_fp64:
        raise ValueError("walk_into writes float64 results: the device needs cl_khr_fp64")
    own = sinks is None
    sinks = tree if own else sinks
    assert own or np.array_equal(tree.cube.centre, sinks.cube.centre), "trees of different cubes"
    n = sinks.n
    keep = n if n_sinks is None else int(n_sinks)
    quad = tree.cell_quad is not None
    criterion = criterion_of(criterion)
    at = float4 and tuning.direct_out and own and keep == n and not per_sink   # no walk_out
    opts = {**walk_options(tree, options, OWN_SINKS if own else OTHER_SINKS, per_sink),
            **({"OUT_AT": 1} if at else {})}      # each float4 at its caller index
    walk = walk_kernel(rt, keep, n_group, tree.n_leaf, quad, eps, opts, split, part,
                       criterion, periodic, tuning=tuning)
    sink_args, n_groups = _device_sinks(sinks, walk.n_group, groups, tuning.pack_groups)
    _set_floor(rt, n_groups, sink_args[1], sinks.order, sink_args[4], criterion, keep)
    alloc = allocator(rt, sinks.alloc)
    out = acc if at else alloc("walk_out", 16 * n)
    if per_sink:        # counts in tree order, then in caller order beside the forces
        counts, cnt = alloc("walk_counts", 8 * n), alloc("walk_cnt", 8 * n)
    else:
        counts, cnt = _group_counts(rt, walk, n_groups, alloc), None
    args = source_buffers(rt, tree) + sink_args + [np.float32(eps * eps), out, counts]
    back = None if at else lambda: _sort_back64(sinks, keep, out, counts, acc, pot, cnt, float4)
    prof = _enqueue_walk(rt, walk, args + [tree.order] * at, n_groups, quad, back, tuning=tuning)
    if per_sink:
        return cnt, n_groups, prof
    info = list_info(rt, n_groups) if counts is None else counts
    return GroupCounts(n_groups, sink_args[1], info, sinks.order, keep, int(own)), n_groups, prof


def walk_active(rt: Runtime, tree: DeviceTree, eps: float, acc: cl.Buffer, pot: cl.Buffer,
                bins: cl.Buffer, kmin: int, n_group: int | None = None,
                criterion: Criterion | None = None, options: dict | None = None,
                n_sinks: int | None = None, periodic: Periodic | None = None,
                tuning: WalkTuning = TUNING, per_sink: bool = False
                ) -> tuple[cl.Buffer | GroupCounts, int, int]:
    """Walk a device tree for the active particles only: those whose time bin (int32 ``bins``,
    caller order) is at least ``kmin``.  They are packed in tree (Morton) order; each group
    of the whole walk with active sinks gives one group of them, walked with the whole
    group's box, so that the active sinks get a full walk's lists and forces (on GPUs the
    list evaluation spreads a small group's list over idle work-items, up to the whole
    work-group: ``copies`` in cl/walklist.cl, ``tuning``'s active_copies; where every sink
    is active, as a full walk does, so that the forces are :func:`walk_into`'s bits).
    Consecutive sparse groups may be walked as one with the union of their boxes
    (active_merge: CPUs), and a walk of few groups shares each group's walk among several
    work-items (sparse_walk: GPUs; :class:`.tuning.DeviceTuning`).  Their float64 results go into their rows of ``acc`` and ``pot`` (the other rows
    are left as they were); one blocking read (how many sinks are active and how many groups
    they fill) besides the list walk's.  Returns (interaction counts of the active sinks,
    kept per group (:class:`hybridtree.device.reduce.GroupCounts`), or with ``per_sink``
    int2 per sink in packed order; how many are active; the number of groups walked).
    ``criterion`` as for :func:`walk_into`; ``n_sinks``: only particles of caller index
    below it have bins and are sinks (default all: a tree of local particles and received
    LET entries keeps the local ones first); ``periodic``: TreePM's short range,
    ``tuning`` the walk's switches, as for :func:`walk_into`."""
    if not rt.has_fp64:
        raise ValueError("walk_active writes float64 results: the device needs cl_khr_fp64")
    n = tree.n
    keep = n if n_sinks is None else int(n_sinks)
    alloc = allocator(rt, tree.alloc)
    i32 = np.int32
    flag = alloc("act_flag", 4 * max(n, 1))
    none = alloc("act_counts", 8) if per_sink else GroupCounts(0, None, None, None, keep, 1)
    if n == 0:
        return none, 0, 0
    launch(rt, "blocks.cl", "active_flags", n, i32(n), i32(keep), i32(kmin), tree.order, bins, flag)
    # how many are active is read together with how many groups they fill (one wait)
    offset, _ = exclusive_scan(rt, flag, n, alloc=tree.alloc, name="act_offset",
                               read_total=False)
    quad = tree.cell_quad is not None
    criterion = criterion_of(criterion)
    # the groups of the whole tree (as for all particles), each cut down to its active
    # sinks and walked with the whole group's box
    mine = tuning.device(rt.info.kind)
    opts = walk_options(tree, options, LISTED_SINKS, per_sink)
    walk = walk_kernel(rt, n, n_group, tree.n_leaf, quad, eps, opts, None, FULL, criterion,
                       periodic, tuning=tuning)
    whole = device_groups(tree, walk.n_group, tuning.pack_groups)
    most = max(whole.n_groups, 1)
    snk_hi, snk_lo = alloc("act_hi", 16 * n), alloc("act_lo", 16 * n)
    self_idx, caller = alloc("act_self", 4 * n), alloc("act_caller", 4 * n)
    launch(rt, "blocks.cl", "pack_active", n, i32(n), flag, offset, tree.order, tree.src_hi,
                  tree.src_lo, snk_hi, snk_lo, self_idx, caller)
    # the active groups take the whole groups' boxes (device_groups keeps them current),
    # not the active sinks': the box of one or two active sinks accepts nearer cells
    # (with 2 % active at random a p99 error 1.5-2 x the full force's,
    # tests/gravity/test_treewalk.py); consecutive sparse groups walked as one
    # (active_merge); where every sink is active the kernel keeps the whole walk's
    # groups, so that the forces are walk_into's bits
    window, cap, grow = mine.active_merge
    cap = min(cap, walk.n_group)
    n_windows = -(-whole.n_groups // window)
    wcount = alloc("act_wcount", 4 * max(n_windows, 1))
    t_ranges, t_hi, t_lo, t_half = (alloc("act_t_ranges", 8 * most), alloc("act_t_hi", 16 * most),
                                    alloc("act_t_lo", 16 * most), alloc("act_t_half", 16 * most))
    launch(rt, "blocks.cl", "active_windows", n_windows, i32(whole.n_groups), i32(n),
           i32(keep), i32(window), i32(cap), np.float32(grow), whole.ranges, offset, whole.hi,
           whole.lo, whole.half, wcount, t_ranges, t_hi, t_lo, t_half)
    woff, _ = exclusive_scan(rt, wcount, n_windows, alloc=tree.alloc, name="act_woff",
                             read_total=False)
    m, n_groups = (int(c) for c in read_counts(rt, [(offset, 4 * n), (woff, 4 * n_windows)]))
    if m == 0:
        return none, 0, 0
    # a small group's list spread over more copies of its sinks than a full walk's;
    # all active: the full walk's, so that the forces are the full walk's bits
    copies = mine.active_copies if m < keep else None
    # few groups: the walk of each is shared by several work-items (sparse_walk)
    if m < keep and n_groups < mine.sparse_share * whole.n_groups:
        walk = walk_kernel(rt, n, n_group, tree.n_leaf, quad, eps, opts, None, FULL,
                           criterion, periodic, sparse=True, tuning=tuning)
    ranges = alloc("act_ranges", 8 * most)
    g_hi, g_lo, g_half = (alloc("act_g_hi", 16 * most), alloc("act_g_lo", 16 * most),
                          alloc("act_g_half", 16 * most))
    launch(rt, "blocks.cl", "pack_windows", n_windows, i32(n_windows), i32(window), wcount,
           woff, t_ranges, t_hi, t_lo, t_half, ranges, g_hi, g_lo, g_half)
    _set_floor(rt, n_groups, ranges, caller, g_half, criterion, keep)
    out = alloc("walk_out", 16 * n)     # walk_into's: no walk is in flight beside this one
    counts = alloc("act_counts", 8 * n) if per_sink else _group_counts(rt, walk, n_groups, alloc)
    args = source_buffers(rt, tree) + [i32(n_groups), ranges, g_hi, g_lo, g_half, snk_hi,
                                        snk_lo, self_idx, np.float32(eps * eps), out, counts]
    _enqueue_walk(rt, walk, args, n_groups, quad,
                  lambda: _unsort64(rt, m, keep, caller, out, None, acc, pot, None), copies,
                  tuning)
    if per_sink:
        return counts, m, n_groups
    info = list_info(rt, n_groups) if counts is None else counts        # (entries, cells)
    return GroupCounts(n_groups, ranges, info, caller, keep, 1), m, n_groups


def tree_forces(rt: Runtime, tree: Octree | DeviceTree, eps: float, n_group: int | None = None,
                sinks: np.ndarray | None = None, options: dict | None = None,
                split: Changeover | None = None, part: Part | str = FULL,
                criterion: Criterion | None = None,
                periodic: Periodic | None = None, sink_eps: np.ndarray | None = None,
                tuning: WalkTuning = TUNING):
    """Walk ``tree`` (host-built or device-built) for every sink; float64 results in the
    sinks' own order, on the host.

    ``sinks=None``: the sinks are the tree's own particles (in the caller's order,
    with no self-interaction).  ``options``: extra kernel defines (tuning).
    ``split`` and ``part`` (:mod:`.parts`, or its name: "full", "soft" or "hard"): the
    hybrid tree's force parts (:mod:`hybridtree.gravity.splitting`); the potential is
    always the full one, except for "hard", whose walk skips distant cells and whose
    potential is meaningless.  ``criterion``: the opening criterion (:mod:`.criterion`;
    None: geometric); a relative one's a_old is (n, 3) of the sinks in their order (the
    tree must be built with its build_theta).  ``periodic``: as for :func:`walk_into`.  ``sink_eps``: with ``sinks``
    and a tree of a softening per particle, the sinks' own (default 0: each pair is
    softened with its source's).  ``tuning``: the walk's switches (:class:`.tuning.WalkTuning`).
    Returns (acc (n, 3), pot (n,), n_pp (n,), n_pc (n,), timings in seconds).
    Results that stay on the device: :func:`walk_into`.
    """
    t0 = time.perf_counter()
    n_sinks = (tree.n if isinstance(tree, DeviceTree) else len(tree.pos)) if sinks is None \
        else len(sinks)
    quad = (tree.cell_quad if isinstance(tree, DeviceTree) else tree.quad) is not None
    criterion = criterion_of(criterion)
    opts = walk_options(tree, options, OWN_SINKS if sinks is None else OTHER_SINKS)
    walk = walk_kernel(rt, n_sinks, n_group, tree.n_leaf, quad, eps, opts, split, part,
                       criterion, periodic, tuning=tuning)
    if criterion.relative and np.shape(criterion.a_old) != (n_sinks, 3):
        raise ValueError(f"the old accelerations of the relative opening criterion must be "
                         f"({n_sinks}, 3), got {np.shape(criterion.a_old)}")
    on_device = isinstance(tree, DeviceTree) and sinks is None
    if on_device:
        sink_args, n_groups = _device_sinks(tree, walk.n_group, pack=tuning.pack_groups)
        if criterion.relative:
            a_old = rt.to_device(np.ascontiguousarray(criterion.a_old, np.float64))
            _set_floor(rt, n_groups, sink_args[1], tree.order, sink_args[4],
                       criterion.with_a_old(a_old), tree.n)
        sorder = None
        n = tree.n
    else:
        sink_args, sorder, n_groups = _host_sinks(rt, tree, sinks, walk.n_group, criterion,
                                                  sink_eps, tuning.pack_groups)
        n = len(sorder)
    out = scratch(rt, "walk_out", 16 * n)
    counts = scratch(rt, "walk_counts", 8 * n)
    args = source_buffers(rt, tree) + sink_args + [np.float32(eps * eps), out, counts]
    rt.queue.finish()
    t1 = time.perf_counter()
    prof = _enqueue_walk(rt, walk, args, n_groups, quad, tuning=tuning)
    wide = on_device and rt.has_fp64
    if wide:        # back into the caller's order, as float64, before the download
        acc_buf, pot_buf = scratch(rt, "walk_acc", 24 * n), scratch(rt, "walk_pot", 8 * n)
        cnt_buf = scratch(rt, "walk_cnt", 8 * n)
        _sort_back64(tree, n, out, counts, acc_buf, pot_buf, cnt_buf)
    elif on_device:
        res_buf, cnt_buf = scratch(rt, "walk_res", 16 * n), scratch(rt, "walk_cnt", 8 * n)
        launch(rt, "treebuild.cl", "unsort", n, np.int32(n), tree.order, out, counts, res_buf,
               cnt_buf, local=spread_local(rt.info))
        out, counts = res_buf, cnt_buf
    rt.queue.finish()
    t2 = time.perf_counter()
    cnt = np.empty((n, 2), np.int32)
    if wide:
        acc, pot = np.empty((n, 3)), np.empty(n)
        download(rt, [(acc_buf, acc), (pot_buf, pot), (cnt_buf, cnt)])
        n_pp, n_pc = cnt[:, 0], cnt[:, 1]     # int32 views: no copy of 2 x 8 bytes per sink
    else:
        res = np.empty((n, 4), np.float32)
        download(rt, [(out, res), (counts, cnt)])
    if on_device and not wide:
        acc = res[:, :3].astype(np.float64)
        pot = res[:, 3].astype(np.float64)
        n_pp, n_pc = cnt[:, 0], cnt[:, 1]
    elif not on_device:
        acc = np.empty((n, 3))
        pot = np.empty(n)
        n_pp = np.empty(n, np.int64)
        n_pc = np.empty(n, np.int64)
        acc[sorder] = res[:, :3]
        pot[sorder] = res[:, 3]
        n_pp[sorder] = cnt[:, 0]
        n_pc[sorder] = cnt[:, 1]
    t3 = time.perf_counter()
    return acc, pot, n_pp, n_pc, {"walk_setup": t1 - t0, "walk": t2 - t1, "download": t3 - t2,
                                  "n_groups": n_groups, **prof}
