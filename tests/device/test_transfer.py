"""Copies through pinned staging memory (hybridtree.device.transfer) keep every byte."""

import numpy as np
import pyopencl as cl
import pytest

from hybridtree.errors import UserInputError

from hybridtree.device import transfer
from hybridtree.device.runtime import Runtime
from hybridtree.device.transfer import Copies, CopyOptions, read_small
from hybridtree.gravity.tree.device_sort import exclusive_scan


def with_copies(runtime: Runtime, **options) -> Runtime:
    """A runtime on ``runtime``'s context and queue whose copies take ``options``."""
    return Runtime(runtime.info, runtime.context, runtime.queue,
                   copies=Copies(CopyOptions(**options)))


@pytest.mark.parametrize("policy", ["always", "never"])
def test_round_trip_in_chunks(runtime, monkeypatch, policy):
    monkeypatch.setenv("HYBRIDTREE_STAGING", policy)
    runtime = with_copies(runtime, chunk=1000)          # many chunks, ragged ends
    rng = np.random.default_rng(1)
    for n in (1, 999, 4321, 20_000):                   # the staging area grows on the way
        pos = rng.normal(size=(n, 3))
        ids = rng.integers(0, 2**40, n, dtype=np.uint64)
        want_pos, want_ids = pos.copy(), ids.copy()
        d_pos, d_ids = transfer.upload(runtime, [pos, ids], ["test_pos", "test_ids"])
        pos[:] = 0.0            # the caller may reuse its arrays once upload returns
        back_pos, back_ids = np.empty((n, 3)), np.empty(n, np.uint64)
        transfer.download(runtime, [(d_pos, back_pos), (d_ids, back_ids)])
        assert np.array_equal(back_pos, want_pos) and np.array_equal(back_ids, want_ids)


def test_scratch_buffers_are_kept_and_grown(runtime):
    a = transfer.scratch(runtime, "test_scratch", 100)
    assert transfer.scratch(runtime, "test_scratch", 50) is a
    b = transfer.scratch(runtime, "test_scratch", 1000)
    assert b is not a and b.size >= 1000
    assert transfer.scratch(runtime, "test_other", 100) is not b


def test_kept_buffers_grow_with_headroom_and_exist_when_empty(runtime):
    """First size exact, a growth gets GROWTH more than asked (sizes that drift up and
    down then reallocate rarely), and a request of 0 bytes still gives a buffer."""
    work = transfer.Workspace(runtime)
    a = work("a", 1000)
    assert a.size == 1000 and work("a", 900) is a
    b = work("a", 1001)
    assert b.size >= 1001 * (1 + transfer.GROWTH) - 1
    assert work("a", int(1001 * (1 + transfer.GROWTH)) - 1) is b
    assert work("empty", 0).size >= 4 and work("empty", 0) is work("empty", 0)
    s0 = transfer.scratch(runtime, "test_empty", 0)
    assert s0 is not None and transfer.scratch(runtime, "test_empty", 4) is s0
    s1 = transfer.scratch(runtime, "test_empty", 5000)
    assert s1.size >= 5000 * (1 + transfer.GROWTH) - 1


def test_release_drops_kept_buffers_and_copies_go_on(runtime, monkeypatch):
    monkeypatch.setenv("HYBRIDTREE_STAGING", "always")
    a = transfer.scratch(runtime, "test_release", 100)
    (d,) = transfer.upload(runtime, [np.arange(10.0)], ["test_release_up"])
    transfer.release(runtime)
    assert transfer.scratch(runtime, "test_release", 100) is not a
    (d,) = transfer.upload(runtime, [np.arange(10.0)], ["test_release_up"])
    back = np.empty(10)
    transfer.download(runtime, [(d, back)])            # a fresh pinned area
    assert np.array_equal(back, np.arange(10.0))


def test_download_refuses_strided_arrays(runtime):
    buf = runtime.empty(64)
    with pytest.raises(ValueError, match="C-contiguous"):
        transfer.download(runtime, [(buf, np.empty((4, 4))[:, :2])])


def test_bad_policy_is_named(runtime, monkeypatch):
    monkeypatch.setenv("HYBRIDTREE_STAGING", "sometimes")
    with pytest.raises(UserInputError, match="HYBRIDTREE_STAGING"):
        transfer.use_staging(runtime)


def test_cl_buffer_contents_match_after_upload(runtime, monkeypatch):
    """The device sees the uploaded bytes (read back with a plain copy, not download)."""
    monkeypatch.setenv("HYBRIDTREE_STAGING", "always")
    x = np.arange(12345, dtype=np.float64)
    (buf,) = transfer.upload(runtime, [x], ["test_plain"])
    (own,) = transfer.upload(runtime, [2 * x], [None])      # a new buffer of the caller's
    (own2,) = transfer.upload(runtime, [3 * x], [None])
    assert own is not own2 and own is not buf
    for b, want in ((buf, x), (own, 2 * x), (own2, 3 * x)):
        y = np.empty_like(x)
        cl.enqueue_copy(runtime.queue, y, b)
        assert np.array_equal(want, y)


def test_read_small_waits_for_the_work_enqueued_before_it(runtime):
    """read_small's value is the one the device wrote just before (a scan still running
    when it is called), at the given offset."""
    n = 1 << 16
    values = runtime.to_device(np.arange(n, dtype=np.uint32) % 7)
    out, total = exclusive_scan(runtime, values, n, read_total=False)
    got = read_small(runtime, np.empty(2, np.uint32), out, 4 * (n - 1))
    expect = np.concatenate([[0], np.cumsum(np.arange(n, dtype=np.uint64) % 7)])
    assert total is None and np.array_equal(got, expect[n - 1:n + 1])


def test_read_counts_reads_values_of_several_buffers_in_one_wait(runtime, monkeypatch):
    """read_counts: uint32 values at byte offsets of several buffers (the totals of scans
    still running), copied together on the device and read in one wait."""
    values = [np.arange(1, 100_001, dtype=np.uint32), np.full(5000, 3, np.uint32)]
    scans = [exclusive_scan(runtime, runtime.to_device(v), len(v), read_total=False)[0]
             for v in values]
    waits, wait = [], transfer.wait_for
    monkeypatch.setattr(transfer, "wait_for", lambda event: waits.append(1) or wait(event))
    got = transfer.read_counts(runtime, [(scans[0], 4 * len(values[0])), (scans[1], 4 * 10),
                                         (scans[1], 4 * len(values[1]))])
    want = [int(values[0].sum(dtype=np.uint64) % 2**32), 30, 15000]
    assert got.tolist() == want and len(waits) == 1


@pytest.mark.parametrize("slots", [1, 3])
def test_the_staging_area_is_a_ring_of_few_chunks(runtime, monkeypatch, slots):
    """Copies of many chunks pass through a pinned area of ``STAGING_SLOTS`` chunks, each
    slot filled again once its copy has run: every byte arrives, and the area (entered in
    the ledger as "staging") stays that size however large the copy (an area as large as
    the copy took 60-75 bytes per particle of an H200's memory)."""
    monkeypatch.setenv("HYBRIDTREE_STAGING", "always")
    runtime = with_copies(runtime, chunk=1000, slots=slots)
    rng = np.random.default_rng(2)
    for n in (3, 5000, 40_000):
        pos = rng.normal(size=(n, 3))
        ids = rng.integers(0, 2**40, n, dtype=np.uint64)
        want_pos, want_ids = pos.copy(), ids.copy()
        d_pos, d_ids = transfer.upload(runtime, [pos, ids], ["ring_pos", "ring_ids"])
        pos[:] = 0.0
        back_pos, back_ids = np.empty((n, 3)), np.empty(n, np.uint64)
        transfer.download(runtime, [(d_pos, back_pos), (d_ids, back_ids)])
        assert np.array_equal(back_pos, want_pos) and np.array_equal(back_ids, want_ids)
        assert 0 < runtime.memory.live["staging"] <= slots * 1000
    transfer.release(runtime)
    assert runtime.memory.live["staging"] == 0


def test_copy_options_are_the_runtimes(runtime, monkeypatch):
    """A runtime's copies take its own options (chunk, slots, staging policy) and keep
    their own pinned area and scratch buffers: another runtime of the same context, and
    the process's, are untouched (no module-level switch or cache)."""
    monkeypatch.delenv("HYBRIDTREE_STAGING", raising=False)
    small = with_copies(runtime, chunk=512, slots=2, staging="always")
    assert transfer.use_staging(small)
    assert transfer.use_staging(runtime) == (runtime.info.kind == "gpu")
    x = np.arange(10_000, dtype=np.float64)
    (buf,) = transfer.upload(small, [x], ["test_own"])
    back = np.empty_like(x)
    transfer.download(small, [(buf, back)])
    assert np.array_equal(back, x)
    assert 0 < small.memory.live["staging"] <= 2 * 512
    assert transfer.scratch(small, "test_own", 8) is buf
    assert "test_own" not in transfer.copies(runtime).scratch
    assert transfer.copies(runtime).options == CopyOptions()
