"""The walk's and the reductions' device memory per particle (issue 56): a run's walk keeps
its float4 results alone per sink (the interaction counts per group, the sinks' own
indices implicit, no potential for a part that writes none), and the Lagrangian radii
compute each particle's radius in every pass instead of keeping it; the counts a run sums
are still those of every sink, and a caller that asks for them per sink gets them."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

from tests.run.test_plan import ledger_peaks

from hybridtree.device import reduce
from hybridtree.device.reduce import GroupCounts
from hybridtree.gravity import walk as treewalk
from hybridtree.gravity.tree.device_build import build_device_tree, device_groups
from hybridtree.gravity.tuning import TUNING
from hybridtree.ics import plummer
from hybridtree.run.plan import BYTES

EPS = 0.01
LISTS = {"KERNEL": "walk_lists", "SINKS": 2, "LBUF": 8, "REPLICATE": 4}
KERNELS = [None, {"KERNEL": "tree_walk"}, LISTS]


@pytest.mark.parametrize("more, walk", [
    ({}, 16.5),
    ({"hybrid.enabled": True, "gravity.multipole": "monopole", "time.stepping": "shared"},
     16.5),
    # a block step's active walk: packed sinks (hi, lo 32, index and caller row 8), the
    # flags and offsets (8) beside the results (16, the full walk's buffer)
    ({"time.stepping": "block", "time.dt": 1 / 16, "time.t_end": 1 / 16, "time.eta": 0.05},
     65)])
def test_a_runs_walk_and_reductions_hold_few_bytes_a_particle(runtime, more, walk):
    """The ledger's peaks of the walk and the reductions at 2^15: the walk holds its results
    (16 bytes a sink) and its groups' counts, where main held 36 (counts in tree and caller
    order, 16; the sinks' own indices, 4), 44 in a hybrid run (the hard part's unused
    potential, 8) and 114 with block steps; the reductions hold their level rows, where
    main kept a radius per particle (8.2)."""
    if not runtime.has_fp64:
        pytest.skip("a device state needs double precision")
    n = 1 << 15
    peaks = ledger_peaks(n, **more)["owner_peak"]
    assert peaks["walk"] / n <= walk, peaks
    # GPUs keep the levels apart (speed): their rows, 4.84 bytes a particle on the H200
    # (round 135), the plan's figure
    gpu_rows = BYTES["reductions_gpu"][0] if runtime.info.kind == "gpu" else 0
    assert peaks.get("reductions", 0) / n <= 0.5 + gpu_rows, peaks


def _per_sink_sums(runtime, counts: cl.Buffer, n: int) -> tuple[int, int]:
    host = np.empty((n, 2), np.int32)
    cl.enqueue_copy(runtime.queue, host, counts)
    return int(host[:, 0].astype(np.int64).sum()), int(host[:, 1].astype(np.int64).sum())


@pytest.mark.parametrize("options", KERNELS)
def test_counts_kept_per_group_sum_as_the_counts_per_sink(runtime, options):
    """walk_into and walk_active without counts per sink (a run's walks) give, summed on
    the device, the sums of the counts per sink that a caller asking for them gets (the
    sinks' own walk, its local sinks only, other sinks, an active walk), and the very same
    forces; a walk without a potential (None) writes none."""
    if not runtime.has_fp64:
        pytest.skip("walk_into writes float64 results: the device lacks cl_khr_fp64")
    pos, _, mass = plummer(6000, seed=5)
    n, keep = len(pos), 4500
    tree = build_device_tree(runtime, pos, mass, 0.5, 16)
    other = build_device_tree(runtime, pos[:3000] * 0.99, mass[:3000], 0.5, 16,
                              cube=tree.cube)     # inside the cube: it holds the origin
    red = reduce.reducer(runtime)
    bins = runtime.to_device((np.arange(n) % 3).astype(np.int32))
    tune = TUNING.for_kind(runtime.info.kind, active_merge=(1, 0, 1.0))

    def walked(per_sink: bool, case: str, pot: bool = True):
        acc, p = runtime.to_device(np.zeros((n, 3))), runtime.to_device(np.full(n, 7.0))
        if case == "active":
            counts, m, _ = treewalk.walk_active(runtime, tree, EPS, acc, p, bins, 1, 64,
                                                options=options, tuning=tune,
                                                per_sink=per_sink)
        else:
            sinks = other if case == "other" else None
            m = keep if case == "local" else (other.n if sinks else n)
            counts, _, _ = treewalk.walk_into(
                runtime, tree, EPS, acc, p if pot else None, 64, options=options,
                n_sinks=keep if case == "local" else None, sinks=sinks, tuning=tune,
                per_sink=per_sink)
        sums = _per_sink_sums(runtime, counts, m) if per_sink else red.count_sum(m, counts)
        total = runtime.to_device(np.zeros(2, np.int64))
        red.count_sum_into(m, counts, total)
        a, q, t = np.empty((n, 3)), np.empty(n), np.empty(2, np.int64)
        for buf, host in ((acc, a), (p, q), (total, t)):
            cl.enqueue_copy(runtime.queue, host, buf)
        assert tuple(t) == sums
        return sums, a, q

    for case in ("own", "local", "other", "active"):
        (ref, a_ref, p_ref), (got, a, p) = walked(True, case), walked(False, case)
        assert not isinstance(ref, GroupCounts) and got == ref and ref[0] > 0 and ref[1] > 0
        assert np.array_equal(a, a_ref) and np.array_equal(p, p_ref), case
    a_own = walked(False, "own")[1]
    _, a, p = walked(False, "own", pot=False)
    assert np.array_equal(a, a_own) and np.all(p == 7.0), "no potential written"


def test_the_group_count_kernel_against_numpy(runtime):
    """group_count_sum (cl/reduce.cl): the sinks of caller index below keep, each
    group's entries less cells less its own particle, and cells, as numpy sums them."""
    if not runtime.has_fp64:
        pytest.skip("the reductions need double precision")
    rng = np.random.default_rng(2)
    counts = rng.integers(1, 64, 900)
    ranges = np.stack([np.cumsum(counts) - counts, counts], axis=1).astype(np.int32)
    cells = rng.integers(0, 5000, 900)
    info = np.stack([cells + rng.integers(1, 3000, 900), cells], axis=1).astype(np.int32)
    caller = rng.permutation(int(counts.sum())).astype(np.uint32)
    keep = int(0.7 * len(caller))
    k = np.add.reduceat((caller < keep).astype(np.int64), ranges[:, 0])
    red = reduce.reducer(runtime)
    for own in (0, 1):
        want = (int((k * (info[:, 0] - info[:, 1] - own)).sum()), int((k * info[:, 1]).sum()))
        got = red.count_sum(keep, GroupCounts(900, runtime.to_device(ranges),
                                              runtime.to_device(info),
                                              runtime.to_device(caller), keep, own))
        assert got == want


def test_groups_of_a_tree_walk_hold_every_sink(runtime):
    """The sink groups of a tree's own walk cover its particles once each (what the counts
    per group rest on)."""
    pos, _, mass = plummer(3000, seed=4)
    tree = build_device_tree(runtime, pos, mass, 0.5, 16)
    g = device_groups(tree, 64)
    ranges = np.empty((g.n_groups, 2), np.int32)
    cl.enqueue_copy(runtime.queue, ranges, g.ranges)
    assert ranges[0, 0] == 0 and np.array_equal(ranges[1:, 0], np.cumsum(ranges[:-1, 1]))
    assert ranges[:, 1].sum() == len(pos)
