"""The tree walk's kernels: which one a device runs (cl/treewalk.cl or cl/walklist.cl),
its defines and work-group sizes, the default sink-group size, and the option sets the
walk can ask for (declared to :mod:`hybridtree.device.kernels`)."""

from __future__ import annotations

import inspect
import itertools
from dataclasses import dataclass

import numpy as np

from ..device.kernels import Recorder, kernel, option_sets
from ..device.runtime import DeviceInfo, Runtime, fit_work_group
from .criterion import Criterion, Relative, criterion_of
from .parts import FULL, HARD, SOFT, Part, as_part
from .periodic import Periodic
from .softening import check_softening
from .splitting import CHANGEOVERS, Changeover
from .tree.device_build import DeviceTree

__all__ = ["ACTIVE_COPIES", "ACTIVE_MERGE", "DEFAULT_GROUP", "LARGE_GROUP", "LIST_CAPACITY",
           "LIST_WALK", "RELATIVE_LARGE_GROUP", "RELATIVE_WALK", "SPARSE_WALK", "WALK_AXES",
           "WALK_SETTINGS", "WalkKernel", "default_group", "tree_options", "walk_defines",
           "walk_kernel", "walk_option_sets"]

#: Interaction-list capacity in local memory (entries).
LIST_CAPACITY = 256

#: Kernels of cl/walklist.cl (walk into global lists, then evaluate them).
LIST_WALK = "walk_lists"

#: Walk kernel and its defines per device kind (see cl/treewalk.cl); chosen by
#: measurement, docs/benchmarks.md.  "KERNEL" is not a define.
WALK_SETTINGS = {"cpu": {"KERNEL": "tree_walk_simd", "VEC": 8},
                 "gpu": {"KERNEL": LIST_WALK, "SINKS": 2, "LBUF": 8, "REPLICATE": 4}}

#: Relative-criterion list walks per device kind: COOP work-items walk each group together
#: from a stack in local memory (cl/walklist.cl; the serial walk's entries in another
#: order).  The few groups with near-zero |a_old| (a system's centre) walk up to 25 000
#: cells, which one work-item follows one dependent load after another.  H100, walk_lists
#: ms, alpha = 0.002, serial walk with its long walks split in pieces (session 15) ->
#: COOP = 32: Plummer 2^22 6.2 -> 4.0, cusp 2^22 8.0 -> 3.7, Plummer 2^24 13.2 -> 9.6,
#: cusp 2^24 15.2 -> 8.5 (COOP = 16 and 64 within 5 %).  Geometric walks are even, and
#: the serial walk is faster for them (2^22: 5.1 against 8.0 ms), so they keep it.
#: docs/history.md §23.  Capped at the device's work-group limit.
RELATIVE_WALK = {"gpu": {"COOP": 32}}

#: Sparse active walks per device kind: (defines, share): a block substep whose active
#: sinks fill fewer than ``share`` of the whole walk's groups walks its list walk with
#: ``defines`` (as RELATIVE_WALK, which relative walks have already).  Few groups
#: leave most of a GPU idle, and the longest serial walks set walk_lists's time.  H200,
#: geometric theta = 0.5, 2^22, refitted, random active (share of the groups walked:
#: serial / COOP = 32): 0.1 % (6.5 %) 6.0 / 2.3 ms, 0.3 % (18 %) 6.4 / 3.5, 0.5 % (28 %)
#: 6.2 / 4.7, 1 % (47 %) 7.1 / 6.6, 2 % (71 %) 8.1 / 9.8 (docs/history.md §26).
SPARSE_WALK = {"gpu": ({"COOP": 32}, 0.5)}

#: Copies of a small group's sinks in the list evaluation of an active walk (block
#: substeps, :func:`hybridtree.gravity.walk.walk_active`) per device kind, where the list
#: walk compiles copies in (REPLICATE > 1): its groups are the whole walk's cut down to
#: the active sinks, often one or two of a group's 128, so eval_lists may spread such a
#: group's list over every work-item instead of the REPLICATE = 4 copies that suit a
#: full walk's half-full groups.  H200, 2 % of 2^22 active at random, refitted: substep
#: 10.4 ms with 4 copies, 7.6 with 16, 7.3 with 64 (docs/history.md §25).
ACTIVE_COPIES = {"gpu": 64}

#: Consecutive sparse groups of an active walk walked as one, per device kind: (window,
#: cap, grow): within each window of that many consecutive groups of the whole walk,
#: neighbours with active sinks merge while they hold at most cap active sinks together
#: and the union of their boxes has no half side over grow times the smallest of theirs
#: (cl/blocks.cl active_windows; window 1 merges none).  A merged walk's box holds each
#: member's box, so its forces are at least as accurate (more interactions).  Not
#: merged: every sink active (the whole walk's bits).  The CPU device (2 cores, 2 x 10^5
#: Plummer, 2 % active at random, refitted): geometric theta = 0.5 198 -> 120 ms, relative
#: alpha = 0.003 100 -> 63-73 ms; a cusp's block run unchanged (its active sinks fill
#: whole groups).  GPUs merge none: the longest walk sets a GPU's walk time, and a
#: merged walk is longer (H200, 2^22, 2 %: 7.5 ms unmerged, 36-42 ms merged by 4-16;
#: docs/history.md §26).
ACTIVE_MERGE = {"gpu": (1, 0, 1.0), "cpu": (8, 32, 2.05)}

#: Default group size (sinks per walk) per device kind.
DEFAULT_GROUP = {"cpu": 128, "gpu": 128}

#: From how many sinks a device kind takes larger groups, and their size.  H100
#: (docs/history.md, session 6): groups of 256 walk 2^24 sinks 10 % faster than
#: groups of 128 (fewer lists to build), 2^22 as fast, 2^20 10 % slower.
LARGE_GROUP = {"gpu": (1 << 23, 256)}

#: The same for walks with the relative opening criterion, whose lists are shorter, so
#: that the list walk (one per group) weighs more.  H200, alpha = 0.003, groups of 256
#: against 128: 2^22 Plummer walk_lists 3.6 -> 2.4 ms, eval_lists 7.6 -> 8.4 ms, p99
#: 1.00e-3 -> 0.90e-3 (cusp 1.16e-3 -> 0.98e-3; a group's floor is its smallest |a_old|,
#: so larger groups open more); whole steps at 2^21 0.0106-0.0108 -> 0.0102-0.0103 s, at
#: 2^20 as fast (0.0076-0.0077 against 0.0075-0.0083 s), at 2^19 the walk 25 % slower
#: (docs/history.md §27).
RELATIVE_LARGE_GROUP = {"gpu": (1 << 21, 256)}


def default_group(kind: str, n_sinks: int, relative: bool = False) -> int:
    """Sinks per group when the caller gives none, for a device kind, sink count and
    opening criterion (``relative``: the relative criterion's walks)."""
    large = (RELATIVE_LARGE_GROUP if relative else LARGE_GROUP).get(kind)
    if large is not None and n_sinks >= large[0]:
        return large[1]
    return DEFAULT_GROUP.get(kind, 64)


def tree_options(tree, options: dict | None) -> dict | None:
    """The walk's extra defines for ``tree`` (host- or device-built): PER_EPS where it
    carries a softening per particle (cl/walkcommon.cl), added to ``options``."""
    if isinstance(tree, DeviceTree) and tree.cell_eps is not None:
        return {**(options or {}), "PER_EPS": 1}
    return options


def walk_defines(rt: Runtime, n_group: int, n_leaf: int, quad: bool, options: dict | None,
                 split: Changeover | None, part: Part | str,
                 criterion: Criterion | None = None, periodic: Periodic | None = None,
                 sparse: bool = False) -> dict:
    """The walk's defines; ``part``: the force part walked (:mod:`.parts`; a short range
    walks as the full force); ``criterion``: the opening criterion (:mod:`.criterion`;
    None: geometric); ``periodic``: the short-range force of TreePM in that box;
    ``sparse``: an active walk of few groups (:data:`SPARSE_WALK`)."""
    part, criterion = as_part(part), criterion_of(criterion)
    defines = {"WG": n_group, "CAP": max(LIST_CAPACITY, int(n_leaf)), "QUAD": int(quad),
               "OPENING": criterion.opening,
               **WALK_SETTINGS.get(rt.info.kind, WALK_SETTINGS["gpu"]),
               **rt.info.math_defines(), **(options or {})}
    defines.update(criterion.defines())
    if criterion.relative and defines.get("KERNEL") == LIST_WALK:
        for key, value in RELATIVE_WALK.get(rt.info.kind, {}).items():
            defines.setdefault(key, value)
    if sparse and not part.split and defines.get("KERNEL") == LIST_WALK:
        for key, value in SPARSE_WALK.get(rt.info.kind, ({}, 0.0))[0].items():
            defines.setdefault(key, value)
    if defines.get("KERNEL") == LIST_WALK and "COOP" in defines:
        defines["COOP"] = min(int(defines["COOP"]), rt.info.max_work_group_size)
    if periodic is not None:
        defines.update(periodic.defines())
    defines.update(part.defines(split))
    return defines


@dataclass(frozen=True)
class WalkKernel:
    """A walk's kernel as built: its file, the kernel that evaluates (``name``; the list
    walk's ``walk_lists`` builds with it), defines, work-group size and sinks per group."""

    file: str
    name: str
    defines: dict
    wg: int
    n_group: int

    @property
    def eval_name(self) -> str:
        return "eval_lists" if self.name == LIST_WALK else self.name


def walk_kernel(rt: Runtime, n_sinks: int, n_group: int | None, n_leaf: int, quad: bool,
                eps: float, options: dict | None, split: Changeover | None, part: Part | str,
                criterion: Criterion | None = None, periodic: Periodic | None = None,
                sparse: bool = False) -> WalkKernel:
    """Build the kernel of a walk (checked against the device's limits: ValueError where
    it cannot run); ``part``: the force part (:mod:`.parts`); ``criterion``: the opening
    criterion (:mod:`.criterion`; None: geometric); ``periodic``: the short-range force of
    TreePM (monopole cells, no force split); ``sparse``: an active walk of few groups
    (:data:`SPARSE_WALK`)."""
    criterion = criterion_of(criterion)
    if criterion.relative and split is not None:
        raise ValueError("the relative opening criterion does not take a force split "
                         "(hybrid tree) yet")
    if periodic is not None and (quad or split is not None):
        raise ValueError("periodic forces take monopole cells and no force split (hybrid "
                         "tree) yet")
    if (options or {}).get("SOFTENING") == 2:
        check_softening("spline", eps, quad)
    n_group = int(n_group or default_group(rt.info.kind, n_sinks, criterion.relative))
    defines = walk_defines(rt, n_group, n_leaf, quad, options, split, part, criterion,
                           periodic, sparse)
    name = defines.pop("KERNEL")
    wg = n_group
    if name == LIST_WALK:
        sinks_per_item = int(defines.get("SINKS", 1))
        if n_group % sinks_per_item:
            if "SINKS" in (options or {}):
                raise ValueError(f"n_group = {n_group} is not a multiple of "
                                 f"SINKS = {sinks_per_item}")
            sinks_per_item = defines["SINKS"] = 1       # the device default does not fit
        wg = defines["WG"] = n_group // sinks_per_item
        defines["ZERO_GUARD"] = int(np.float32(eps * eps) == 0)
        # walk_lists requires its work-group size: within the device's limit
        defines["LWG"] = fit_work_group(int(defines.get("LWG", 64)),
                                        rt.info.work_group_limit())
    walk = WalkKernel("walklist.cl" if name == LIST_WALK else "treewalk.cl", name, defines,
                      wg, n_group)
    knl = kernel(rt, walk.file, walk.eval_name, defines)
    used, room = rt.local_mem_used(knl), rt.info.local_mem_limit()
    if used > room:
        raise ValueError(f"the walk kernel {name} needs {used} bytes of local memory, more "
                         f"than the device's {room}: lower n_leaf ({n_leaf}) or n_group "
                         f"({n_group})")
    max_wg = rt.max_work_group_size(knl)
    if wg > max_wg and name != "tree_walk_simd":
        raise ValueError(f"n_group = {n_group} exceeds the device's work-group limit "
                         f"{max_wg} for the walk kernel")
    return walk


#: The walk's option axes: every combination is asked of :func:`walk_kernel`; those it
#: refuses (ValueError) are ones the code never requests.  A key naming a parameter of
#: ``walk_kernel`` is passed as that argument; an upper-case key is an extra kernel define
#: (``options``; None: not set).  A new option of the walk is one line here.
WALK_AXES: dict[str, tuple] = {
    "n_sinks": (1000, 1 << 23),                 # either side of LARGE_GROUP's switch
    "n_group": (None, 1024),                    # the kind's default, the largest allowed
    "n_leaf": (16, 1024),                       # the default, the largest allowed (CAP)
    "quad": (False, True),
    "eps": (0.0, 0.01),                         # ZERO_GUARD 1 and 0
    "part": (FULL, SOFT, HARD),
    "split": (None,) + tuple(Changeover(0.01, 0.1, shape) for shape in CHANGEOVERS),
    # the opening criterion: geometric, or relative (OPENING, INV_THETA_MIN; alpha and
    # a_old are no defines)
    "criterion": (None, Relative(0.005, 1.0, 0.5)),
    # TreePM's short range (PERIODIC and the box's defines; monopoles only)
    "periodic": (None, Periodic(1.0, 32)),
    # a block substep's active walk of few groups (SPARSE_WALK: COOP on GPUs)
    "sparse": (False, True),
    # the pair softening: Plummer, or GADGET's spline (SOFTENING 2: eps > 0, monopoles)
    "SOFTENING": (None, 2),
    # a softening per particle carried by the tree (cl/walkcommon.cl; walk.tree_options)
    "PER_EPS": (None, 1),
    "options": (None,),
}

@option_sets
def walk_option_sets(info: DeviceInfo) -> list[tuple[str, dict | None]]:
    """The walk programs (treewalk.cl, walklist.cl) a device asks for over every
    combination of :data:`WALK_AXES` (the builds :func:`walk_kernel` makes)."""
    params = inspect.signature(walk_kernel).parameters
    for axis in WALK_AXES:
        if axis not in params and not axis.isupper():
            raise KeyError(f"WALK_AXES names {axis!r}, which is neither a parameter of "
                           f"walk_kernel ({', '.join(list(params)[1:])}) nor a define")
    missing = [p for p in list(params)[1:] if p not in WALK_AXES
               and params[p].default is inspect.Parameter.empty]
    if missing:
        raise KeyError(f"walk_kernel takes {', '.join(missing)}, which WALK_AXES does not "
                       f"give: add its values there")
    rec = Recorder(info)
    keys = list(WALK_AXES)
    for combo in itertools.product(*WALK_AXES.values()):
        kw = {k: v for k, v in zip(keys, combo) if k in params}
        extra = {k: v for k, v in zip(keys, combo) if k.isupper() and v is not None}
        if extra:
            kw["options"] = {**(kw.get("options") or {}), **extra}
        done = len(rec.builds)
        try:        # records the evaluation kernel's program (walk_lists: the same one)
            walk_kernel(rec, **kw)
        except ValueError:              # a combination the code refuses: never launched
            del rec.builds[done:]
    return rec.builds
