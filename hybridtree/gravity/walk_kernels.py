"""The tree walk's kernels: which one a device runs (cl/treewalk.cl or cl/walklist.cl),
its defines and work-group sizes, the default sink-group size (the choices per kind of
device: :class:`.tuning.DeviceTuning`, passed in as a :class:`.tuning.WalkTuning`), and
the option sets the walk can ask for (declared to :mod:`hybridtree.device.kernels`)."""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from ..device.kernels import Recorder, kernel, option_sets
from ..device.runtime import DeviceInfo, Runtime, fit_work_group
from .criterion import Criterion, Relative, criterion_of
from .parts import FULL, HARD, SOFT, Part, as_part
from .periodic import Periodic
from .softening import check_softening
from .splitting import CHANGEOVERS, Changeover
from .tree.device_build import DeviceTree
from .tuning import LIST_WALK, TUNING, WalkTuning

__all__ = ["LISTED_SINKS", "LIST_CAPACITY", "LIST_WALK", "OTHER_SINKS", "OWN_SINKS", "WALK_AXES",
           "WalkKernel", "default_group", "put_defines", "put_option_sets", "tree_options",
           "walk_defines", "walk_kernel", "walk_option_sets", "walk_options"]

#: Interaction-list capacity in local memory (entries).
LIST_CAPACITY = 256

def default_group(kind: str, n_sinks: int, relative: bool = False,
                  tuning: WalkTuning = TUNING) -> int:
    """Sinks per group when the caller gives none, for a device kind, sink count and
    opening criterion (``relative``: the relative criterion's walks), as ``tuning`` says
    (:meth:`.tuning.DeviceTuning.group_size`)."""
    return tuning.device(kind).group_size(n_sinks, relative)


def tree_options(tree, options: dict | None) -> dict | None:
    """The walk's extra defines for ``tree`` (host- or device-built): PER_EPS where it
    carries a softening per particle (cl/walkcommon.cl), added to ``options``."""
    if isinstance(tree, DeviceTree) and tree.cell_eps is not None:
        return {**(options or {}), "PER_EPS": 1}
    return options


#: cl/walkcommon.cl's SELF: sinks that are none of the walked tree's sources, sink i that
#: is source i (a tree's own particles: no buffer of their indices), indices in sink_self
OTHER_SINKS, OWN_SINKS, LISTED_SINKS = 0, 1, 2


def walk_options(tree, options: dict | None, self_mode: int, per_sink: bool = True) -> dict:
    """The walk's extra defines for ``tree`` (:func:`tree_options`) with
    cl/walkcommon.cl's SELF ``self_mode`` and, unless ``per_sink``, SINK_COUNTS 0 (counts
    kept per group: :class:`hybridtree.device.reduce.GroupCounts`)."""
    return {**(tree_options(tree, options) or {}), "SELF": self_mode,
            **({} if per_sink else {"SINK_COUNTS": 0})}


def put_defines(pot: bool, counts: bool) -> dict | None:
    """cl/prepare.cl's defines of the walk's results back into the caller's order
    (sort_back64, unsort64): PUT_POT 0 without a potential, PUT_COUNTS 0 without counts
    per sink."""
    return {**({} if pot else {"PUT_POT": 0}), **({} if counts else {"PUT_COUNTS": 0})} or None


@option_sets
def put_option_sets(info: DeviceInfo) -> list[tuple[str, dict | None]]:
    """The builds of cl/prepare.cl that :func:`put_defines` asks for: a run's walks keep
    no counts per sink, and the hybrid tree's hard part writes no potential."""
    return [("prepare.cl", put_defines(pot, False)) for pot in (True, False)]


def walk_defines(rt: Runtime, n_group: int, n_leaf: int, quad: bool, options: dict | None,
                 split: Changeover | None, part: Part | str,
                 criterion: Criterion | None = None, periodic: Periodic | None = None,
                 sparse: bool = False, tuning: WalkTuning = TUNING) -> dict:
    """The walk's defines; ``part``: the force part walked (:mod:`.parts`; a short range
    walks as the full force); ``criterion``: the opening criterion (:mod:`.criterion`;
    None: geometric); ``periodic``: the short-range force of TreePM in that box;
    ``sparse``: an active walk of few groups (:attr:`.tuning.DeviceTuning.sparse_walk`);
    ``tuning``: the walk's choices for the device's kind (:class:`.tuning.WalkTuning`)."""
    part, criterion = as_part(part), criterion_of(criterion)
    mine = tuning.device(rt.info.kind)
    defines = {"WG": n_group, "CAP": max(LIST_CAPACITY, int(n_leaf)), "QUAD": int(quad),
               "OPENING": criterion.opening}
    defines.update(mine.walk)           # (name, value) pairs: no dict made of them
    defines.update(rt.info.math_defines())
    defines.update(options or {})
    defines.update(criterion.defines())
    if criterion.relative and defines.get("KERNEL") == LIST_WALK:
        for key, value in mine.relative_walk:
            defines.setdefault(key, value)
    if sparse and not part.split and defines.get("KERNEL") == LIST_WALK:
        for key, value in mine.sparse_walk:
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
                sparse: bool = False, tuning: WalkTuning = TUNING) -> WalkKernel:
    """Build the kernel of a walk (checked against the device's limits: ValueError where
    it cannot run); ``part``: the force part (:mod:`.parts`); ``criterion``: the opening
    criterion (:mod:`.criterion`; None: geometric); ``periodic``: the short-range force of
    TreePM (monopole cells, no force split); ``sparse``: an active walk of few groups
    (:attr:`.tuning.DeviceTuning.sparse_walk`); ``tuning``: the walk's choices
    (:class:`.tuning.WalkTuning`: kernel, defines and group size per kind of device)."""
    criterion = criterion_of(criterion)
    if criterion.relative and split is not None:
        raise ValueError("the relative opening criterion does not take a force split "
                         "(hybrid tree) yet")
    if periodic is not None and (quad or split is not None):
        raise ValueError("periodic forces take monopole cells and no force split (hybrid "
                         "tree) yet")
    if (options or {}).get("SOFTENING") == 2:
        check_softening("spline", eps, quad)
    o = options or {}
    if o.get("OUT_AT") and (o.get("SELF") != OWN_SINKS or o.get("SINK_COUNTS") != 0
                            or sparse):
        raise ValueError("OUT_AT: only a walk of a tree's own sinks, counts per group, into "
                         "a state's float32 part (no active walk)")
    n_group = int(n_group or default_group(rt.info.kind, n_sinks, criterion.relative, tuning))
    defines = walk_defines(rt, n_group, n_leaf, quad, options, split, part, criterion,
                           periodic, sparse, tuning)
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
#: (``options``; None: not set).  A new option of the walk is one line here.  The
#: walk's tuning is the default (:data:`.tuning.TUNING`).
WALK_AXES: Mapping[str, tuple] = MappingProxyType({
    "n_sinks": (1000, 1 << 23),                 # either side of GPU.large_group's switch
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
    # a block substep's active walk of few groups (sparse_walk: COOP on GPUs)
    "sparse": (False, True),
    # the pair softening: Plummer, or GADGET's spline (SOFTENING 2: eps > 0, monopoles)
    "SOFTENING": (None, 2),
    # a softening per particle carried by the tree (cl/walkcommon.cl; walk.tree_options)
    "PER_EPS": (None, 1),
    # the sinks' own indices: unset (2), none (0: other sinks), implicit (1: the tree's own
    # particles), read (2: an active walk's packed sinks) (cl/walkcommon.cl; walk_options)
    "SELF": (None, OTHER_SINKS, OWN_SINKS, LISTED_SINKS),
    # counts per sink (unset: 1), or per group (0: a run's walks; reduce.GroupCounts)
    "SINK_COUNTS": (None, 0),
    # forces written at the caller's index, into a state's float32 part (unset: 0)
    "OUT_AT": (None, 1),
    "options": (None,),
})

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
