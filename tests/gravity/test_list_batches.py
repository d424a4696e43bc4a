"""The list walk's batches are bounded by the tuning's list_batch_bytes whatever the
device's memory, and the forces do not depend on the batches: bit for bit those of one
batch."""

import numpy as np

from hybridtree.gravity import list_walk
from hybridtree.gravity.tree import build_tree
from hybridtree.gravity.tuning import TUNING, WalkTuning
from hybridtree.gravity.walk import tree_forces
from hybridtree.ics import plummer


def test_list_batches_are_bounded_and_change_no_force(runtime, monkeypatch):
    monkeypatch.setattr(runtime, "lists", list_walk.ListRoom())
    opts = {"KERNEL": "walk_lists", "SINKS": 2, "LBUF": 8, "REPLICATE": 1}
    pos, _, mass = plummer(5000, seed=4)
    tree = build_tree(pos, mass, 0.5, 16)
    whole = tree_forces(runtime, tree, 0.01, 64, options=opts)
    room = list_walk.list_room(runtime).room or TUNING.list_start
    # room for three groups' lists in a batch: the walk in many batches
    budget = 3 * 4 * room
    tune = WalkTuning(list_batch_bytes=budget)
    led = runtime.memory
    from hybridtree.device import transfer
    transfer.release(runtime)            # the kept list buffer made anew at the new size
    led.reset_peak()
    base = led.total
    split = tree_forces(runtime, tree, 0.01, 64, options=opts, tuning=tune)
    assert (list_walk.list_room(runtime).room or TUNING.list_start) == room
    for x, y in zip(split[:4], whole[:4]):
        assert np.array_equal(x, y)
    # the lists' buffer: the budget, not the device's share (the walk's other buffers
    # are a few bytes per sink)
    lists = led.owner_peak["lists"]
    assert lists <= budget * (1 + transfer.GROWTH) + 8 * 5000, (lists, budget)
    assert runtime.device.global_mem_size // TUNING.list_memory_share > 10 * budget


def test_a_walk_done_again_in_a_larger_room_holds_one_list_buffer(runtime, monkeypatch):
    """Lists that outgrow the first room are walked again in a larger one: the first
    room's lists are let go before the larger are made (both held for a moment put a
    2^24 run's lists at 13.3 GB against 9 GiB, round 127)."""
    from hybridtree.device import transfer

    monkeypatch.setattr(runtime, "lists", list_walk.ListRoom())
    opts = {"KERNEL": "walk_lists", "SINKS": 2, "LBUF": 8, "REPLICATE": 1}
    pos, _, mass = plummer(5000, seed=4)
    tree = build_tree(pos, mass, 0.5, 16)
    transfer.release(runtime)
    led = runtime.memory
    led.reset_peak()
    again = list_walk.list_room(runtime).again
    tree_forces(runtime, tree, 0.01, 64, options=opts, tuning=WalkTuning(list_start=64))
    assert list_walk.list_room(runtime).again > again, "the lists did not outgrow the room"
    assert led.owner_peak["lists"] == led.live["lists"], (led.owner_peak["lists"],
                                                          led.live["lists"])


def test_the_list_room_and_counts_are_the_runtimes_own(runtime, monkeypatch):
    """What a runtime's list walks learned (the room they grew, how many walks were done
    again) is that runtime's (Runtime.lists), not the process's: another runtime on the
    same OpenCL context starts from its tuning's first room, grows its own, and leaves
    the first one's as it was; its forces are the first one's bits."""
    from hybridtree.device.reduce import reducer
    from hybridtree.device.runtime import Runtime

    monkeypatch.setattr(runtime, "lists", list_walk.ListRoom())
    opts = {"KERNEL": "walk_lists", "SINKS": 2, "LBUF": 8, "REPLICATE": 1}
    tune = WalkTuning(list_start=64)
    pos, _, mass = plummer(2000, seed=5)
    tree = build_tree(pos, mass, 0.5, 16)
    first = tree_forces(runtime, tree, 0.01, 64, options=opts, tuning=tune)
    mine = list_walk.list_room(runtime)
    grown, counts = mine.room, (mine.walks, mine.again)
    assert grown > 64 and counts == (2, 1), (grown, counts)      # walked again, once
    other = Runtime(runtime.info, runtime.context, runtime.queue)
    assert list_walk.list_room(other).room is None
    second = tree_forces(other, tree, 0.01, 64, options=opts, tuning=tune)
    theirs = list_walk.list_room(other)
    assert (theirs.room, theirs.walks, theirs.again) == (grown, 2, 1)
    assert (mine.room, mine.walks, mine.again) == (grown, *counts)
    for x, y in zip(first[:4], second[:4]):
        assert np.array_equal(x, y)
    assert reducer(other) is not reducer(runtime) and reducer(other) is reducer(other)


def test_lists_past_the_kept_size_are_let_go_after_the_walk(runtime, monkeypatch):
    """A batch's lists larger than the tuning's list_kept_bytes are made for the walk and
    let go when it returns (the kept ones too), so that a large run's tree build takes
    their memory for its sorted keys instead of holding both at its peak (issue 56); the
    forces are those of kept lists, bit for bit."""
    from hybridtree.device import transfer

    monkeypatch.setattr(runtime, "lists", list_walk.ListRoom())
    opts = {"KERNEL": "walk_lists", "SINKS": 2, "LBUF": 8, "REPLICATE": 1}
    pos, _, mass = plummer(5000, seed=4)
    tree = build_tree(pos, mass, 0.5, 16)
    kept = tree_forces(runtime, tree, 0.01, 64, options=opts)
    led = runtime.memory
    assert "walk_lists" in transfer.copies(runtime).scratch
    led.reset_peak()
    before = led.live["lists"]
    made = tree_forces(runtime, tree, 0.01, 64, options=opts,
                       tuning=WalkTuning(list_kept_bytes=0))
    for x, y in zip(made[:4], kept[:4]):
        assert np.array_equal(x, y)
    assert "walk_lists" not in transfer.copies(runtime).scratch
    info = 8 * 5000          # the walk's counts per group (list_info), a few B a sink
    assert led.owner_peak["lists"] <= before        # the kept ones let go first
    assert led.live["lists"] <= info < before, (led.live["lists"], before)
