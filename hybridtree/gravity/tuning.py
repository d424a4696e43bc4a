"""The walk's tuning switches as one value, passed in (not module globals): they choose how
the walk runs — how sinks are grouped, how much room and memory the list walk's lists
take, whether its kernels are timed one by one — and are set by tuning scripts and
tests.  An engine holds one (:attr:`hybridtree.gravity.engine.ForceEngine.tuning`) and
hands it to every walk; the default is the measured choice."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TUNING", "WalkTuning"]


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
    (H200, round 126, scripts/tune/list_batch.py).  ``profile``: wait for each list-walk
    kernel and add its time to the walk's timings as "list_walk" and "list_eval" (slows
    the walk a little; scripts/tune/walk.py)."""

    pack_groups: bool = True
    list_start: int = 8192
    list_memory_share: int = 8
    list_batch_bytes: int = 8 << 30
    profile: bool = False


#: The default switches.
TUNING = WalkTuning()
