"""The walk's tuning switches as one value, passed in (not module globals): they choose how
the walk runs — which kernel and defines a kind of device walks with, how sinks are
grouped, how much room and memory the list walk's lists take, whether its kernels are
timed one by one — and are set by tuning scripts and tests.  An engine holds one
(:attr:`hybridtree.gravity.engine.ForceEngine.tuning`) and hands it to every walk; the
default is the measured choice (each figure's measurement beside it below)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

__all__ = ["CPU", "DeviceTuning", "GPU", "LIST_WALK", "OTHER", "TUNING", "WalkTuning"]

#: Kernels of cl/walklist.cl (walk into global lists, then evaluate them).
LIST_WALK = "walk_lists"

#: Kernel defines as (name, value) pairs: hashable and unchangeable (a dict given to
#: :class:`DeviceTuning` becomes one).
Defines = tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class DeviceTuning:
    """The walk's measured choices for one kind of device (what each is, and how it was
    measured: :data:`GPU` and :data:`CPU`).

    ``walk``: the walk kernel ("KERNEL", not a define) and its defines (cl/treewalk.cl,
    cl/walklist.cl).  ``relative_walk``: defines a relative-criterion list walk adds;
    ``sparse_walk``: defines an active walk adds where its groups are fewer than
    ``sparse_share`` of the whole walk's.  ``active_copies``: copies of a small group's
    sinks in an active walk's list evaluation (None: the walk's REPLICATE).
    ``active_merge``: (window, cap, grow) of an active walk's merged sparse groups (window
    1 merges none).  ``group``: sinks per group; ``large_group``, ``relative_large_group``:
    (from how many sinks, group size) of larger groups (None: none; the second for the
    relative criterion's walks).  ``direct_wg``, ``direct_ni``: cl/direct.cl's work-group
    (= tile) size and sinks per work-item."""

    walk: Defines = ()
    relative_walk: Defines = ()
    sparse_walk: Defines = ()
    sparse_share: float = 0.0
    active_copies: int | None = None
    active_merge: tuple[int, int, float] = (1, 0, 1.0)
    group: int = 64
    large_group: tuple[int, int] | None = None
    relative_large_group: tuple[int, int] | None = None
    direct_wg: int = 64
    direct_ni: int = 1

    def __post_init__(self) -> None:
        for name in ("walk", "relative_walk", "sparse_walk"):
            object.__setattr__(self, name, tuple(dict(getattr(self, name)).items()))

    def group_size(self, n_sinks: int, relative: bool = False) -> int:
        """Sinks per group for ``n_sinks`` sinks (``relative``: the relative criterion's
        walks)."""
        large = self.relative_large_group if relative else self.large_group
        if large is not None and n_sinks >= large[0]:
            return large[1]
        return self.group


#: GPUs.  ``walk``: the list walk, chosen by measurement (docs/benchmarks.md).
#: ``relative_walk``: COOP work-items walk each group together from a stack in local
#: memory (cl/walklist.cl; the serial walk's entries in another order).  The few groups
#: with near-zero |a_old| (a system's centre) walk up to 25 000 cells, which one work-item
#: follows one dependent load after another.  H100, walk_lists ms, alpha = 0.002, serial
#: walk with its long walks split in pieces (session 15) -> COOP = 32: Plummer 2^22 6.2 ->
#: 4.0, cusp 2^22 8.0 -> 3.7, Plummer 2^24 13.2 -> 9.6, cusp 2^24 15.2 -> 8.5 (COOP = 16
#: and 64 within 5 %).  Geometric walks are even, and the serial walk is faster for them
#: (2^22: 5.1 against 8.0 ms), so they keep it (docs/history.md §23).  Capped at the
#: device's work-group limit.
#: ``sparse_walk``, ``sparse_share``: a block substep whose active sinks fill fewer than
#: half of the whole walk's groups walks with COOP = 32 too.  Few groups leave most of a
#: GPU idle, and the longest serial walks set walk_lists's time.  H200, geometric theta =
#: 0.5, 2^22, refitted, random active (share of the groups walked: serial / COOP = 32):
#: 0.1 % (6.5 %) 6.0 / 2.3 ms, 0.3 % (18 %) 6.4 / 3.5, 0.5 % (28 %) 6.2 / 4.7, 1 % (47 %)
#: 7.1 / 6.6, 2 % (71 %) 8.1 / 9.8 (docs/history.md §26).
#: ``active_copies``: an active walk's groups are the whole walk's cut down to the active
#: sinks, often one or two of a group's 128, so eval_lists may spread such a group's list
#: over every work-item instead of the REPLICATE = 4 copies that suit a full walk's
#: half-full groups.  H200, 2 % of 2^22 active at random, refitted: substep 10.4 ms with 4
#: copies, 7.6 with 16, 7.3 with 64 (docs/history.md §25).
#: ``active_merge``: none merged: the longest walk sets a GPU's walk time, and a merged
#: walk is longer (H200, 2^22, 2 %: 7.5 ms unmerged, 36-42 ms merged by 4-16;
#: docs/history.md §26).
#: ``large_group``: H100 (docs/history.md, session 6): groups of 256 walk 2^24 sinks 10 %
#: faster than groups of 128 (fewer lists to build), 2^22 as fast, 2^20 10 % slower.
#: ``relative_large_group``: relative walks' lists are shorter, so the list walk (one per
#: group) weighs more.  H200, alpha = 0.003, groups of 256 against 128: 2^22 Plummer
#: walk_lists 3.6 -> 2.4 ms, eval_lists 7.6 -> 8.4 ms, p99 1.00e-3 -> 0.90e-3 (cusp 1.16e-3
#: -> 0.98e-3; a group's floor is its smallest |a_old|, so larger groups open more); whole
#: steps at 2^21 0.0106-0.0108 -> 0.0102-0.0103 s, at 2^20 as fast (0.0076-0.0077 against
#: 0.0075-0.0083 s), at 2^19 the walk 25 % slower (docs/history.md §27).
#: ``direct_wg``, ``direct_ni``: measured on the H100, docs/benchmarks.md; the direct
#: method takes the largest work-group within what the device allows (ROCm's OpenCL
#: reports 256 as its limit).
GPU = DeviceTuning(walk={"KERNEL": LIST_WALK, "SINKS": 2, "LBUF": 8, "REPLICATE": 4},
                   relative_walk={"COOP": 32}, sparse_walk={"COOP": 32}, sparse_share=0.5,
                   active_copies=64, active_merge=(1, 0, 1.0), group=128,
                   large_group=(1 << 23, 256), relative_large_group=(1 << 21, 256),
                   direct_wg=512, direct_ni=2)

#: CPU devices.  ``walk``: the SIMD tree walk (docs/benchmarks.md).  ``active_merge``:
#: within each window of 8 consecutive groups of the whole walk, neighbours with active
#: sinks merge while they hold at most 32 active sinks together and the union of their
#: boxes has no half side over 2.05 times the smallest of theirs (cl/blocks.cl
#: active_windows).  A merged walk's box holds each member's box, so its forces are at
#: least as accurate (more interactions); every sink active: none merged (the whole
#: walk's bits).  The 2-core machine, 2 x 10^5 Plummer, 2 % active at random, refitted:
#: geometric theta = 0.5 198 -> 120 ms, relative alpha = 0.003 100 -> 63-73 ms; a cusp's
#: block run unchanged (its active sinks fill whole groups).
CPU = DeviceTuning(walk={"KERNEL": "tree_walk_simd", "VEC": 8}, active_merge=(8, 32, 2.05),
                   group=128, direct_wg=64, direct_ni=1)

#: Other kinds (accelerators, others): the GPUs' walk kernel, nothing else measured.
OTHER = DeviceTuning(walk=GPU.walk)


@dataclass(frozen=True)
class WalkTuning:
    """``pack_groups``: merge consecutive sibling leaves into fuller sink groups
    (:func:`hybridtree.gravity.tree.octree.packed_leaf_ranges`): without it groups are
    about 30 % full and most of a GPU work-group idles.  ``list_start``: the list walk's
    first room per group list (entries), grown to the largest list seen on overflow.
    ``list_memory_share``: the share (1 / it) of the device's global memory that the lists
    of one batch of groups may use.  ``list_batch_bytes``: bytes the lists of one batch
    may use at most whatever the device's memory (1/8 of an H200 is 17.9 GB): 8 GiB, 8
    bytes per particle at 2^30; each further batch ends in a wait for its slowest groups:
    a 2^24 step (room 32 768, 16 GiB of lists in one batch) took 0.0599 s in batches of
    2 GiB, 0.0585-0.0591 s of 4 GiB, 0.0565-0.0568 s of 8 GiB and 0.0559-0.0573 s in one
    (H200, round 126, scripts/tune/list_batch.py).  ``list_kept_bytes``: the lists are kept
    between walks while the tree build's sorted keys (8 bytes a particle, let go before the
    walk) are smaller than this (2 GiB: 2^28 particles); for a larger tree they are made
    for each walk and let go after it, so that the keys take their memory: a 2^30 run's
    peak holds one of the two, not both (an allocation a walk, where a walk takes a
    second).  Made for every walk at all sizes they took the 2^22 and 2^24 steps 18-25 %
    and 7-14 % longer (H200, round 139, with the reductions' rows made per call as well:
    0.0195-0.0207 s against 0.0164-0.0165 s at 2^22).  ``profile``: wait for each list-walk
    kernel and add its time to the walk's timings as "list_walk" and "list_eval" (slows
    the walk a little; scripts/tune/walk.py).  ``direct_out``: a walk into a state's
    float32 part writes each sink's float4 at its caller index (cl/walkcommon.cl OUT_AT:
    no walk_out of 16 bytes a sink, no sort back); False: into walk_out in tree order,
    then gathered (the float64 parts' path).  ``gpu``, ``cpu``, ``other``: the choices
    per kind of device (:class:`DeviceTuning`; ``other``: accelerators and the rest)."""

    pack_groups: bool = True
    direct_out: bool = True
    list_start: int = 8192
    list_memory_share: int = 8
    list_batch_bytes: int = 8 << 30
    list_kept_bytes: int = 2 << 30
    profile: bool = False
    gpu: DeviceTuning = GPU
    cpu: DeviceTuning = CPU
    other: DeviceTuning = OTHER

    def device(self, kind: str) -> DeviceTuning:
        """The choices for a kind of device (:attr:`DeviceInfo.kind
        <hybridtree.device.runtime.DeviceInfo.kind>`)."""
        return self.gpu if kind == "gpu" else self.cpu if kind == "cpu" else self.other

    def lists_per_walk(self, n: int) -> bool:
        """Whether the list walk's lists are made for each walk of a tree of ``n``
        particles and let go after it (not kept between walks): where the tree build's
        sorted keys, 8 bytes a particle, take ``list_kept_bytes`` or more.  The keys and the
        lists then take turns: the keys are let go once the sink groups are made, and the
        reductions' level-1 rows are made for each call too.  Below it all three are kept
        between steps: made and freed each step they took the H200's 2^22 step from
        0.0168-0.0169 s to 0.0175-0.0185 s (the reductions 1.3 -> 2.0-2.5 ms), kept
        0.0170-0.0172 s (round 143)."""
        return 8 * n >= self.list_kept_bytes

    def for_kind(self, kind: str, **changes: Any) -> WalkTuning:
        """This tuning with ``changes`` (fields of :class:`DeviceTuning`) made to the
        choices of ``kind`` (tests, tuning scripts)."""
        name = kind if kind in ("gpu", "cpu") else "other"
        return replace(self, **{name: replace(getattr(self, name), **changes)})


#: The default switches.
TUNING = WalkTuning()
