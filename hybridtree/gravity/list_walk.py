"""The list walk's host side (cl/walklist.cl): ``walk_lists`` writes each sink group's
interaction list (one work-item per group, or COOP work-items walking it together),
``eval_lists`` evaluates it.  Lists go into a room of fixed entries per group; the room that sufficed
is kept per OpenCL context and grown (the walk done again) when a list outgrew it, so
the results never depend on the room.  The groups walked at once (a batch) are as many as
fit in a share of the device's memory, fewer as the room grows; where a room split a walk
into batches and its longest list filled less than a quarter of it, the room shrinks
again, so that one walk with a spike of long lists (a few groups of 10^6 entries) does not
leave every later walk of the process in small batches.  A room that fits the whole walk
is kept as it is: shrinking it then gains nothing, and lists that swing from walk to walk
(a block step's substeps) would be walked twice each time they outgrew it again.  The
first room, the memory share, the batch bound and the kernels' profile are fields of the
walk's tuning (:class:`.tuning.WalkTuning`), passed in; the runtime keeps its room
(:class:`ListRoom`, :func:`list_room`)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pyopencl as cl

from ..device.kernels import launch
from ..device.runtime import Runtime
from ..device.transfer import copies, read_small, scratch
from .tuning import TUNING, WalkTuning
from .walk_kernels import LIST_WALK, WalkKernel

__all__ = ["ListRoom", "list_info", "list_room", "list_walk", "shrunk_room"]


@dataclass
class ListRoom:
    """The list walk's state on one runtime: ``room``, the room (entries per group list)
    that sufficed last time (None: no walk yet, the tuning's first room); ``walks`` and
    ``again``, walks and walks done again in a larger room, cumulative (tuning scripts
    and tests read them)."""

    room: int | None = None
    walks: int = 0
    again: int = 0


def list_room(rt: Runtime) -> ListRoom:
    """The list walk's state on ``rt`` (:attr:`Runtime.lists
    <hybridtree.device.runtime.Runtime.lists>`), made at the first call."""
    kept = rt.lists
    if kept is None:
        kept = rt.lists = ListRoom()
    return kept


def list_info(rt: Runtime, n_groups: int) -> cl.Buffer:
    """The list walk's int2 (entries, cells) of each of ``n_groups`` group lists (its
    ``list_info``; a walk without counts per sink keeps its counts there: SINK_COUNTS 0),
    valid until the next walk."""
    return scratch(rt, "walk_info", 8 * n_groups)


def list_walk(rt: Runtime, walk: WalkKernel, args: list, quad: bool,
              then: Callable[[], None] | None = None, copies: int | None = None,
              tuning: WalkTuning = TUNING) -> dict:
    """Enqueue walk_lists + eval_lists over batches of groups (arguments as for tree_walk;
    ``wg``: eval_lists's work-group size); returns kernel times where ``tuning.profile``.
    ``copies``: how many copies of a small group's sinks may share its work-group (with
    REPLICATE > 1; default REPLICATE).
    ``then``: enqueues what follows the walk (results back to the caller's order); it is
    enqueued before the list sizes are read, so the device goes on with it while the host
    waits (and again after a walk redone in larger lists, which overwrites it)."""
    at = int(walk.defines.get("OUT_AT", 0))     # out_at, the last argument (OUT_AT 1)
    nx = len(args) - 17 - at            # the cells' optional arrays: cell_eps, quad
    assert nx >= int(quad), "the walk's arguments lack the quadrupoles"
    n_cells, cell_hi, cell_lo, link = args[:4]
    extras = args[4:4 + nx]
    src_hi, src_lo = args[4 + nx:6 + nx]
    n_groups, ranges, g_hi, g_lo, g_half, sink_hi, sink_lo, self_idx = args[6 + nx:14 + nx]
    eps2, out, counts, *out_at = args[14 + nx:]
    defines, wg, lwg = walk.defines, walk.wg, int(walk.defines.get("LWG", 64))
    lbuf, n_groups = int(defines.get("LBUF", 0)), int(n_groups)
    coop = int(defines.get("COOP", 0))    # work-items walking one group together (0: one)
    per_eps = int(defines.get("PER_EPS", 0))      # the walk's opening takes cell_eps too
    replicate = int(defines.get("REPLICATE", 1))
    copies = np.int32(max(1, replicate if copies is None else int(copies)))
    info = list_info(rt, n_groups)
    budget = min(rt.device.max_mem_alloc_size,
                 rt.device.global_mem_size // tuning.list_memory_share, tuning.list_batch_bytes)
    start, profile = tuning.list_start, tuning.profile
    kept = list_room(rt)
    room, prof = kept.room or start, {"list_walk": 0.0, "list_eval": 0.0}

    def lap(key: str | None, since: float) -> float:     # profile: time since ``since``
        if not profile:
            return since
        rt.queue.finish()
        now = time.perf_counter()
        if key:
            prof[key] += now - since
        return now

    for _attempt in range(2):
        assert lbuf == 0 or room % lbuf == 0, "list room must hold whole LBUF blocks"
        batch = max(1, min(n_groups, budget // (4 * room)))
        lists = None            # a walk done again lets the smaller room's lists go first
        lists = _batch_lists(rt, 4 * batch * room, tuning, src_hi.size // 16)
        for g0 in range(0, n_groups, batch):
            nb = min(batch, n_groups - g0)
            t = lap(None, 0.0)
            launch(rt, walk.file, LIST_WALK, nb * max(coop, 1), n_cells, cell_hi, cell_lo, link,
                   *extras[:per_eps], np.int32(g0), np.int32(nb), g_hi, g_lo, g_half,
                   np.int32(room), lists, info, defines=defines, local=coop or lwg, fixed=True)
            t = lap("list_walk", t)
            launch(rt, walk.file, walk.eval_name, nb * wg, cell_hi, cell_lo,
                   *extras, src_hi, src_lo, np.int32(g0), ranges, g_hi,
                   g_lo, sink_hi, sink_lo, self_idx, np.int32(room), lists, info, eps2,
                   copies, out, counts, *out_at, defines=defines, local=wg, fixed=True)
            lap("list_eval", t)
        if then is not None:
            then()
        longest = _longest(rt, walk, n_groups, info)
        kept.walks += 1
        if longest <= room:
            if batch < n_groups and 4 * longest < room and room > start:
                kept.room = shrunk_room(longest, start)
            return prof if profile else {}
        kept.again += 1
        room = kept.room = max(64, _pow2(longest))   # again
    raise AssertionError("interaction lists outgrew the room made for them")


def _batch_lists(rt: Runtime, nbytes: int, tuning: WalkTuning, n: int) -> cl.Buffer:
    """A batch's lists (``nbytes``) for a tree of ``n`` particles: kept between walks
    unless ``tuning.lists_per_walk(n)`` (a large tree); then made for this walk and let go
    when it returns (the kept ones first), so that the build takes their memory for its
    keys rather than holding both at the run's peak."""
    if not tuning.lists_per_walk(n):
        return scratch(rt, "walk_lists", nbytes)
    copies(rt).scratch.pop("walk_lists", None)
    return rt.empty(nbytes)


def _pow2(n: int) -> int:
    """The smallest power of two >= n (n >= 1)."""
    return 1 << (max(int(n), 1) - 1).bit_length()


def shrunk_room(longest: int, start: int = TUNING.list_start) -> int:
    """The room kept after a walk in batches whose longest list (``longest`` entries)
    filled less than a quarter of it: twice the longest list's power of two (a walk
    overflows it only if its lists double), never below the first room ``start``."""
    return max(start, 2 * _pow2(longest))


def _longest(rt: Runtime, walk: WalkKernel, n_groups: int, info: cl.Buffer) -> int:
    """The longest of the walk's ``n_groups`` lists: found on the device (cl/walklist.cl
    ``longest_list``), 4 bytes read back (the walk's one wait)."""
    if n_groups == 0:
        return 0
    out = scratch(rt, "walk_longest", 4)
    cl.enqueue_fill_buffer(rt.queue, out, np.int32(0), 0, 4)
    launch(rt, walk.file, "longest_list", min(n_groups, 1 << 16), np.int32(n_groups), info,
           out, defines=walk.defines)
    return int(read_small(rt, np.empty(1, np.int32), out)[0])


